"""Consume queues: the per topic-queue index of commit-log positions (``ConsumeQueue``).

Directory ``consumequeue/TOPIC/QUEUEID/``; files of ``mappedFileSizeConsumeQueue`` bytes
(300,000 units × 20 by default) named by the 20-digit byte offset of their first unit. The unit for
logical (queue) offset *n* is at global byte position ``n * 20``::

    offset size  field
    0      8     commit-log offset of the record   (int64)
    8      4     record size, TOTALSIZE            (int32)
    12     8     tags code                         (int64; delivery time in SCHEDULE_TOPIC_XXXX)

Units are written in commit-log order by dispatch. A queue whose first file starts at a logical
offset inside the file (its first message was not offset 0 of that file) has the gap filled with
placeholder units ``(0, 0x7FFFFFFF, 0)`` (``fillPreBlank``).

Recovery (``ConsumeQueue.recover``) starts at the third-last file and takes units while
``offset >= 0 and size > 0``; the first other unit ends the queue and everything after it is
dropped (made to read as zeros without reading the unused rest of the file, see
:mod:`store.mapped_file_queue`). Then the owner truncates units that point at or past the
recovered commit-log end (``truncateDirtyLogicFiles``) and moves the min offset past units whose
record was deleted (``correctMinOffset``).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from store.config import CQ_STORE_UNIT_SIZE
from store.mapped_file_queue import MappedFileQueue

UNIT = struct.Struct(">qiq")  # commit-log offset, size, tags code
_BLANK_UNIT = UNIT.pack(0, 0x7FFFFFFF, 0)
_ZERO_UNIT = bytes(CQ_STORE_UNIT_SIZE)
MAX_GAP_UNITS = 1_000_000  # missing units filled with placeholders at most; a larger gap is refused


class ConsumeQueue:
    """One topic-queue's consume queue. Single writer."""

    __slots__ = ("file_size", "max_physic_offset", "min_logic_offset", "queue", "queue_id", "topic")

    def __init__(
        self, root: str, topic: str, queue_id: int, file_size: int, preallocate: bool = True
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = file_size
        self.queue = MappedFileQueue(os.path.join(root, topic, str(queue_id)), file_size, preallocate)
        self.max_physic_offset = -1  # end (offset + size) of the last record referenced
        self.min_logic_offset = 0  # byte position of the first valid unit

    # -- load / recover ------------------------------------------------------------------------

    def load(self) -> None:
        self.queue.load()

    def recover(self) -> bool:
        """Find the end of the units (``ConsumeQueue.recover``); returns ``False`` when the queue
        looks damaged rather than torn: a file that is not the last one ends early, or files that
        hold no unit at all (a zeroed file). The owner then rebuilds it from the commit log."""
        files = self.queue.files
        if not files:
            return True
        index = max(0, len(files) - 3)
        end = files[index].file_from_offset
        sound = True
        done = False
        while index < len(files) and not done:
            mf = files[index]
            pos = 0
            for offset, size, _tags in UNIT.iter_unpack(mf.mm):
                if offset >= 0 and size > 0:
                    pos += CQ_STORE_UNIT_SIZE
                    if size != 0x7FFFFFFF:
                        self.max_physic_offset = offset + size
                else:
                    done = True
                    break
            if done and index + 1 < len(files) and files[index + 1].mm[:CQ_STORE_UNIT_SIZE] != _ZERO_UNIT:
                sound = False  # a gap before a later file that holds units
            end = mf.file_from_offset + pos
            index += 1
        if end == files[0].file_from_offset:
            sound = False  # files exist but hold no unit: created at a dispatch, so something was there
        self.queue.truncate_dirty(end)
        first = self.queue.first
        self.min_logic_offset = first.file_from_offset if first else 0
        self._skip_placeholders()
        return sound

    def _skip_placeholders(self) -> None:
        first = self.queue.first
        if first is None:
            return
        pos = self.min_logic_offset - first.file_from_offset
        while 0 <= pos < first.wrote_position:
            _o, size, _t = UNIT.unpack_from(first.mm, pos)
            if size != 0x7FFFFFFF:
                break
            pos += CQ_STORE_UNIT_SIZE
        self.min_logic_offset = first.file_from_offset + max(pos, 0)

    def close(self) -> None:
        self.queue.close()

    def destroy(self) -> None:
        self.queue.destroy()

    # -- offsets ---------------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        """``getMinOffsetInQueue``: logical offset of the first valid unit."""
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    @property
    def max_offset(self) -> int:
        """``getMaxOffsetInQueue``: the logical offset the next message gets."""
        return self.queue.max_offset // CQ_STORE_UNIT_SIZE

    # -- writing ---------------------------------------------------------------------------------

    def put(self, queue_offset: int, commit_log_offset: int, size: int, tags_code: int) -> bool:
        """Append the unit for ``queue_offset`` (``putMessagePositionInfo``).

        Returns False, writing nothing, for a unit already present (re-dispatch after recovery)
        or out of order. Raises :class:`StoreIOError` if a new file cannot be created.
        """
        if commit_log_offset + size <= self.max_physic_offset:
            return False
        expect = queue_offset * CQ_STORE_UNIT_SIZE
        mf = self.queue.last_for_write(expect)
        current = mf.file_from_offset + mf.wrote_position
        if mf.wrote_position == 0 and len(self.queue) == 1 and expect > current:
            # A queue starting past offset 0 (or re-created after deletion): fill the gap.
            self.min_logic_offset = expect
            while mf.file_from_offset + mf.wrote_position < expect:
                mf.append(_BLANK_UNIT)
            current = expect
        if current < expect <= current + MAX_GAP_UNITS * CQ_STORE_UNIT_SIZE:
            # Units missing in the middle: records lost to damage (recovery skipped them). Their
            # offsets stay taken, as placeholders, so the later records keep theirs.
            while current < expect:
                self.queue.last_for_write(current).append(_BLANK_UNIT)
                current += CQ_STORE_UNIT_SIZE
            mf = self.queue.last_for_write(expect)
        if expect != current:
            return False
        mf.reserve(mf.wrote_position + CQ_STORE_UNIT_SIZE)
        # Written as Java's default (putConsumeQueueDataByFileChannel) does: see MappedFile.write_at.
        mf.write_at(mf.wrote_position, UNIT.pack(commit_log_offset, size, tags_code))
        mf.wrote_position += CQ_STORE_UNIT_SIZE
        self.max_physic_offset = commit_log_offset + size
        return True

    def put_block(self, queue_offset: int, block: bytes | bytearray) -> None:
        """Append a batch's units, packed with :data:`UNIT` back to back for the consecutive queue
        offsets from ``queue_offset`` in commit-log order, with one copy per file they reach.

        The bytes are those :meth:`put` writes unit by unit (the batch's records are dispatched
        after the commit log holds them all, so a torn copy leaves whole units and one torn unit,
        as a torn unit-by-unit write would). A block :meth:`put` would treat specially (a unit
        held already, a gap to fill, a queue's first unit past offset 0) goes unit by unit. Raises
        :class:`StoreIOError` if a new file cannot be created.
        """
        expect = queue_offset * CQ_STORE_UNIT_SIZE
        n = len(block)
        if n == 0:
            return
        first_offset, first_size, _tags = UNIT.unpack_from(block, 0)
        last = self.queue.last
        current = last.file_from_offset + last.wrote_position if last is not None else -1
        if (
            n % CQ_STORE_UNIT_SIZE
            or first_offset + first_size <= self.max_physic_offset
            or current != expect
            or (last is not None and last.wrote_position == 0 and len(self.queue) == 1)
        ):
            qo = queue_offset
            for offset, size, tags in UNIT.iter_unpack(block):
                self.put(qo, offset, size, tags)
                qo += 1
            return
        done = 0
        with memoryview(block) as view:
            while done < n:
                mf = self.queue.last_for_write(expect + done)
                pos = mf.wrote_position
                step = min(n - done, mf.space_left - mf.space_left % CQ_STORE_UNIT_SIZE)
                mf.reserve(pos + step)
                mf.write_at(pos, view[done : done + step])  # as put's units: see MappedFile.write_at
                mf.wrote_position = pos + step
                done += step
        last_offset, last_size, _tags = UNIT.unpack_from(block, n - CQ_STORE_UNIT_SIZE)
        self.max_physic_offset = last_offset + last_size

    def prepare(self, queue_offset: int, count: int) -> None:
        """Create the file for unit ``queue_offset`` and reserve blocks for ``count`` units from it
        (as far as that file goes), so a put fails on a full disk before its record is written.
        Raises :class:`StoreIOError`."""
        pos = queue_offset * CQ_STORE_UNIT_SIZE
        mf = self.queue.last_for_write(pos)
        if mf.file_from_offset <= pos < mf.file_end_offset:
            mf.reserve(min(pos + count * CQ_STORE_UNIT_SIZE, mf.file_end_offset) - mf.file_from_offset)

    def flush(self) -> int:
        return self.queue.flush()

    # -- reading ---------------------------------------------------------------------------------

    def get(self, queue_offset: int) -> tuple[int, int, int] | None:
        """The unit ``(commit-log offset, size, tags code)`` at ``queue_offset``, or ``None``."""
        pos = queue_offset * CQ_STORE_UNIT_SIZE
        if pos < self.min_logic_offset:
            return None
        mf = self.queue.find(pos)
        if mf is None or pos - mf.file_from_offset >= mf.wrote_position:
            return None
        offset, size, tags = UNIT.unpack_from(mf.mm, pos - mf.file_from_offset)
        return offset, size, tags

    def iterate_from(self, queue_offset: int, count: int) -> list[tuple[int, int, int]] | None:
        """Up to ``count`` units from ``queue_offset``, within the one file that holds it.

        ``None`` when that file does not exist (``OFFSET_FOUND_NULL``).
        """
        pos = queue_offset * CQ_STORE_UNIT_SIZE
        if pos < self.min_logic_offset:
            return None
        mf = self.queue.find(pos)
        if mf is None:
            return None
        start = pos - mf.file_from_offset
        end = min(mf.wrote_position, start + count * CQ_STORE_UNIT_SIZE)
        if start >= end:
            return []
        return list(UNIT.iter_unpack(mf.mm[start:end]))

    def units(self, from_offset: int = 0) -> Iterator[tuple[int, int, int, int]]:
        """Every unit from ``from_offset`` as ``(queue offset, commit-log offset, size, tags)``."""
        start = max(from_offset, self.min_offset)
        for mf in self.queue:
            first = max(start * CQ_STORE_UNIT_SIZE, mf.file_from_offset)
            rel = first - mf.file_from_offset
            if rel >= mf.wrote_position:
                continue
            qo = first // CQ_STORE_UNIT_SIZE
            for offset, size, tags in UNIT.iter_unpack(mf.mm[rel : mf.wrote_position]):
                yield qo, offset, size, tags
                qo += 1

    def roll_next_file(self, queue_offset: int) -> int:
        """``rollNextFile``: the first logical offset of the file after the one holding ``queue_offset``."""
        units_per_file = self.file_size // CQ_STORE_UNIT_SIZE
        return queue_offset + units_per_file - queue_offset % units_per_file

    # -- truncation and cleanup ------------------------------------------------------------------

    def truncate_dirty(self, commit_log_end: int) -> None:
        """Drop the units whose record does not end by ``commit_log_end`` (``truncateDirtyLogicFiles``)."""
        end = self.queue.max_offset
        floor = self.queue.min_offset if self.queue.files else 0
        new_max = -1
        while end > floor:
            pos = end - CQ_STORE_UNIT_SIZE
            mf = self.queue.find(pos)
            if mf is None:
                break
            offset, size, _t = UNIT.unpack_from(mf.mm, pos - mf.file_from_offset)
            if size != 0x7FFFFFFF and offset + size <= commit_log_end:
                new_max = offset + size
                break
            end = pos
        if end != self.queue.max_offset:
            self.queue.truncate_dirty(end)
        self.max_physic_offset = new_max
        self.min_logic_offset = min(self.min_logic_offset, self.queue.max_offset)

    def units_below(self, phy_offset: int) -> int:
        """Units from the min offset whose record starts before ``phy_offset``."""
        return self._first_unit_at_or_after(phy_offset) - self.min_offset

    def blank_units_in(self, start: int, end: int) -> int:
        """Overwrite units whose record starts in ``[start, end)`` with placeholders; returns how many."""
        lo = self._first_unit_at_or_after(start)
        count = 0
        while lo < self.max_offset:
            unit = self.get(lo)
            if unit is None or (unit[1] != 0x7FFFFFFF and unit[0] >= end):
                break
            if unit[1] != 0x7FFFFFFF:
                pos = lo * CQ_STORE_UNIT_SIZE
                mf = self.queue.find(pos)
                assert mf is not None
                mf.mm[pos - mf.file_from_offset : pos - mf.file_from_offset + CQ_STORE_UNIT_SIZE] = (
                    _BLANK_UNIT
                )
                count += 1
            lo += 1
        return count

    def correct_min_offset(self, min_commit_log_offset: int) -> None:
        """Move the min offset to the first unit whose record is still in the commit log."""
        lo = self._first_unit_at_or_after(min_commit_log_offset)
        self.min_logic_offset = max(self.min_logic_offset, lo * CQ_STORE_UNIT_SIZE)

    def _first_unit_at_or_after(self, phy_offset: int) -> int:
        """The first queue offset whose record starts at or after ``phy_offset`` (the max offset if
        none). Units are in commit-log order, so this is a binary search; a placeholder compares as
        the next real unit after it."""
        lo, hi = self.min_offset, self.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            probe = mid
            unit = self.get(probe)
            while unit is not None and unit[1] == 0x7FFFFFFF and probe + 1 < hi:
                probe += 1
                unit = self.get(probe)
            if unit is None or unit[1] == 0x7FFFFFFF or unit[0] < phy_offset:
                lo = probe + 1
            else:
                hi = mid
        return lo

    def delete_expired_files(self, min_commit_log_offset: int) -> int:
        """Delete leading files whose last unit points below ``min_commit_log_offset``; keep the last."""
        count = 0
        for mf in self.queue.files[:-1]:
            if mf.wrote_position < CQ_STORE_UNIT_SIZE:
                break
            offset, _s, _t = UNIT.unpack_from(mf.mm, mf.wrote_position - CQ_STORE_UNIT_SIZE)
            if offset >= min_commit_log_offset:
                break
            count += 1
        self.queue.delete_first(count)
        self.correct_min_offset(min_commit_log_offset)
        return count
