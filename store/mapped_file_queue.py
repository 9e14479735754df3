"""A directory of equally sized mapped files forming one address space (``MappedFileQueue``).

File *k* covers global offsets ``[start_k, start_k + file_size)``; names are the 20-digit start
offsets, so listing the directory in name order gives the queue in order. Used for the commit log
(``commitlog/``) and for every consume queue (``consumequeue/TOPIC/QUEUEID/``).

Loading checks every file's length against the configured size (:class:`StoreCorruptionError`
otherwise, as Java's "length not matched message store config value"), except that an empty last
file is deleted, as Java does. Loaded files start with ``wrote_position = file_size``; the owner's
recovery then calls :meth:`truncate_dirty` with the real end, which deletes the files after it.

What recovery rebuilds and what it trusts, past the end. The owner finds the end by walking the
entries from a trusted point (commit log: records with magic code, length, PHYSICALOFFSET and
CRC; consume queue: units with an offset and a size); the walk reads the data and stops at the
first byte that is not one, so it costs what was written. Java's ``truncateDirtyFiles`` then
only sets the positions and leaves what lies past the end to be overwritten by the next append.
Here the bytes past the end are also made to read as zeros, because a walk cannot tell a stale
entry from a new one once the next append ends exactly where a stale one begins (a whole record
of a run whose tail was cut, a unit written after a torn one). How far stale bytes reach is not
known (a torn batch, pages of a torn run written back in any order after a power loss), so the
whole rest of the file is cleared, but without reading it: :meth:`MappedFile.zero` asks the file
system where the file holds data (``SEEK_DATA``/``SEEK_HOLE``). A tail never written is a hole,
and so are blocks reserved ahead of the writer with ``posix_fallocate`` and never written (ext4,
XFS): they read as zeros by definition and are skipped. What is left, the data past the end, is a
torn write plus at most one reservation chunk in practice; it is read with ``pread`` and only
non-zero pages are rewritten. A data range longer than that (a tail of real zero blocks: an older
preallocation, a copy made without holes) is punched out instead, which reads nothing either.
Every byte past the end still reads as zero afterwards, as when the whole tail was compared page
by page, but a restart no longer maps or reads the unused part of a 1 GiB commit-log file (nor of
each 6 MB consume-queue file). Index files are never cut: their header says where the entries end.

Threads: all methods belong to the single writer except :meth:`flush`, which one other thread may
run concurrently with appends (the SYNC_FLUSH group commit); a lock guards the file list for it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from store.errors import StoreCorruptionError
from store.mapped_file import FILE_NAME_DIGITS, MappedFile


class MappedFileQueue:
    __slots__ = ("_lock", "directory", "file_size", "files", "preallocate")

    def __init__(self, directory: str, file_size: int, preallocate: bool = True) -> None:
        self.directory = directory
        self.file_size = file_size
        self.preallocate = preallocate
        self.files: list[MappedFile] = []
        self._lock = threading.Lock()

    def load(self) -> None:
        """Map every file of the directory (created if missing); see the module docstring."""
        os.makedirs(self.directory, exist_ok=True)
        names = sorted(n for n in os.listdir(self.directory) if len(n) == FILE_NAME_DIGITS and n.isdigit())
        files: list[MappedFile] = []
        try:
            for i, name in enumerate(names):
                path = os.path.join(self.directory, name)
                if i == len(names) - 1 and os.path.getsize(path) == 0:
                    os.unlink(path)
                    continue
                mf = MappedFile.open(path, self.file_size, preallocate=self.preallocate)
                if files and mf.file_from_offset != files[-1].file_end_offset:
                    files.append(mf)
                    raise StoreCorruptionError(
                        f"{self.directory}: file {name} does not follow {os.path.basename(files[-2].path)}"
                    )
                mf.wrote_position = mf.flushed_position = self.file_size
                files.append(mf)
        except BaseException:
            for mf in files:
                mf.close()
            raise
        self.files = files

    def close(self) -> None:
        with self._lock:
            for mf in self.files:
                mf.close()

    def destroy(self) -> None:
        """Delete every file (and the directory when it is left empty)."""
        with self._lock:
            for mf in self.files:
                mf.destroy()
            self.files = []
        with contextlib.suppress(OSError):
            os.rmdir(self.directory)

    # -- lookup ------------------------------------------------------------------------------------

    @property
    def last(self) -> MappedFile | None:
        return self.files[-1] if self.files else None

    @property
    def first(self) -> MappedFile | None:
        return self.files[0] if self.files else None

    @property
    def min_offset(self) -> int:
        """Start of the first file (-1 when empty, as Java's ``getMinOffset``)."""
        return self.files[0].file_from_offset if self.files else -1

    @property
    def max_offset(self) -> int:
        """Global offset of the end of the written data."""
        last = self.last
        return last.file_from_offset + last.wrote_position if last else 0

    @property
    def flushed_offset(self) -> int:
        for mf in reversed(self.files):
            if mf.flushed_position:
                return mf.file_from_offset + mf.flushed_position
        return self.files[0].file_from_offset if self.files else 0

    def find(self, offset: int) -> MappedFile | None:
        """The file holding global ``offset``, or ``None`` (deleted or not yet written)."""
        files = self.files
        if not files:
            return None
        first = files[0].file_from_offset
        if offset < first:
            return None
        index = (offset - first) // self.file_size
        if index >= len(files):
            return None
        mf = files[index]
        if mf.file_from_offset <= offset < mf.file_end_offset:
            return mf
        for mf in files:  # a gap left by a deleted middle file: fall back to a scan
            if mf.file_from_offset <= offset < mf.file_end_offset:
                return mf
        return None

    def __iter__(self) -> Iterator[MappedFile]:
        return iter(list(self.files))

    def __len__(self) -> int:
        return len(self.files)

    # -- writing -----------------------------------------------------------------------------------

    def last_for_write(self, start_offset: int = 0) -> MappedFile:
        """The last file if it has room, else a new one (at ``start_offset`` rounded down to a file
        boundary when the queue is empty). Raises :class:`StoreIOError` / :class:`DiskFullError`."""
        last = self.last
        if last is not None and not last.is_full:
            return last
        start = start_offset - start_offset % self.file_size if last is None else last.file_end_offset
        mf = MappedFile.create(self.directory, start, self.file_size, self.preallocate)
        with self._lock:
            self.files.append(mf)
        return mf

    def next_file(self) -> MappedFile:
        """Create the file after the last one (the last one is about to be marked full)."""
        last = self.last
        start = last.file_end_offset if last is not None else 0
        mf = MappedFile.create(self.directory, start, self.file_size, self.preallocate)
        with self._lock:
            self.files.append(mf)
        return mf

    def truncate_dirty(self, offset: int) -> None:
        """Make ``offset`` the end of the data (``truncateDirtyFiles``): set the containing file's
        positions, make the bytes cut off read as zeros without reading the unused tail (module
        docstring), delete later files."""
        keep: list[MappedFile] = []
        for mf in self.files:
            if mf.file_end_offset > offset:
                if offset >= mf.file_from_offset:
                    pos = offset - mf.file_from_offset
                    old_end = max(mf.wrote_position, pos)
                    if old_end > pos:
                        # Zero what is cut off: stale units must not reappear at the next load.
                        mf.zero(pos, old_end - pos)
                    mf.wrote_position = pos
                    mf.flushed_position = min(mf.flushed_position, pos)
                    keep.append(mf)
                else:
                    mf.destroy()
            else:
                keep.append(mf)
        with self._lock:
            self.files = keep

    def delete_first(self, count: int) -> list[MappedFile]:
        """Delete the first ``count`` files (never the last one); return them."""
        count = min(count, len(self.files) - 1)
        if count <= 0:
            return []
        with self._lock:
            gone, self.files = self.files[:count], self.files[count:]
        for mf in gone:
            mf.destroy()
        return gone

    def flush(self, up_to: int | None = None) -> int:
        """``msync`` every file holding unflushed data below ``up_to`` (default: all written data);
        returns the global flushed offset. Callable from one other thread; see the module docstring."""
        with self._lock:
            files = list(self.files)
        flushed = files[0].file_from_offset if files else 0
        for mf in files:
            if up_to is not None and mf.file_from_offset >= up_to:
                break
            if mf.closed:
                continue
            limit = None if up_to is None else up_to - mf.file_from_offset
            pos = mf.flush(limit)
            flushed = mf.file_from_offset + pos
        return flushed
