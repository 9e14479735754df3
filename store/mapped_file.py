"""One preallocated, memory-mapped store file (``org.apache.rocketmq.store.logfile.DefaultMappedFile``).

A mapped file is named by the 20-digit zero-padded decimal offset of its first byte in its queue
(``UtilAll.offset2FileName``) and always has its full configured size: the Java broker refuses to
load a commit-log or consume-queue file of any other length. New files are created with
``posix_fallocate`` so their blocks are reserved up front; a full disk then fails here, at file
creation, with :class:`DiskFullError`, instead of as a SIGBUS on a later write into a sparse map.

Positions kept in memory (all relative to the file start):

* ``wrote_position``   end of the data written so far (appends go here);
* ``flushed_position`` end of the data known to be on disk (``msync``'d).

The file itself records neither: recovery re-derives ``wrote_position`` by scanning (commit log,
consume queue) or from a header (index). Writes go straight into the map; nothing is buffered.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import struct

from store.errors import DiskFullError, StoreCorruptionError, StoreIOError

PAGE_SIZE = mmap.PAGESIZE
FILE_NAME_DIGITS = 20  # UtilAll.offset2FileName
_ZERO_CHUNK = bytes(1 << 20)


def offset_to_file_name(offset: int) -> str:
    """``UtilAll.offset2FileName``: the offset, zero-padded to 20 decimal digits."""
    return f"{offset:0{FILE_NAME_DIGITS}d}"


def wrap_os_error(err: OSError, what: str) -> StoreIOError:
    """The store error for an ``OSError``: :class:`DiskFullError` for ENOSPC/EDQUOT."""
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFullError(f"{what}: no space left on device")
    return StoreIOError(f"{what}: {err.strerror or err}")


class MappedFile:
    """A file of fixed size mapped read-write. Not thread-safe except :meth:`flush` (see below)."""

    __slots__ = ("_fd", "file_from_offset", "file_size", "flushed_position", "mm", "path", "wrote_position")

    def __init__(self, path: str, file_from_offset: int, file_size: int, fd: int, mm: mmap.mmap) -> None:
        self.path = path
        self.file_from_offset = file_from_offset
        self.file_size = file_size
        self._fd = fd
        self.mm = mm
        self.wrote_position = 0
        self.flushed_position = 0

    # -- life cycle ------------------------------------------------------------------------------

    @classmethod
    def create(
        cls, directory: str, file_from_offset: int, file_size: int, preallocate: bool = True
    ) -> MappedFile:
        """Create a new zero-filled file of ``file_size`` bytes; raises :class:`StoreIOError`."""
        path = os.path.join(directory, offset_to_file_name(file_from_offset))
        return cls.create_path(path, file_from_offset, file_size, preallocate)

    @classmethod
    def create_path(
        cls, path: str, file_from_offset: int, file_size: int, preallocate: bool = True
    ) -> MappedFile:
        """:meth:`create` for a file with any name (index files are named by time)."""
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError as err:
            raise wrap_os_error(err, f"create {path}") from err
        try:
            if preallocate:
                try:
                    os.posix_fallocate(fd, 0, file_size)
                except OSError as err:
                    if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                        raise
                    os.ftruncate(fd, file_size)
            else:
                os.ftruncate(fd, file_size)
            mm = mmap.mmap(fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as err:
            os.close(fd)
            _unlink_quietly(path)
            raise wrap_os_error(err, f"allocate {file_size} bytes for {path}") from err
        return cls(path, file_from_offset, file_size, fd, mm)

    @classmethod
    def open(cls, path: str, file_size: int, named_by_offset: bool = True) -> MappedFile:
        """Map an existing file; raises :class:`StoreCorruptionError` if its length is not ``file_size``."""
        name = os.path.basename(path)
        if named_by_offset and (len(name) != FILE_NAME_DIGITS or not name.isdigit()):
            raise StoreCorruptionError(f"{path}: not a store file name (20 decimal digits)")
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError as err:
            raise wrap_os_error(err, f"open {path}") from err
        try:
            actual = os.fstat(fd).st_size
            if actual != file_size:
                raise StoreCorruptionError(
                    f"{path}: length {actual} not matched message store config value {file_size}"
                )
            mm = mmap.mmap(fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as err:
            os.close(fd)
            raise wrap_os_error(err, f"map {path}") from err
        except StoreCorruptionError:
            os.close(fd)
            raise
        return cls(path, int(name) if named_by_offset else 0, file_size, fd, mm)

    def close(self) -> None:
        if self._fd >= 0:
            self.mm.close()
            os.close(self._fd)
            self._fd = -1

    def destroy(self) -> None:
        """Close and delete the file."""
        self.close()
        _unlink_quietly(self.path)

    @property
    def closed(self) -> bool:
        return self._fd < 0

    # -- positions ---------------------------------------------------------------------------------

    @property
    def file_end_offset(self) -> int:
        return self.file_from_offset + self.file_size

    @property
    def space_left(self) -> int:
        return self.file_size - self.wrote_position

    @property
    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    def last_modified(self) -> float:
        """The file's mtime in seconds (what ``fileReservedTime`` is measured against)."""
        return os.stat(self.path).st_mtime

    # -- data ----------------------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Copy ``data`` at ``wrote_position``; return the position it went to. The caller checks space."""
        pos = self.wrote_position
        end = pos + len(data)
        self.mm[pos:end] = data
        self.wrote_position = end
        return pos

    def pack_at(self, fmt: struct.Struct, pos: int, *values: int) -> None:
        fmt.pack_into(self.mm, pos, *values)

    def read(self, pos: int, size: int) -> bytes:
        return self.mm[pos : pos + size]

    def zero(self, pos: int, size: int) -> None:
        """Overwrite ``size`` bytes from ``pos`` with zeros (clears a truncated tail)."""
        end = min(pos + size, self.file_size)
        while pos < end:
            step = min(end - pos, len(_ZERO_CHUNK))
            self.mm[pos : pos + step] = _ZERO_CHUNK[:step]
            pos += step

    def flush(self, up_to: int | None = None) -> int:
        """``msync`` the written data up to position ``up_to`` (default: all of it); returns the new
        flushed position. Safe to call from one other thread while the writer appends: it reads
        ``wrote_position`` once and only ever syncs bytes below it."""
        target = self.wrote_position if up_to is None else min(up_to, self.wrote_position)
        start = self.flushed_position
        if target <= start:
            return start
        aligned = start - start % mmap.ALLOCATIONGRANULARITY
        try:
            self.mm.flush(aligned, target - aligned)
        except (OSError, ValueError) as err:
            if isinstance(err, OSError):
                raise wrap_os_error(err, f"msync {self.path}") from err
            raise StoreIOError(f"msync {self.path}: {err}") from err
        self.flushed_position = max(self.flushed_position, target)
        return self.flushed_position

    def __repr__(self) -> str:
        return f"MappedFile({self.path!r}, wrote={self.wrote_position}, flushed={self.flushed_position})"


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
