"""The revive service: unacknowledged POP messages go back out through the POP retry topic.

Mirrors ``PopReviveService`` (``consumeReviveMessage``, ``mergeAndRevive``, ``reviveRetry``). For each
revive queue of ``rmq_sys_REVIVE_LOG_<cluster>`` it reads the records the timer has delivered since
the last round: a ``ck`` goes into a table keyed ``topic+group+queueId+startOffset+popTime+brokerName``
with its revive-queue offset (``ro``), an ``ack``/``bAck`` sets the bits of the matching checkpoint
(an ack without one is dropped, as in Java). The timer delivers a ``ck`` one ``ackTimeInterval``
before its revive time (``popTime + invisibleTime``) and its acks at the revive time, in delivery
order, so the revive log's own progress says when a checkpoint is complete: each queue keeps the
latest delivery time it has read (``endTime``), moved to the wall clock only after 3 s without a
new record while the timer is caught up, and a checkpoint is due once ``endTime`` is more than
``ackTimeInterval + 1 s`` past its revive time. A slow timer therefore delays a revive instead of
reviving a message whose ack is still on its way. Every message of a due checkpoint whose bit is
clear is put again into the POP retry topic
(``%RETRY%group_topic``, queue 0) with ``reconsumeTimes + 1`` and ``1ST_POP_TIME``, the retry topic
created on demand with the group's offset on it at 0.

The committed offset of ``CID_RMQ_SYS_REVIVE_GROUP`` on a revive queue is, as in Java, the ``ro`` of
the last checkpoint handled; a restart reads on from the record after it, so what was popped
before a ``kill -9`` and not acknowledged is revived, and a Java broker started on this store
(or this one on a Java broker's) reads the same records the same way.

No Trio here: :meth:`PopReviveService.revive_round` is stepped by a loop with a clock
(:mod:`broker.pop.service`) or by a test.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.controller import BrokerController
from broker.pop.records import (
    ACK_TAG,
    ACK_TIME_INTERVAL_MS,
    BATCH_ACK_TAG,
    CK_TAG,
    FIRST_POP_TIME,
    REVIVE_GROUP,
    PopConfig,
)
from broker.pop.state import PopState
from broker.pop.writer import RecordWriter
from broker.timer.service import TIMER_DELIVER_MS
from codec.bodies.pop import AckMsg, BatchAckMsg, PopCheckPoint
from codec.bodies.register import PERM_READ, PERM_WRITE
from codec.errors import CodecError
from codec.extra_info import RETRY_GROUP_TOPIC_PREFIX, build_pop_retry_topic, parse_normal_topic
from codec.message import MessageRecord, decode_record
from codec.properties import TAGS, decode_properties, encode_properties

logger = logging.getLogger(__name__)

DUE_AFTER_MS = ACK_TIME_INTERVAL_MS + 1000  # endTime past a revive time before it goes out
IDLE_MOVE_MS = 3000  # no new record this long (and the timer caught up): endTime moves to now
SCAN_BATCH = 32  # PopReviveService reads the revive queue 32 records at a time
MAX_SCAN_PER_ROUND = 4096  # records read per queue and round; the rest is read next round


def ck_key(
    topic: str, group: str, queue_id: int, start_offset: int, pop_time: int, broker_name: str | None
) -> str:
    """The merge key of ``PopReviveService`` (plain concatenation, no separators)."""
    return f"{topic}{group}{queue_id}{start_offset}{pop_time}{broker_name}"


class ReviveQueue:
    """What one revive queue has read and not yet handled."""

    __slots__ = ("end_time", "next_offset", "pending")

    def __init__(self) -> None:
        self.next_offset = -1  # -1: start from the committed offset
        self.pending: dict[str, PopCheckPoint] = {}
        self.end_time = 0  # consumeReviveMessage's endTime: the latest delivery time read, in ms


class PopReviveService:
    def __init__(
        self,
        broker: BrokerController,
        pop: PopConfig,
        writer: RecordWriter,
        state: PopState | None = None,
        timer_caught_up: Callable[[int], bool] = lambda _now_ms: True,
    ) -> None:
        """``state``: the in-flight counts a revived message no longer adds to; ``timer_caught_up``
        says whether the timer has read and delivered everything due at a time (Java's
        ``getDequeueBehind() <= 0 && getEnqueueBehind() <= 0``)."""
        self.state = state
        self.timer_caught_up = timer_caught_up
        self.broker = broker
        self.pop = pop
        self.writer = writer
        self.topic = writer.revive_topic
        self.queues = [ReviveQueue() for _ in range(pop.revive_queue_num)]
        self.revived = 0

    def ensure_topic(self) -> None:
        """The revive topic, created at start as Java's ``TopicConfigManager`` does."""
        self.broker.topics.create_if_absent(self.topic, self.pop.revive_queue_num, PERM_READ | PERM_WRITE)

    # -- consumeReviveMessage ----------------------------------------------------------------------

    def scan(self, queue_id: int, now_ms: int) -> int:
        """Read the records delivered to one revive queue since the last scan and move its
        ``endTime``; the count read."""
        rq = self.queues[queue_id]
        store = self.broker.store
        if rq.next_offset < 0:
            committed = self.broker.offsets.query(REVIVE_GROUP, self.topic, queue_id)
            rq.next_offset = max(committed + 1, store.get_min_offset_in_queue(self.topic, queue_id), 0)
        read = 0
        while read < MAX_SCAN_PER_ROUND:
            result = store.get_message(self.topic, queue_id, rq.next_offset, SCAN_BATCH)
            if not result.buffers:
                if result.next_begin_offset > rq.next_offset:
                    rq.next_offset = result.next_begin_offset
                    continue
                break
            for data, offset in zip(result.buffers, result.queue_offsets, strict=True):
                self._take(rq, data, offset)
            read += len(result.buffers)
            rq.next_offset = result.next_begin_offset
        if (
            not read
            and rq.end_time
            and now_ms - rq.end_time > IDLE_MOVE_MS
            and self.timer_caught_up(now_ms)
        ):
            rq.end_time = now_ms
        return read

    def _take(self, rq: ReviveQueue, data: bytes, offset: int) -> None:
        try:
            record = decode_record(data)
            props = decode_properties(record.properties)
            deliver = props.get(TIMER_DELIVER_MS, "")
            if deliver.isdigit():
                rq.end_time = max(rq.end_time, int(deliver))
            tag = props.get(TAGS)
            if tag == CK_TAG:
                ck = PopCheckPoint.decode(record.body)
                ck.revive_offset = offset
                key = ck_key(ck.topic, ck.group, ck.queue_id, ck.start_offset, ck.pop_time, ck.broker_name)
                rq.pending.setdefault(key, ck)
            elif tag == ACK_TAG:
                ack = AckMsg.decode(record.body)
                self._mark(self.broker.config.broker_name, rq, ack, [ack.ack_offset])
            elif tag == BATCH_ACK_TAG:
                back = BatchAckMsg.decode(record.body)
                self._mark(self.broker.config.broker_name, rq, back, back.ack_offset_list)
        except CodecError as err:
            logger.error("revive record at %s offset %d skipped: %s", self.topic, offset, err)

    @staticmethod
    def _mark(own_broker: str, rq: ReviveQueue, ack: AckMsg | BatchAckMsg, offsets: list[int]) -> None:
        """Set the bits of ``offsets`` in the pending checkpoint the ack or batch ack names."""
        name = ack.broker_name or own_broker
        ck = rq.pending.get(ck_key(ack.topic, ack.group, ack.queue_id, ack.start_offset, ack.pop_time, name))
        if ck is None:
            return
        for offset in offsets:
            index = ck.index_of_ack(offset)
            if 0 <= index < 32:
                ck.bit_map |= 1 << index

    # -- mergeAndRevive ----------------------------------------------------------------------------

    async def revive_round(self, now_ms: int) -> int:
        """Scan every revive queue, revive what is due; the number of messages put back."""
        total = 0
        for queue_id in range(len(self.queues)):
            self.scan(queue_id, now_ms)
            total += await self.revive_queue(queue_id)
        return total

    async def revive_queue(self, queue_id: int) -> int:
        rq = self.queues[queue_id]
        revived = 0
        last_done = -1
        for key, ck in sorted(rq.pending.items(), key=lambda item: item[1].revive_offset):
            if rq.end_time - ck.revive_time <= DUE_AFTER_MS:
                break
            revived += await self._revive_ck(ck)
            del rq.pending[key]
            last_done = ck.revive_offset
        if not rq.pending and rq.next_offset > 0:
            last_done = rq.next_offset - 1
        if last_done >= 0 and last_done > self.broker.offsets.query(REVIVE_GROUP, self.topic, queue_id):
            self.broker.offsets.commit(REVIVE_GROUP, self.topic, queue_id, last_done)
        self.revived += revived
        return revived

    async def _revive_ck(self, ck: PopCheckPoint) -> int:
        broker = self.broker
        if broker.topics.select(parse_normal_topic(ck.topic, ck.group)) is None:
            return 0
        if broker.groups.find(ck.group, create=False) is None:
            return 0
        count = 0
        for index in range(min(ck.num, 32)):
            if ck.bit_map >> index & 1:
                continue
            offset = ck.ack_offset_by_index(index)
            result = broker.store.get_message(ck.topic, ck.queue_id, offset, 1)
            if not result.buffers or result.queue_offsets[0] != offset:
                logger.warning(
                    "POP message %s@%d offset %d is gone; not revived", ck.topic, ck.queue_id, offset
                )
                continue
            try:
                original = decode_record(result.buffers[0])
            except CodecError as err:
                logger.error("POP message %s@%d offset %d unreadable: %s", ck.topic, ck.queue_id, offset, err)
                continue
            if await self._revive_retry(ck, original):
                count += 1
                if self.state is not None:
                    self.state.add_in_flight(ck.topic, ck.group, ck.queue_id, -1)
        return count

    async def _revive_retry(self, ck: PopCheckPoint, original: MessageRecord) -> bool:
        """``reviveRetry``: the message again, into the POP retry topic, one more reconsume time."""
        broker = self.broker
        if ck.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            topic = ck.topic
        else:
            topic = build_pop_retry_topic(ck.topic, ck.group, self.pop.enable_retry_topic_v2)
        props = decode_properties(original.properties)
        if original.reconsume_times == 0 or FIRST_POP_TIME not in props:
            props[FIRST_POP_TIME] = str(ck.pop_time)
        record = original.to_put_again(
            topic=topic,
            queue_id=0,
            properties=encode_properties(props),
            born_host=broker.store_host,
            born_port=broker.store_port,
            store_host=broker.store_host,
            store_port=broker.store_port,
            reconsume_times=original.reconsume_times + 1,
        )
        broker.topics.create_if_absent(topic, 1, PERM_READ | PERM_WRITE)
        if broker.offsets.query(ck.group, topic, 0) < 0:
            broker.offsets.commit(ck.group, topic, 0, 0)
        return await self.writer.put_record(record, props)
