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

Recovery (``recoverNormally`` / ``recoverAbnormally``) scans record by record from where it can no
longer trust the consume queues and checkpoint (:mod:`store.recovery` decides where) and checks each
entry: magic, TOTALSIZE against the field lengths and the file, PHYSICALOFFSET equal to its own
offset and (``checkCRCOnRecover``) the BODYCRC. Zeros or a torn record end the data: later files
are deleted and the rest of the file is made to read as zeros, reading only the parts of it that
hold blocks (:mod:`store.mapped_file_queue`). A damaged record followed by sound ones is not a tail:
:meth:`CommitLog.scan` finds the next sound record and reports the damaged range, so one flipped
byte costs one record, not every record after it.
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
_MAGIC_BYTES = tuple(
    struct.pack(">I", m) for m in (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2, BLANK_MAGIC_CODE)
)

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
        could never fit, :class:`StoreIOError` when a new file cannot be created or no disk blocks
        can be reserved for the bytes (:class:`DiskFullError`); nothing is written then.
        """
        if total + BLANK_MARKER_SIZE > self.file_size:
            raise MessageTooLargeError(
                f"{total} bytes of records exceed a commit-log file of {self.file_size}"
            )
        mf = self.queue.last_for_write()
        if total + BLANK_MARKER_SIZE > mf.space_left:
            pos = mf.wrote_position
            mf.reserve(pos + BLANK_MARKER_SIZE)
            nxt = self.queue.next_file()  # created before the marker ends this one (a full disk fails here)
            _UINT.pack_into(mf.mm, pos + 4, BLANK_MAGIC_CODE)
            _INT.pack_into(mf.mm, pos, mf.space_left)
            mf.wrote_position = self.file_size
            mf = nxt
        mf.reserve(mf.wrote_position + total)
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
        self,
        start_offset: int,
        visit: RecordVisitor,
        check_crc: bool = True,
        on_damage: Callable[[int, int], None] | None = None,
    ) -> int:
        """Walk the records from global ``start_offset`` (a record boundary); call ``visit`` for each
        whole one. Returns the end of the last whole record (the recovered max offset).

        The walk ends at zeros (the end of the data) and at a torn record (TOTALSIZE still 0, written
        last). At anything else that is not a whole record (bad magic or length, BODYCRC mismatch,
        wrong PHYSICALOFFSET) it looks for the next whole record whose store time is not older than
        the last good one (:meth:`_resync`): if there is one, the bytes in between are damaged, not a
        tail, ``on_damage(start, end)`` is told and the walk goes on; if not, that is the end.
        """
        files = self.queue.files
        mf = self.queue.find(start_offset)
        if mf is None:
            return start_offset if files and start_offset >= files[-1].file_end_offset else 0
        index = files.index(mf)
        pos = start_offset - mf.file_from_offset
        last_timestamp = 0
        while True:
            size, record = self.check_record(mf, pos, mf.file_size, check_crc)
            if size > 0 and record is not None:
                visit(mf.file_from_offset + pos, size, record)
                last_timestamp = record.store_timestamp
                pos += size
                continue
            if size == 0 and index + 1 < len(files):  # a blank marker: the next file
                index += 1
                mf = files[index]
                pos = 0
                continue
            here = mf.file_from_offset + pos
            if size == 0 or self._is_end_of_data(mf, pos):
                return here
            resume = self._resync(index, pos, check_crc, last_timestamp)
            if resume is None:
                return here
            if on_damage is not None:
                on_damage(here, resume)
            found = self.queue.find(resume)
            assert found is not None
            mf = found
            index = files.index(mf)
            pos = resume - mf.file_from_offset

    @staticmethod
    def _is_end_of_data(mf: MappedFile, pos: int) -> bool:
        """Zeros (never written) or a torn record (its TOTALSIZE, written last, still 0)."""
        if mf.file_size - pos < BLANK_MARKER_SIZE:
            return True
        size, _magic = _SIZE_MAGIC.unpack_from(mf.mm, pos)
        return bool(size == 0)

    def _resync(self, index: int, pos: int, check_crc: bool, not_before: int) -> int | None:
        """The global offset of the next whole record after ``pos`` of file ``index`` (or of the next
        file after a blank marker) stored at ``not_before`` or later, or ``None``. The time bound keeps
        records of an older, truncated run (which sit at the same offsets) from coming back."""
        files = self.queue.files
        mf = files[index]
        mm = mf.mm
        start = pos + 1
        while True:
            hits = [mm.find(magic, start + 4) for magic in _MAGIC_BYTES]
            hits = [h - 4 for h in hits if h >= 0]
            if not hits:
                break
            q = min(hits)
            size, magic = _SIZE_MAGIC.unpack_from(mm, q)
            if magic == BLANK_MAGIC_CODE:
                if size == mf.file_size - q:
                    break  # the file ends here: look at the next one
            else:
                size, record = self.check_record(mf, q, mf.file_size, check_crc)
                if size > 0 and record is not None and record.store_timestamp >= not_before:
                    return mf.file_from_offset + q
            start = q + 1
        for later in files[index + 1 :]:
            size, record = self.check_record(later, 0, later.file_size, check_crc)
            if size > 0 and record is not None and record.store_timestamp >= not_before:
                return later.file_from_offset
        return None

    def read_range(self, start: int, end: int) -> bytes:
        """The bytes of the files present between global offsets ``start`` and ``end``."""
        out = bytearray()
        offset = start
        while offset < end:
            mf = self.queue.find(offset)
            if mf is None:
                break
            stop = min(end, mf.file_end_offset)
            out += mf.mm[offset - mf.file_from_offset : stop - mf.file_from_offset]
            offset = stop
        return bytes(out)

    def truncate(self, end_offset: int) -> bytes:
        """Make ``end_offset`` the end of the log: delete later files, zero the torn bytes after it.
        Returns the bytes it zeroed (all zeros when nothing was torn)."""
        cut = b""
        mf = self.queue.find(end_offset)
        if mf is not None:
            pos = end_offset - mf.file_from_offset
            window = _ZERO_WINDOW
            if mf.file_size - pos >= BLANK_MARKER_SIZE:
                (declared,) = _INT.unpack_from(mf.mm, pos)
                if 0 < declared <= mf.file_size - pos:
                    window = max(window, declared)
            cut = mf.read_data(pos, window)
            mf.zero(pos, window)
        self.queue.truncate_dirty(end_offset)
        return cut

    def iter_records(self, from_offset: int | None = None) -> Iterator[tuple[int, MessageRecord]]:
        """Every whole record from ``from_offset`` (default: the first file) to the end, in order."""
        out: list[tuple[int, MessageRecord]] = []
        files = self.queue.files
        if not files:
            return iter(out)
        start = files[0].file_from_offset if from_offset is None else from_offset
        end = self.max_offset

        def visit(offset: int, size: int, record: MessageRecord) -> None:
            if offset < end:
                out.append((offset, record))

        self.scan(start, visit, check_crc=False)
        return iter(out)
