"""Index files: message keys to commit-log offsets (``index/IndexFile``, ``IndexHeader``); the files
of a store are kept by :class:`store.index_service.IndexService`.

Each file in ``index/`` is named by its creation time, ``yyyyMMddHHmmssSSS`` in local time, and has
``40 + maxHashSlotNum*4 + maxIndexNum*20`` bytes (420,000,040 by default), all big-endian::

    header, 40 bytes
      0   8  beginTimestamp   store time of the first indexed message (ms)
      8   8  endTimestamp     store time of the last indexed message
      16  8  beginPhyOffset   commit-log offset of the first indexed message
      24  8  endPhyOffset     commit-log offset of the last indexed message
      32  4  hashSlotCount    slots in use
      36  4  indexCount       next entry number; starts at 1, entry 0 is never used
    hash slots, maxHashSlotNum × 4 bytes at 40
      int32  number of the newest entry whose key hashes here (0 = empty)
    entries, maxIndexNum × 20 bytes at 40 + maxHashSlotNum*4
      0   4  key hash         abs(Java String.hashCode of "topic#key"), MIN_VALUE → 0
      4   8  commit-log offset
      12  4  time diff        (storeTimestamp − beginTimestamp) / 1000 s, clamped to [0, 2^31−1];
                              0 while beginTimestamp ≤ 0
      16  4  previous entry   number of the next-older entry of the same slot (0 = end of chain)

The slot is ``hash % maxHashSlotNum``. A lookup walks the chain from the slot, keeps entries with
the same hash whose ``beginTimestamp + diff*1000`` is within ``[begin, end]``, and stops at an
older entry or a broken link; hash collisions are possible, so callers re-check the records.
A file is full at ``indexCount == maxIndexNum``; the next one starts with the previous file's end
timestamp and offset as its begin and end values, and the checkpoint's ``indexMsgTimestamp``
becomes the full file's end timestamp once it is flushed.

Recovery: our index entries are written after the record they point at, so after a crash they
never point past a whole record; we therefore keep every index file (Java deletes those newer
than the checkpoint's ``indexMsgTimestamp``) and recovery re-indexes the records from each file's
``endPhyOffset`` on. Entries left pointing at truncated data are filtered out by the caller,
which verifies every hit against the commit log.
"""

from __future__ import annotations

import struct
import time

from codec.hashing import java_string_hash_tail
from store.errors import StoreCorruptionError
from store.mapped_file import PAGE_SIZE, MappedFile, reserve_chunk

HEADER = struct.Struct(">qqqqii")
HEADER_SIZE = 40  # IndexHeader.INDEX_HEADER_SIZE
HASH_SLOT_SIZE = 4
INDEX_SIZE = 20
_SLOT = struct.Struct(">i")
_ENTRY = struct.Struct(">iqii")  # key hash, commit-log offset, time diff, previous entry
_INT_MAX = 0x7FFFFFFF


def index_key_hash(key: str) -> int:
    """``IndexFile.indexKeyHashMethod``: ``abs(key.hashCode())``, with ``Integer.MIN_VALUE`` → 0."""
    h = java_string_hash_tail(key)
    return 0 if h == -0x80000000 else abs(h)


def index_file_name(now_ms: int) -> str:
    """``UtilAll.timeMillisToHumanString``: ``yyyyMMddHHmmssSSS`` in local time."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(now_ms / 1000)) + f"{now_ms % 1000:03d}"


class IndexFile:
    """One index file. Header values live in attributes and are written through to the map."""

    __slots__ = (
        "begin_phy_offset",
        "begin_timestamp",
        "end_phy_offset",
        "end_timestamp",
        "entries_reserved",
        "hash_slot_count",
        "hash_slot_num",
        "index_count",
        "index_num",
        "mf",
        "reserved_pages",
    )

    def __init__(self, mf: MappedFile, hash_slot_num: int, index_num: int) -> None:
        self.mf = mf
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        fields: tuple[int, ...] = HEADER.unpack_from(mf.mm, 0)
        self.begin_timestamp: int = fields[0]
        self.end_timestamp: int = fields[1]
        self.begin_phy_offset: int = fields[2]
        self.end_phy_offset: int = fields[3]
        self.hash_slot_count: int = fields[4]
        self.index_count: int = max(fields[5], 1)  # IndexHeader.load: <= 0 means 1
        self.reserved_pages: set[int] = set()  # slot-table pages given blocks by this process
        self.entries_reserved = 0  # end of the entry area given blocks by this process

    @staticmethod
    def file_size(hash_slot_num: int, index_num: int) -> int:
        return HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_SIZE

    @classmethod
    def create(
        cls,
        path: str,
        hash_slot_num: int,
        index_num: int,
        end_phy_offset: int,
        end_timestamp: int,
        preallocate: bool = True,
    ) -> IndexFile:
        mf = MappedFile.create_path(path, 0, cls.file_size(hash_slot_num, index_num), preallocate)
        f = cls(mf, hash_slot_num, index_num)
        if end_phy_offset > 0:
            f.begin_phy_offset = f.end_phy_offset = end_phy_offset
        if end_timestamp > 0:
            f.begin_timestamp = f.end_timestamp = end_timestamp
        f.write_header()
        return f

    @classmethod
    def open(cls, path: str, hash_slot_num: int, index_num: int) -> IndexFile:
        mf = MappedFile.open(path, cls.file_size(hash_slot_num, index_num), named_by_offset=False)
        f = cls(mf, hash_slot_num, index_num)
        if f.index_count > index_num or f.hash_slot_count < 0 or f.hash_slot_count > hash_slot_num:
            mf.close()
            raise StoreCorruptionError(
                f"{path}: index header counts out of range ({f.index_count}, {f.hash_slot_count})"
            )
        mf.wrote_position = mf.file_size
        return f

    @property
    def path(self) -> str:
        return self.mf.path

    @property
    def is_write_full(self) -> bool:
        return self.index_count >= self.index_num

    def write_header(self) -> None:
        HEADER.pack_into(
            self.mf.mm,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )

    def put_key(
        self,
        key: str,
        phy_offset: int,
        store_timestamp: int,
        *,
        header: bool = True,
        key_hash: int | None = None,
    ) -> bool:
        """Add an entry (``IndexFile.putKey``); False when the file is full. ``header=False``
        leaves the header in the map to the caller (one write for all keys of a record);
        ``key_hash`` is :func:`index_key_hash` of ``key`` when the caller has it."""
        if self.index_count >= self.index_num:
            return False
        mm = self.mf.mm
        if key_hash is None:
            key_hash = index_key_hash(key)
        slot_pos = HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE
        (slot_value,) = _SLOT.unpack_from(mm, slot_pos)
        if slot_value <= 0 or slot_value > self.index_count:
            slot_value = 0
        if slot_value == 0:  # a slot in a page never written may be a hole: give it blocks first
            self._reserve_page_of(slot_pos)
        if self.begin_timestamp <= 0:
            diff = 0
        else:
            diff = min(max((store_timestamp - self.begin_timestamp) // 1000, 0), _INT_MAX)
        count = self.index_count
        entry_pos = HEADER_SIZE + self.hash_slot_num * HASH_SLOT_SIZE + count * INDEX_SIZE
        self.reserve_entries(count + 1)
        _ENTRY.pack_into(mm, entry_pos, key_hash, phy_offset, diff, slot_value)
        _SLOT.pack_into(mm, slot_pos, count)
        if count <= 1:
            self.begin_phy_offset = phy_offset
            self.begin_timestamp = store_timestamp
        if slot_value == 0:
            self.hash_slot_count += 1
        self.index_count = count + 1
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        if header:
            self.write_header()
        return True

    def put_entries(self, entries: list[tuple[int, int, int]], start: int) -> int:
        """Add ``entries[start:]`` (``(key hash, commit-log offset, store time)``, in commit-log
        order) until the file is full; returns the position in ``entries`` after the last one added.

        The same bytes as :meth:`put_key` once per entry, written as few times as the layout
        allows: the entries are consecutive, so they are one block; each hash slot they touch is
        written once, with its newest entry; the header is left to the caller. Order as Java's
        ``putKey``: entries, then slots (then the caller's header), so a slot never points at an
        entry not written yet. Raises :class:`DiskFullError` before writing anything when a slot
        page cannot get blocks.
        """
        n = min(len(entries) - start, self.index_num - self.index_count)
        if n <= 0:
            return start
        mm = self.mf.mm
        slot_num = self.hash_slot_num
        count = self.index_count
        self.reserve_entries(count + n)
        block = bytearray(n * INDEX_SIZE)
        slots: dict[int, int] = {}  # slot position -> newest entry of this block in it
        slot_count = self.hash_slot_count
        begin_ts = self.begin_timestamp
        begin_phy = self.begin_phy_offset
        phy_offset = store_timestamp = 0
        for i in range(n):
            key_hash, phy_offset, store_timestamp = entries[start + i]
            slot_pos = HEADER_SIZE + (key_hash % slot_num) * HASH_SLOT_SIZE
            prev = slots.get(slot_pos)
            if prev is None:
                (prev,) = _SLOT.unpack_from(mm, slot_pos)
                if prev <= 0 or prev > count:
                    prev = 0
                if prev == 0:
                    self._reserve_page_of(slot_pos)
                    slot_count += 1
            diff = 0 if begin_ts <= 0 else min(max((store_timestamp - begin_ts) // 1000, 0), _INT_MAX)
            _ENTRY.pack_into(block, i * INDEX_SIZE, key_hash, phy_offset, diff, prev)
            slots[slot_pos] = count
            if count <= 1:
                begin_phy = phy_offset
                begin_ts = store_timestamp
            count += 1
        entry_pos = HEADER_SIZE + slot_num * HASH_SLOT_SIZE + self.index_count * INDEX_SIZE
        mm[entry_pos : entry_pos + len(block)] = block
        for slot_pos, newest in slots.items():
            _SLOT.pack_into(mm, slot_pos, newest)
        self.index_count = count
        self.hash_slot_count = slot_count
        self.begin_timestamp = begin_ts
        self.begin_phy_offset = begin_phy
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        return start + n

    def reserve_entries(self, count: int) -> None:
        """Reserve blocks for the first ``count`` entries (in chunks); raises :class:`DiskFullError`."""
        end = HEADER_SIZE + self.hash_slot_num * HASH_SLOT_SIZE + min(count, self.index_num) * INDEX_SIZE
        if end > self.entries_reserved:
            start = max(self.entries_reserved, end - INDEX_SIZE)
            chunk = reserve_chunk(self.mf.file_size)
            self.mf.reserve_range(start, chunk)
            self.entries_reserved = min(start + chunk, self.mf.file_size)

    def _reserve_page_of(self, pos: int) -> None:
        """Reserve blocks for the page holding ``pos`` in the slot table (slots are written in hash
        order, not sequentially, so they are reserved a page at a time as they are first used)."""
        page = pos // PAGE_SIZE
        if page not in self.reserved_pages:
            self.mf.reserve_range(page * PAGE_SIZE, PAGE_SIZE)
            self.reserved_pages.add(page)

    def is_time_matched(self, begin: int, end: int) -> bool:
        b, e = self.begin_timestamp, self.end_timestamp
        return (begin < b and end > e) or (b <= begin <= e) or (b <= end <= e)

    def select(self, out: list[int], key: str, max_num: int, begin: int, end: int) -> None:
        """Add the offsets of ``key`` in ``[begin, end]`` to ``out``, newest first (``selectPhyOffset``)."""
        mm = self.mf.mm
        key_hash = index_key_hash(key)
        slot_pos = HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE
        (current,) = _SLOT.unpack_from(mm, slot_pos)
        if current <= 0 or current > self.index_count or self.index_count <= 1:
            return
        entries = HEADER_SIZE + self.hash_slot_num * HASH_SLOT_SIZE
        for _ in range(self.index_count):  # a chain can never be longer than the entry count
            if len(out) >= max_num:
                return
            hash_read, offset, diff, prev = _ENTRY.unpack_from(mm, entries + current * INDEX_SIZE)
            if diff < 0:
                return
            time_read = self.begin_timestamp + diff * 1000
            if hash_read == key_hash and begin <= time_read <= end:
                out.append(offset)
            if prev <= 0 or prev > self.index_count or prev == current or time_read < begin:
                return
            current = prev

    def flush(self) -> None:
        self.write_header()
        self.mf.wrote_position = self.mf.file_size
        self.mf.flush()

    def close(self) -> None:
        self.mf.close()

    def destroy(self) -> None:
        self.mf.destroy()
