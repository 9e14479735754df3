"""One memory-mapped store file (``org.apache.rocketmq.store.logfile.DefaultMappedFile``).

A mapped file is named by the 20-digit zero-padded decimal offset of its first byte in its queue
(``UtilAll.offset2FileName``) and always has its full configured length: the Java broker refuses
to load a commit-log or consume-queue file of any other length. As the Java broker's, new files are
sparse (``ftruncate``): disk use follows the data written, not the number of files.

Writing into a hole of a shared map on a full disk would kill the process with SIGBUS, so blocks
are reserved ahead of the write position with ``posix_fallocate``, in chunks of
:func:`reserve_chunk` (``preallocate``, on by default): :meth:`MappedFile.reserve` is called before
anything is written and a full disk fails there, cleanly, with :class:`DiskFullError`.

Positions kept in memory (all relative to the file start):

* ``wrote_position``   end of the data written so far (appends go here);
* ``flushed_position`` end of the data known to be on disk (``msync``'d);
* ``reserved``         end of the blocks reserved so far (0 for a file opened from disk: the first
  reservation covers what was written before, which costs nothing where blocks exist).

The file itself records none of them: recovery re-derives ``wrote_position`` by scanning (commit
log, consume queue) or from a header (index). Writes go straight into the map; nothing is buffered.

Recovery must not pay for the unused part of a file: :meth:`MappedFile.zero` clears a cut tail
through the file system's map of the file (holes are skipped, long ranges of blocks punched out)
and reads only what may hold bytes with ``pread``, so no page of the tail is mapped into the
process (see :mod:`store.mapped_file_queue` for why the tail is cleared at all).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import mmap
import os
from collections.abc import Callable
from typing import cast

from store.errors import DiskFullError, StoreCorruptionError, StoreIOError

PAGE_SIZE = mmap.PAGESIZE
FILE_NAME_DIGITS = 20  # UtilAll.offset2FileName
_ZERO_CHUNK = bytes(1 << 20)
RESERVE_CHUNK = 1 << 20  # blocks reserved ahead of the write position at a time, at most (1 MiB)
READ_TO_CLEAR = 4 * RESERVE_CHUNK  # data cleared by reading it at most; longer ranges are punched
_FALLOC_FL_KEEP_SIZE = 0x01  # linux/falloc.h
_FALLOC_FL_PUNCH_HOLE = 0x02


def reserve_chunk(file_size: int) -> int:
    """How much to reserve at a time: 1/1024 of the file, between a page and :data:`RESERVE_CHUNK`
    (1 MiB for a 1 GiB commit-log file, 8 KiB for a 6 MB consume-queue file: a topic's many
    queues then hold a few pages each, as the Java broker's sparse files do)."""
    chunk = min(max(file_size // 1024, PAGE_SIZE), RESERVE_CHUNK)
    return chunk - chunk % PAGE_SIZE


def _libc_fallocate() -> Callable[[int, int, int, int], int] | None:
    """``fallocate(2)`` from the C library (``os`` has only ``posix_fallocate``), or ``None``."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fallocate = getattr(libc, "fallocate64", None) or libc.fallocate
    except (OSError, AttributeError):
        return None
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    fallocate.restype = ctypes.c_int
    return cast("Callable[[int, int, int, int], int]", fallocate)


_FALLOCATE = _libc_fallocate()


def punch_hole(fd: int, pos: int, size: int) -> bool:
    """Deallocate ``[pos, pos + size)`` of ``fd`` keeping its size, so it reads as zeros (partial
    blocks at the edges are zeroed by the file system); ``False`` when that failed: not supported
    by the file system or the platform, or no room for an extent split on a full disk. Any part
    punched before a failure reads as zeros too; the caller clears the rest by writing."""
    if _FALLOCATE is None:
        return False
    return _FALLOCATE(fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, pos, size) == 0


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

    __slots__ = (
        "_fd",
        "file_from_offset",
        "file_size",
        "flushed_position",
        "mm",
        "path",
        "preallocate",
        "reserved",
        "wrote_position",
    )

    def __init__(
        self,
        path: str,
        file_from_offset: int,
        file_size: int,
        fd: int,
        mm: mmap.mmap,
        preallocate: bool = True,
    ) -> None:
        self.path = path
        self.file_from_offset = file_from_offset
        self.file_size = file_size
        self._fd = fd
        self.mm = mm
        self.preallocate = preallocate
        self.wrote_position = 0
        self.flushed_position = 0
        self.reserved = 0

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
            os.ftruncate(fd, file_size)
            mm = mmap.mmap(fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as err:
            os.close(fd)
            _unlink_quietly(path)
            raise wrap_os_error(err, f"create {file_size} bytes for {path}") from err
        mf = cls(path, file_from_offset, file_size, fd, mm, preallocate)
        try:
            mf.reserve(1)
        except StoreIOError:
            mf.destroy()
            raise
        return mf

    @classmethod
    def open(
        cls, path: str, file_size: int, named_by_offset: bool = True, preallocate: bool = True
    ) -> MappedFile:
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
        return cls(path, int(name) if named_by_offset else 0, file_size, fd, mm, preallocate)

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

    def reserve(self, end: int) -> None:
        """Make sure disk blocks back the file up to position ``end`` (rounded up to a chunk) before
        anything is written there; raises :class:`DiskFullError` when the disk is full."""
        if end <= self.reserved or not self.preallocate:
            return
        chunk = reserve_chunk(self.file_size)
        target = min(self.file_size, -(-end // chunk) * chunk)
        try:
            os.posix_fallocate(self._fd, self.reserved, target - self.reserved)
        except OSError as err:
            if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise wrap_os_error(err, f"reserve {target - self.reserved} bytes of {self.path}") from err
        self.reserved = target

    def reserve_range(self, start: int, size: int) -> None:
        """Reserve blocks for ``[start, start + size)`` anywhere in the file (index hash slots);
        raises :class:`DiskFullError`."""
        if not self.preallocate or start + size <= self.reserved:
            return
        try:
            os.posix_fallocate(self._fd, start, min(size, self.file_size - start))
        except OSError as err:
            if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise wrap_os_error(err, f"reserve {size} bytes of {self.path}") from err

    def last_modified(self) -> float:
        """The file's mtime in seconds (what ``fileReservedTime`` is measured against)."""
        return os.stat(self.path).st_mtime

    # -- data ----------------------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Copy ``data`` at ``wrote_position``; return the position it went to. The caller checks space.
        Raises :class:`DiskFullError` when no blocks can be reserved for it."""
        pos = self.wrote_position
        end = pos + len(data)
        self.reserve(end)
        self.mm[pos:end] = data
        self.wrote_position = end
        return pos

    def write_at(self, pos: int, data: bytes | memoryview) -> None:
        """Write ``data`` at ``pos`` with ``pwrite`` rather than through the mapping
        (``appendMessageUsingFileChannel``), without moving ``wrote_position``. The first store
        into a freshly created file through a shared mapping costs the kernel 2 ms (sparse) to 13
        ms (after ``posix_fallocate``) of CPU on ext4, a ``pwrite`` ~0.1 ms: for a topic of 1,024
        queues (BenchmarkTest) that is the first unit of every queue. The page cache is the
        mapping's, so reads through it and :meth:`flush` see the bytes. The caller reserves
        blocks first. Raises :class:`StoreIOError`."""
        try:
            os.pwrite(self._fd, data, pos)
        except OSError as err:
            raise wrap_os_error(err, f"write {len(data)} bytes at {pos} of {self.path}") from err

    def read(self, pos: int, size: int) -> bytes:
        return self.mm[pos : pos + size]

    def data_ranges(self, pos: int, end: int) -> list[tuple[int, int]]:
        """The parts of ``[pos, end)`` that may hold non-zero bytes, from the file system's map of
        the file (``lseek`` ``SEEK_DATA`` / ``SEEK_HOLE``), without reading a byte. Everything else
        is a hole, which reads as zeros by definition: never written, or blocks reserved with
        ``posix_fallocate`` and never written (unwritten extents on ext4 and XFS). A file system
        that keeps no such map reports the whole range as data (the kernel's generic ``lseek``)."""
        end = min(end, self.file_size)
        out: list[tuple[int, int]] = []
        while pos < end:
            try:
                start = os.lseek(self._fd, pos, os.SEEK_DATA)
                stop = os.lseek(self._fd, start, os.SEEK_HOLE)
            except OSError as err:
                if err.errno != errno.ENXIO:  # ENXIO: no data after pos
                    out.append((pos, end))
                break
            if start >= end:
                break
            out.append((start, min(stop, end)))
            pos = stop
        return out

    def read_data(self, pos: int, size: int) -> bytes:
        """The ``size`` bytes from ``pos`` with ``pread``: read past the written data (recovery) they
        map no page into the process, and holes among them cost no read (zeros). Raises
        :class:`StoreIOError`."""
        end = min(pos + size, self.file_size)
        out = bytearray(max(end - pos, 0))
        for start, stop in self.data_ranges(pos, end):
            out[start - pos : stop - pos] = self._pread(start, stop - start)
        return bytes(out)

    def zero(self, pos: int, size: int) -> None:
        """Make ``size`` bytes from ``pos`` read as zeros (clears a truncated tail), touching only the
        file's data ranges (:meth:`data_ranges`): what it costs follows what was written, not the
        file size. A data range longer than :data:`READ_TO_CLEAR` (blocks of zeros given to the file
        by an earlier preallocation, a copy made without holes) is punched out (``fallocate``
        ``PUNCH_HOLE``): the file system zeroes it without reading it, and the writer reserves
        blocks again ahead of itself as in a new file. A shorter one, or one the file system cannot
        punch, is read with ``pread`` (no page is mapped into the process) and only pages holding
        non-zero bytes are written: writing zeros where they already are would turn a hole into a
        block (ENOSPC on a full disk). Raises :class:`StoreIOError`."""
        for start, stop in self.data_ranges(pos, pos + size):
            if stop - start > READ_TO_CLEAR:
                self.reserved = min(self.reserved, start - start % PAGE_SIZE)  # blocks given back
                if punch_hole(self._fd, start, stop - start):
                    continue
            at = start
            while at < stop:
                step = min(stop - at, len(_ZERO_CHUNK) - at % len(_ZERO_CHUNK))
                chunk = self._pread(at, step)
                if chunk != _ZERO_CHUNK[:step]:  # memcmp of up to 1 MiB
                    page = at
                    while page < at + step:
                        n = min(at + step - page, PAGE_SIZE - page % PAGE_SIZE)
                        if chunk[page - at : page - at + n] != _ZERO_CHUNK[:n]:
                            self.write_at(page, _ZERO_CHUNK[:n])
                        page += n
                at += step

    def _pread(self, pos: int, size: int) -> bytes:
        try:
            data = os.pread(self._fd, size, pos)
        except OSError as err:
            raise wrap_os_error(err, f"read {size} bytes at {pos} of {self.path}") from err
        return data.ljust(size, b"\0")  # short only past the end of a file cut by someone else

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
