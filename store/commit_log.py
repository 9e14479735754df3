"""The commit log: every message record, back to back, in preallocated segment files (``CommitLog``).

Files live in ``commitlog/`` (or ``storePathCommitLog``), each exactly ``mappedFileSizeCommitLog``
bytes (1 GiB by default) and named by the 20-digit global offset of its first byte. Content of a
file::

    record | record | ... | record | BLANK | zeros...

* record: the stored message record of :mod:`codec.message` (TOTALSIZE, MAGICCODE, BODYCRC, ...),
  whose PHYSICALOFFSET field equals its global offset (file name + position);
* BLANK: when the next record (or batch) plus 8 bytes does not fit, an 8-byte marker
  ``TOTALSIZE = bytes left in the file (int32), MAGICCODE = 0xCBD43194`` ends the file and the
  record goes to offset 0 of the next file. A batch is never split across files.

Write order (what makes a SIGKILL at any instant harmless): a record's bytes are copied with its
first four bytes (TOTALSIZE) last, so a record whose copy was interrupted has TOTALSIZE 0 (or the
stale value of a rejected old record, which recovery also clears) and is never mistaken for a
whole one. A blank marker is written magic first, size last, before the next file is touched.

Recovery (``recoverNormally`` / ``recoverAbnormally``) trusts nothing past its start file: it scans
record by record and stops at the first entry that is not a whole, consistent record: bad magic,
TOTALSIZE that disagrees with the field lengths or overruns the file, PHYSICALOFFSET that is not
its own offset, or (``checkCRCOnRecover``) a BODYCRC mismatch. That position becomes the end of
the log: later files are deleted and the torn bytes are zeroed. What the start file is, and what
gets re-dispatched, is decided by :mod:`store.message_store`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

from codec.errors import MessageFormatError
from codec.hashing import body_crc32
from codec.message import (
    BLANK_MAGIC_CODE,
    BLANK_MARKER_SIZE,
    MESSAGE_MAGIC_CODE_V1,
    MESSAGE_MAGIC_CODE_V2,
    SYS_FLAG_POS,
    MessageRecord,
    MessageSysFlag,
    decode_record,
)
from store.config import StoreConfig
from store.errors import MessageTooLargeError
from store.mapped_file import MappedFile
from store.mapped_file_queue import MappedFileQueue

_INT = struct.Struct(">i")
_UINT = struct.Struct(">I")
_LONG = struct.Struct(">q")
_SIZE_MAGIC = struct.Struct(">iI")  # TOTALSIZE, MAGICCODE
STORE_TIMESTAMP_POS_V4 = 56  # born host IPv4; +12 with an IPv6 born host
_ZERO_WINDOW = 64 * 1024  # bytes cleared after a truncation point at least

RecordVisitor = Callable[[int, int, MessageRecord], None]  # (offset, size, record)


def store_timestamp_pos(sys_flag: int) -> int:
    """Position of STORETIMESTAMP in a record, which depends on the born host's length."""
    return STORE_TIMESTAMP_POS_V4 + (12 if sys_flag & MessageSysFlag.BORNHOST_V6_FLAG else 0)


class CommitLog:
    """The commit-log files of one store; single writer (see :mod:`store.message_store`)."""

    def __init__(self, config: StoreConfig) -> None:
        self.config = config
        self.file_size = config.mapped_file_size_commit_log
        self.queue = MappedFileQueue(config.commit_log_dir, self.file_size, config.preallocate)

    def load(self) -> None:
        self.queue.load()

    def close(self) -> None:
        self.queue.close()

    # -- offsets -----------------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        """Start of the first file still present (0 for an empty log)."""
        first = self.queue.first
        return first.file_from_offset if first else 0

    @property
    def max_offset(self) -> int:
        """End of the last whole record: where the next append goes (modulo a blank/roll)."""
        return self.queue.max_offset

    # -- writing -------------------------------------------------------------------------------------

    def reserve(self, total: int) -> tuple[MappedFile, int]:
        """The file and global offset where ``total`` bytes of records will go.

        Ends the current file with a blank marker and creates the next one when they do not fit
        (``CommitLog.doAppend``'s END_OF_FILE). Raises :class:`MessageTooLargeError` when they
        could never fit, :class:`StoreIOError` when a new file cannot be created.
        """
        if total + BLANK_MARKER_SIZE > self.file_size:
            raise MessageTooLargeError(
                f"{total} bytes of records exceed a commit-log file of {self.file_size}"
            )
        mf = self.queue.last_for_write()
        if total + BLANK_MARKER_SIZE > mf.space_left:
            pos = mf.wrote_position
            left = mf.space_left
            _UINT.pack_into(mf.mm, pos + 4, BLANK_MAGIC_CODE)
            _INT.pack_into(mf.mm, pos, left)
            mf.wrote_position = self.file_size
            mf = self.queue.last_for_write()
        return mf, mf.file_from_offset + mf.wrote_position

    @staticmethod
    def write(mf: MappedFile, data: bytearray) -> int:
        """Copy encoded records at ``mf``'s write position, TOTALSIZE of the first one last.

        Returns the global end offset. ``data`` must come from :meth:`reserve`'s check.
        """
        pos = mf.wrote_position
        n = len(data)
        mm = mf.mm
        with memoryview(data) as view:
            mm[pos + 4 : pos + n] = view[4:]
            mm[pos : pos + 4] = view[:4]
        mf.wrote_position = pos + n
        return mf.file_from_offset + pos + n

    def flush(self, up_to: int | None = None) -> int:
        return self.queue.flush(up_to)

    # -- reading -------------------------------------------------------------------------------------

    def get_data(self, offset: int, size: int) -> bytes | None:
        """The ``size`` bytes at global ``offset`` if they lie in a present file below the write
        position; ``None`` when the file was deleted (or the range is not written yet)."""
        mf = self.queue.find(offset)
        if mf is None:
            return None
        pos = offset - mf.file_from_offset
        if size <= 0 or pos + size > mf.wrote_position:
            return None
        return mf.mm[pos : pos + size]

    def record_size_at(self, offset: int) -> int:
        """TOTALSIZE of the record at ``offset`` (-1 if none is readable there)."""
        mf = self.queue.find(offset)
        if mf is None:
            return -1
        pos = offset - mf.file_from_offset
        if pos + BLANK_MARKER_SIZE > mf.wrote_position:
            return -1
        size, magic = _SIZE_MAGIC.unpack_from(mf.mm, pos)
        if magic not in (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2) or size <= 0:
            return -1
        if pos + size > mf.wrote_position:
            return -1
        return int(size)

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        """STORETIMESTAMP of the record at ``offset`` (``CommitLog.pickupStoreTimestamp``); -1 if gone."""
        mf = self.queue.find(offset)
        if mf is None:
            return -1
        pos = offset - mf.file_from_offset
        if pos + size > mf.wrote_position or size < STORE_TIMESTAMP_POS_V4 + 20:
            return -1
        (sys_flag,) = _INT.unpack_from(mf.mm, pos + SYS_FLAG_POS)
        (ts,) = _LONG.unpack_from(mf.mm, pos + store_timestamp_pos(sys_flag))
        return int(ts)

    def next_file_start(self, offset: int) -> int:
        """``CommitLog.rollNextFile``: the start of the file after the one holding ``offset``."""
        return offset + self.file_size - offset % self.file_size

    # -- scanning and recovery ---------------------------------------------------------------------

    def check_record(
        self, mf: MappedFile, pos: int, limit: int, check_crc: bool
    ) -> tuple[int, MessageRecord | None]:
        """Classify the bytes at ``pos`` (``checkMessageAndReturnSize``).

        Returns ``(size, record)`` for a whole record, ``(0, None)`` for a blank marker and
        ``(-1, None)`` for anything else.
        """
        if limit - pos < BLANK_MARKER_SIZE:
            return -1, None
        size, magic = _SIZE_MAGIC.unpack_from(mf.mm, pos)
        if magic == BLANK_MAGIC_CODE:
            return (0, None) if size == mf.file_size - pos else (-1, None)
        if magic not in (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2) or size <= 0 or pos + size > limit:
            return -1, None
        with memoryview(mf.mm) as view:
            try:
                record = decode_record(view[: pos + size], pos)
            except MessageFormatError:
                return -1, None
        if record.physical_offset != mf.file_from_offset + pos:
            return -1, None
        if check_crc and body_crc32(record.body) != record.body_crc:
            return -1, None
        return int(size), record

    def scan(
        self, start_index: int, visit: RecordVisitor, check_crc: bool = True, limit_offset: int | None = None
    ) -> int:
        """Walk records from the start of file ``start_index``; call ``visit`` for each whole one.

        Returns the global offset of the end of the last whole record (the recovered max offset).
        """
        files = self.queue.files
        if not files:
            return 0
        index = start_index
        mf = files[index]
        pos = 0
        while True:
            limit = (
                mf.file_size
                if limit_offset is None
                else min(mf.file_size, limit_offset - mf.file_from_offset)
            )
            size, record = self.check_record(mf, pos, limit, check_crc)
            if size > 0 and record is not None:
                visit(mf.file_from_offset + pos, size, record)
                pos += size
            elif size == 0 and index + 1 < len(files):
                index += 1
                mf = files[index]
                pos = 0
            else:
                return mf.file_from_offset + pos

    def truncate(self, end_offset: int) -> None:
        """Make ``end_offset`` the end of the log: delete later files, zero the torn bytes after it."""
        mf = self.queue.find(end_offset)
        if mf is not None:
            pos = end_offset - mf.file_from_offset
            window = _ZERO_WINDOW
            if mf.file_size - pos >= BLANK_MARKER_SIZE:
                (declared,) = _INT.unpack_from(mf.mm, pos)
                if 0 < declared <= mf.file_size - pos:
                    window = max(window, declared)
            mf.zero(pos, window)
        self.queue.truncate_dirty(end_offset)

    def iter_records(self, from_offset: int | None = None) -> Iterator[tuple[int, MessageRecord]]:
        """Every whole record from ``from_offset`` (default: the first file) to the end, in order."""
        out: list[tuple[int, MessageRecord]] = []
        files = self.queue.files
        if not files:
            return iter(out)
        start = self.queue.find(from_offset) if from_offset is not None else files[0]
        if start is None:
            return iter(out)
        index = files.index(start)
        end = self.max_offset

        def visit(offset: int, size: int, record: MessageRecord) -> None:
            if from_offset is None or offset >= from_offset:
                out.append((offset, record))

        self.scan(index, visit, check_crc=False, limit_offset=None)
        return iter([item for item in out if item[0] < end])
