"""The read side of the store: pulls, lookups by offset, key queries and time searches.

Mirrors ``DefaultMessageStore.getMessage``, ``lookMessageByOffset``, ``queryMessage``,
``getOffsetInQueueByTime`` and ``getEarliestMessageTime``. Everything here only reads; it sees the
consume queues and commit log the writer has dispatched so far, so it never serves a record
that is not whole (consume-queue units and index entries are written after their record).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from codec.errors import MessageFormatError
from codec.message import decode_record
from codec.properties import KEYS, UNIQ_KEY, decode_properties, split_keys
from store.commit_log import CommitLog
from store.config import CQ_STORE_UNIT_SIZE, StoreConfig
from store.consume_queue import ConsumeQueue
from store.consume_queue_store import ConsumeQueueStore
from store.index_service import IndexService
from store.message_filter import MessageFilter
from store.results import CqUnit, GetMessageResult, GetMessageStatus, QueryMessageResult

MAX_PULL_MSG_SIZE = 128 * 1024 * 1024  # DefaultMessageStore.MAX_PULL_MSG_SIZE
_PLACEHOLDER_SIZE = 0x7FFFFFFF


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 * 1024**3


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


class MessageReader:
    def __init__(
        self, config: StoreConfig, commit_log: CommitLog, queues: ConsumeQueueStore, index: IndexService
    ) -> None:
        self.config = config
        self.commit_log = commit_log
        self.queues = queues
        self.index = index
        self._memory = _total_memory() * config.access_message_in_memory_max_ratio // 100

    # -- pulls -----------------------------------------------------------------------------------

    def get_message(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        max_total_msg_size: int = MAX_PULL_MSG_SIZE,
        message_filter: MessageFilter | None = None,
    ) -> GetMessageResult:
        """Up to ``max_msg_nums`` matching records of a queue from ``offset``
        (``DefaultMessageStore.getMessage``).

        ``message_filter`` is asked about each unit, then each record it lets through
        (:mod:`store.message_filter`); ``None`` matches every message. Units are scanned up to
        ``maxFilterMessageSize`` bytes of consume queue (at least ``max_msg_nums`` units) past
        ``offset``, so a read that matches nothing in that window answers ``NO_MATCHED_MESSAGE``
        with the offset after it, and the caller reads on from there, as in Java. The
        status and ``next_begin_offset`` for an empty queue, an offset below the min, at the max
        and past it are Java's (``NO_MESSAGE_IN_QUEUE``, ``OFFSET_TOO_SMALL``,
        ``OFFSET_OVERFLOW_ONE``, ``OFFSET_OVERFLOW_BADLY``).
        """
        cq = self.queues.find(topic, queue_id)
        if cq is None:
            return GetMessageResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, 0, 0, 0)
        min_offset, max_offset = cq.min_offset, cq.max_offset
        if max_offset == 0:
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, min_offset, max_offset)
        if offset < min_offset:
            return GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, min_offset, min_offset, max_offset)
        if offset == max_offset:
            return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, min_offset, max_offset)
        if offset > max_offset:
            return GetMessageResult(
                GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset, min_offset, max_offset
            )
        result = GetMessageResult(GetMessageStatus.NO_MATCHED_MESSAGE, offset, min_offset, max_offset)
        self._fill(result, cq, offset, max_msg_nums, max_total_msg_size, message_filter)
        return result

    def _fill(
        self,
        result: GetMessageResult,
        cq: ConsumeQueue,
        offset: int,
        max_msg_nums: int,
        max_total_msg_size: int,
        message_filter: MessageFilter | None,
    ) -> None:
        config = self.config
        max_filter_size = max(config.max_filter_message_size, max_msg_nums * CQ_STORE_UNIT_SIZE)
        max_pull_size = min(max(max_total_msg_size, 100), MAX_PULL_MSG_SIZE)
        max_phy_offset = self.commit_log.max_offset
        max_phy_pulling = 0
        next_begin = offset
        total = 0
        travelled = 0
        while (
            total == 0
            and next_begin < result.max_offset
            and travelled < config.travel_cq_file_num_when_get_message
        ):
            travelled += 1
            units = cq.iterate_from(next_begin, max(max_msg_nums, max_filter_size // CQ_STORE_UNIT_SIZE))
            if units is None:
                result.status = GetMessageStatus.OFFSET_FOUND_NULL
                next_begin = cq.roll_next_file(next_begin)
                break
            next_phy_file_start = -1
            queue_offset = next_begin
            for phy_offset, msg_size, tags in units:
                if queue_offset >= result.max_offset:
                    break
                if (queue_offset - offset) * CQ_STORE_UNIT_SIZE >= max_filter_size:
                    break
                in_mem = max_phy_offset - phy_offset < self._memory
                if self._batch_full(
                    msg_size, max_msg_nums, max_pull_size, total, result.message_count, in_mem
                ):
                    break
                max_phy_pulling = phy_offset
                this_offset = queue_offset
                queue_offset += 1
                next_begin = queue_offset
                if msg_size == _PLACEHOLDER_SIZE or (
                    next_phy_file_start >= 0 and phy_offset < next_phy_file_start
                ):
                    continue
                if message_filter is not None and not message_filter.is_matched_by_consume_queue(
                    _int32(tags)
                ):
                    continue
                data = self.commit_log.get_data(phy_offset, msg_size)
                if data is None:
                    if total == 0:
                        result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                    next_phy_file_start = self.commit_log.next_file_start(phy_offset)
                    continue
                if message_filter is not None and not message_filter.is_matched_by_commit_log(data):
                    continue
                result.buffers.append(data)
                result.queue_offsets.append(this_offset)
                total += msg_size
                result.status = GetMessageStatus.FOUND
                next_phy_file_start = -1
        result.next_begin_offset = next_begin
        result.suggest_pulling_from_slave = max_phy_offset - max_phy_pulling > self._memory

    def _batch_full(
        self, msg_size: int, max_nums: int, max_size: int, total: int, count: int, in_mem: bool
    ) -> bool:
        """``DefaultMessageStore.isTheBatchFull``; the first message always goes."""
        if total == 0 or count == 0:
            return False
        if count + 1 > max_nums or total + msg_size > max_size:
            return True
        config = self.config
        if in_mem:
            if total + msg_size > config.max_transfer_bytes_on_message_in_memory:
                return True
            return count > config.max_transfer_count_on_message_in_memory - 1
        if total + msg_size > config.max_transfer_bytes_on_message_in_disk:
            return True
        return count > config.max_transfer_count_on_message_in_disk - 1

    # -- lookups ---------------------------------------------------------------------------------

    def look_message_by_offset(self, commit_log_offset: int) -> bytes | None:
        """The whole record at a commit-log offset (``lookMessageByOffset``), or ``None``."""
        size = self.commit_log.record_size_at(commit_log_offset)
        if size <= 0 or commit_log_offset + size > self.commit_log.max_offset:
            return None
        return self.commit_log.get_data(commit_log_offset, size)

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        """Records whose ``KEYS`` or ``UNIQ_KEY`` is ``key`` stored within ``[begin, end]`` ms, newest
        first, at most ``min(max_num, maxMsgsNumBatch)``. Index hits are checked against the record
        (topic and key), which drops hash collisions and entries left by a truncated tail."""
        max_num = min(max_num, self.config.max_msgs_num_batch)
        offsets, last_ts, last_phy = self.index.query(topic, key, max_num, begin, end)
        result = QueryMessageResult(last_ts, last_phy)
        seen: set[int] = set()
        for offset in offsets:
            if offset in seen:
                continue
            seen.add(offset)
            data = self.look_message_by_offset(offset)
            if data is None:
                continue
            try:
                record = decode_record(data, with_body=False)
            except MessageFormatError:
                continue
            props = decode_properties(record.properties)
            if record.topic != topic or (
                props.get(UNIQ_KEY) != key and key not in split_keys(props.get(KEYS))
            ):
                continue
            result.buffers.append(data)
            result.offsets.append(offset)
        return result

    # -- offsets and times -----------------------------------------------------------------------

    def _store_time_of(self, cq: ConsumeQueue, queue_offset: int) -> int:
        unit = cq.get(queue_offset)
        if unit is None or unit[1] == _PLACEHOLDER_SIZE:
            return -1
        return self.commit_log.pickup_store_timestamp(unit[0], unit[1])

    def get_offset_in_queue_by_time(
        self, topic: str, queue_id: int, timestamp: int, upper: bool = False
    ) -> int:
        """``getOffsetInQueueByTime`` (``BoundaryType``). LOWER (default): the first offset stored at or after
        ``timestamp`` (the max offset if all are older); UPPER: the last one stored at or before
        it (0 if all are newer). Unknown queue: 0."""
        cq = self.queues.find(topic, queue_id)
        if cq is None:
            return 0
        lo, hi = cq.min_offset, cq.max_offset
        if lo >= hi:
            return 0 if upper else hi
        first, last = lo, hi
        while lo < hi:  # first offset whose time is > timestamp (UPPER) or >= timestamp (LOWER)
            mid = (lo + hi) // 2
            ts = self._store_time_of(cq, mid)
            if ts > timestamp or (not upper and ts == timestamp):
                hi = mid
            else:
                lo = mid + 1
        if not upper:
            return lo
        return 0 if lo == first else min(lo, last) - 1

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        cq = self.queues.find(topic, queue_id)
        if cq is None:
            return -1
        return self._store_time_of(cq, cq.min_offset)

    def get_message_store_timestamp(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """Store timestamp of the message at ``queue_offset`` (``getMessageStoreTimeStamp``); -1 when
        the queue or the message is gone."""
        cq = self.queues.find(topic, queue_id)
        return self._store_time_of(cq, queue_offset) if cq is not None else -1

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.queues.find(topic, queue_id)
        return cq.min_offset if cq else 0

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.queues.find(topic, queue_id)
        return cq.max_offset if cq else 0

    # -- consume-queue units ---------------------------------------------------------------------

    def get_queue_unit(self, topic: str, queue_id: int, queue_offset: int) -> CqUnit | None:
        """The consume-queue unit at ``queue_offset``, or ``None`` (no such queue or unit, or a
        placeholder)."""
        cq = self.queues.find(topic, queue_id)
        unit = cq.get(queue_offset) if cq is not None else None
        if unit is None or unit[1] == _PLACEHOLDER_SIZE:
            return None
        return CqUnit(queue_offset, *unit)

    def iter_queue_units(self, topic: str, queue_id: int, from_offset: int) -> Iterator[CqUnit]:
        """The units from ``from_offset`` (or the queue's min offset, if later) to its end, skipping
        placeholders (``ConsumeQueue.iterateFrom``)."""
        cq = self.queues.find(topic, queue_id)
        if cq is None:
            return
        for queue_offset, phy_offset, size, tags in cq.units(from_offset):
            if size != _PLACEHOLDER_SIZE:
                yield CqUnit(queue_offset, phy_offset, size, tags)

    def is_in_memory(self, topic: str, queue_id: int, queue_offset: int) -> bool:
        """Whether the message at ``queue_offset`` is likely still in the page cache: within
        ``accessMessageInMemoryMaxRatio`` of memory behind the commit log's end
        (``checkInMemByConsumeOffset``)."""
        unit = self.get_queue_unit(topic, queue_id, queue_offset)
        return unit is not None and self.commit_log.max_offset - unit.phy_offset < self._memory
