"""What the store derives from each record for its consume queues and index, and the one step
that writes them (``DispatchRequest`` and ``DefaultMessageStore.doDispatch``).

:class:`CommitLogDispatcher` is used both by a put and by recovery when it re-dispatches records
from the commit log (``CommitLog.checkMessageAndReturnSize`` builds the Java ``DispatchRequest``
in both cases), so the two can never disagree. The rules:

* tags code = Java ``String.hashCode`` of the ``TAGS`` property (0 without one); for a record in
  ``SCHEDULE_TOPIC_XXXX`` with a ``DELAY`` level > 0 it is the delivery time instead:
  store timestamp + the level's delay (``DefaultMessageStore.computeDeliverTimestamp``; levels above
  the table are capped at the last level, and an unknown level means +1 s);
* consume queue: only records of transaction type NOT or COMMIT get an entry (and a queue offset);
* index: records of type NOT, PREPARED or COMMIT are indexed by ``UNIQ_KEY`` and every non-empty
  space-separated ``KEYS`` entry, ROLLBACK records are not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from codec.hashing import tags_code as hash_tags
from codec.message import MessageRecord, MessageSysFlag, RecordLayout
from codec.properties import DELAY, KEYS, TAGS, UNIQ_KEY, decode_properties
from store.consume_queue import UNIT
from store.consume_queue_store import ConsumeQueueStore
from store.index_service import IndexService

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"  # TopicValidator.RMQ_SYS_SCHEDULE_TOPIC


class DispatchRequest:
    """One record as the consume queue and index see it (no body)."""

    __slots__ = (
        "commit_log_offset",
        "keys",
        "msg_size",
        "queue_id",
        "queue_offset",
        "store_timestamp",
        "sys_flag",
        "tags_code",
        "topic",
        "uniq_key",
    )

    def __init__(
        self,
        topic: str,
        queue_id: int,
        commit_log_offset: int,
        msg_size: int,
        tags_code: int,
        store_timestamp: int,
        queue_offset: int,
        keys: str | None,
        uniq_key: str | None,
        sys_flag: int,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.commit_log_offset = commit_log_offset
        self.msg_size = msg_size
        self.tags_code = tags_code
        self.store_timestamp = store_timestamp
        self.queue_offset = queue_offset
        self.keys = keys
        self.uniq_key = uniq_key
        self.sys_flag = sys_flag

    @property
    def has_queue_entry(self) -> bool:
        return has_queue_entry(self.sys_flag)

    @property
    def is_indexed(self) -> bool:
        return MessageSysFlag.transaction_type(self.sys_flag) != MessageSysFlag.TRANSACTION_ROLLBACK_TYPE

    def index_keys(self) -> list[str]:
        """The index keys of this record, ``UNIQ_KEY`` first, without the ``topic#`` prefix."""
        out = [self.uniq_key] if self.uniq_key else []
        if self.keys:
            out.extend(k for k in self.keys.split(" ") if k)
        return out

    def __repr__(self) -> str:
        return (
            f"DispatchRequest({self.topic!r}, q={self.queue_id}, offset={self.commit_log_offset}, "
            f"size={self.msg_size}, qo={self.queue_offset})"
        )


def has_queue_entry(sys_flag: int) -> bool:
    """Types NOT and COMMIT get a consume-queue entry and a queue offset; PREPARED/ROLLBACK do not."""
    kind = MessageSysFlag.transaction_type(sys_flag)
    return kind in (MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE)


def compute_tags_code(
    topic: str, props: dict[str, str], store_timestamp: int, delay_levels_ms: tuple[int, ...]
) -> int:
    """The consume-queue tags code of a record (see the module docstring)."""
    if topic == SCHEDULE_TOPIC and delay_levels_ms:
        text = props.get(DELAY)
        if text is not None:
            try:
                level = int(text)
            except ValueError:
                level = 0
            level = min(level, len(delay_levels_ms))
            if level > 0:
                return store_timestamp + delay_levels_ms[level - 1]
    return hash_tags(props.get(TAGS))


def dispatch_of(
    record: MessageRecord,
    commit_log_offset: int,
    size: int,
    delay_levels_ms: tuple[int, ...],
    props: dict[str, str] | None = None,
) -> DispatchRequest:
    """The dispatch request of a decoded (or just encoded) record."""
    if props is None:
        props = decode_properties(record.properties)
    return DispatchRequest(  # positional: once per stored record
        record.topic,
        record.queue_id,
        commit_log_offset,
        size,
        compute_tags_code(record.topic, props, record.store_timestamp, delay_levels_ms),
        record.store_timestamp,
        record.queue_offset,
        props.get(KEYS),
        props.get(UNIQ_KEY),
        record.sys_flag,
    )


#: Told of every record a put dispatched to a consume queue, with its decoded properties
#: (``MessageArrivingListener.arriving``: long polling wakes held pulls with it).
ArrivalListener = Callable[[DispatchRequest, dict[str, str]], None]


class CommitLogDispatcher:
    """Writes a record's consume-queue unit and index entries (``CommitLogDispatcherBuildConsumeQueue``
    and ``CommitLogDispatcherBuildIndex``). Both skip what they already hold: the consume queue a
    unit at or before its last one, the index a record before its ``endPhyOffset`` (Java's
    ``IndexService.buildIndex`` check), so recovery may re-dispatch records safely."""

    __slots__ = ("delay_levels_ms", "index", "index_enabled", "last_timestamp", "queues")

    def __init__(
        self,
        queues: ConsumeQueueStore,
        index: IndexService,
        delay_levels_ms: tuple[int, ...],
        index_enabled: bool,
    ) -> None:
        self.queues = queues
        self.index = index
        self.delay_levels_ms = delay_levels_ms
        self.index_enabled = index_enabled
        self.last_timestamp = 0  # store time of the newest record dispatched (checkpoint's logics time)

    def dispatch_record(
        self, record: MessageRecord, offset: int, size: int, props: dict[str, str]
    ) -> DispatchRequest:
        """Dispatch the record stored at commit-log ``offset`` and return what was dispatched."""
        req = dispatch_of(record, offset, size, self.delay_levels_ms, props)
        # Once per stored record: the transaction-type tests of has_queue_entry / is_indexed and
        # index_keys() written out.
        kind = record.sys_flag & MessageSysFlag.TRANSACTION_MASK
        if kind == MessageSysFlag.TRANSACTION_NOT_TYPE or kind == MessageSysFlag.TRANSACTION_COMMIT_TYPE:
            self.queues.find_or_create(req.topic, req.queue_id).put(
                req.queue_offset, offset, size, req.tags_code
            )
        if self.index_enabled and kind != MessageSysFlag.TRANSACTION_ROLLBACK_TYPE:
            keys = [req.uniq_key] if req.uniq_key else []
            if req.keys:
                keys += [k for k in req.keys.split(" ") if k]
            if keys:
                self.index.build(req.topic, keys, offset, req.store_timestamp)
        self.last_timestamp = req.store_timestamp
        return req

    def dispatch_batch(
        self, msgs: Sequence[MessageRecord], layouts: Sequence[RecordLayout], props_list: list[dict[str, str]]
    ) -> list[DispatchRequest]:
        """Dispatch a put batch (one topic-queue, records just written back to back, each with its
        ``physical_offset``) and return what was dispatched, in order.

        The same units and entries as :meth:`dispatch_record` per record, written as blocks: the
        batch's consume-queue units in one copy (:meth:`ConsumeQueue.put_block`) and its index
        entries with :meth:`IndexService.build_batch`; a single record goes through
        :meth:`dispatch_record`, which is cheaper for one. Raises :class:`StoreIOError`.
        """
        if len(msgs) == 1:
            return [self.dispatch_record(msgs[0], msgs[0].physical_offset, layouts[0].size, props_list[0])]
        reqs: list[DispatchRequest] = []
        units = bytearray(UNIT.size * len(msgs))
        unit_pos = 0
        first_queue_offset = -1
        indexed: list[tuple[list[str], int, int]] = []
        index_enabled = self.index_enabled
        delay_levels_ms = self.delay_levels_ms
        for msg, layout, props in zip(msgs, layouts, props_list, strict=True):
            offset = msg.physical_offset
            req = dispatch_of(msg, offset, layout.size, delay_levels_ms, props)
            reqs.append(req)
            kind = msg.sys_flag & MessageSysFlag.TRANSACTION_MASK
            if kind == MessageSysFlag.TRANSACTION_NOT_TYPE or kind == MessageSysFlag.TRANSACTION_COMMIT_TYPE:
                if first_queue_offset < 0:
                    first_queue_offset = req.queue_offset
                UNIT.pack_into(units, unit_pos, offset, layout.size, req.tags_code)
                unit_pos += UNIT.size
            if index_enabled and kind != MessageSysFlag.TRANSACTION_ROLLBACK_TYPE:
                keys = req.index_keys()
                if keys:
                    indexed.append((keys, offset, req.store_timestamp))
        if not reqs:
            return reqs
        first = reqs[0]
        if unit_pos:
            del units[unit_pos:]
            self.queues.find_or_create(first.topic, first.queue_id).put_block(first_queue_offset, units)
        if indexed:
            self.index.build_batch(first.topic, indexed)
        self.last_timestamp = reqs[-1].store_timestamp
        return reqs
