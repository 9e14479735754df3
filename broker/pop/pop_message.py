"""POP_MESSAGE (200050): hand out messages that stay invisible until acked (``PopMessageProcessor``).

A request reads, in Java's order: the group's POP retry topic first with probability
``popFromRetryProbability`` (20 %), the topic (every readable queue from a random one when
``queueId`` is -1, else that queue), then the retry topic if the batch is not full and it was not
read first. The walk over the queues goes upward as 5.3.3's, or downward under
``brokerVersion=5.5.0`` (:mod:`broker.followed_version`). A priority topic's POP reads its queues
from the highest id down instead (:mod:`broker.priority`). Per queue (``popMsgFromQueue``): skip it when its
``topic@group@queueId`` lock is held, take the start offset (committed consumer offset, else the
init offset of ``initMode``, at least the offset after the last popped batch), read through the
store's filtered read, write the checkpoint to the revive topic *before* the messages leave, and
move the consumer offset past the batch (what ``PopBufferMergeService`` does for each stored
checkpoint). Retry-topic records are re-encoded
under the normal topic with their ``POP_CK`` property; normal records go out as stored.

Orderly pops (``order=true``, revive queue 999) never read the retry topic and write no
checkpoint: a queue whose last batch is not acked and still invisible is skipped
(:mod:`broker.pop.order_info`), a read batch is remembered there and the consumer offset stays at
the batch's start until acks move it.

Nothing found: with ``pollTime > 0`` the request waits (:mod:`broker.pop.long_polling`) and is run
once more, else ``POLLING_TIMEOUT``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from broker.controller import BrokerController
from broker.pop.order_info import ConsumerOrderInfoManager
from broker.pop.pop_filter import pop_message_filter
from broker.pop.records import MAX_BATCH_NUMS, PopConfig
from broker.pop.state import PopState
from broker.pop.writer import RecordWriter
from broker.priority import is_priority_topic, priority_factor, priority_queue_order
from codec.bodies.heartbeat import EXPRESSION_TAG
from codec.bodies.pop import PopCheckPoint
from codec.bodies.register import PERM_READ
from codec.codes import ResponseCode
from codec.errors import CodecError, RocketMQError
from codec.extra_info import (
    build_extra_info,
    build_pop_retry_topic,
    join_entries,
    msg_offset_entry,
    polling_key,
    start_offset_entry,
)
from codec.headers.pop import CONSUME_INIT_MODE_MIN, TIMEOUT_TOO_MUCH_MS
from codec.message import decode_record, encode_record
from codec.properties import POP_CK, decode_properties, encode_properties
from store.message_filter import MessageFilter
from store.results import GetMessageStatus

logger = logging.getLogger(__name__)

MAX_POP_BYTES = 128 * 1024 * 1024
PRIORITY_ORDER = -1  # in place of the random start: read the queues from the highest id down
_RESET_STATUSES = (
    GetMessageStatus.OFFSET_TOO_SMALL,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY,
    GetMessageStatus.OFFSET_FOUND_NULL,
)
_SKIPPED_STATUSES = (
    GetMessageStatus.NO_MATCHED_MESSAGE,
    GetMessageStatus.OFFSET_FOUND_NULL,
    GetMessageStatus.MESSAGE_WAS_REMOVING,
    GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
)


class PopRequest:
    """A pop, typed (the fields of ``PopMessageRequestHeader``): up to ``max_msg_nums`` messages of
    ``topic`` (queue ``queue_id``, -1: any) for ``consumer_group``, invisible for
    ``invisible_time`` ms, waiting up to ``poll_time`` ms from ``born_time`` (None or 0: now) when
    there are none; ``init_mode`` the start of a group without an offset; ``exp_type`` and ``exp``
    the filter; ``order`` an orderly pop, ``attempt_id`` its retry of an earlier one."""

    __slots__ = (
        "attempt_id",
        "born_time",
        "consumer_group",
        "exp",
        "exp_type",
        "init_mode",
        "invisible_time",
        "max_msg_nums",
        "order",
        "poll_time",
        "queue_id",
        "topic",
    )

    def __init__(
        self,
        *,
        consumer_group: str,
        topic: str,
        queue_id: int,
        max_msg_nums: int,
        invisible_time: int,
        poll_time: int,
        init_mode: int,
        born_time: int | None = None,
        exp_type: str | None = None,
        exp: str | None = None,
        order: bool | None = None,
        attempt_id: str | None = None,
    ) -> None:
        self.consumer_group = consumer_group
        self.topic = topic
        self.queue_id = queue_id
        self.max_msg_nums = max_msg_nums
        self.invisible_time = invisible_time
        self.poll_time = poll_time
        self.init_mode = init_mode
        self.born_time = born_time
        self.exp_type = exp_type
        self.exp = exp
        self.order = order
        self.attempt_id = attempt_id

    def is_order(self) -> bool:
        return bool(self.order)

    def is_timeout_too_much(self, now_ms: int) -> bool:
        """``isTimeoutTooMuch``: the request spent its poll time before it reached us."""
        born = self.born_time or now_ms
        return now_ms - born - self.poll_time > TIMEOUT_TOO_MUCH_MS


@dataclass
class PopBatch:
    """What one POP request collected (``GetMessageResult`` plus the offset-info builders)."""

    pop_time: int
    revive_qid: int
    buffers: list[bytes] = field(default_factory=list)
    start_entries: list[str] = field(default_factory=list)
    msg_entries: list[str] = field(default_factory=list)
    order_entries: list[str] = field(default_factory=list)
    rest_num: int = 0


def check_queue_and_group(broker: BrokerController, topic_name: str, queue_id: int, group_name: str) -> None:
    """The topic, queue and group checks POP and NOTIFICATION share (same codes and remarks in Java)."""
    topic = broker.topics.select(topic_name)
    if topic is None:
        raise RocketMQError(
            f"topic[{topic_name}] not exist, apply first please!",
            response_code=ResponseCode.TOPIC_NOT_EXIST,
        )
    if not topic.perm & PERM_READ:
        raise RocketMQError(
            f"the topic[{topic_name}] peeking message is forbidden",
            response_code=ResponseCode.NO_PERMISSION,
        )
    if queue_id >= topic.read_queue_nums:
        raise RocketMQError(
            f"queueId[{queue_id}] is illegal, topic:[{topic_name}] "
            f"topicConfig.readQueueNums:[{topic.read_queue_nums}]",
            response_code=ResponseCode.INVALID_PARAMETER,
        )
    group = broker.groups.find(group_name)
    if group is None:
        raise RocketMQError(
            f"subscription group [{group_name}] does not exist",
            response_code=ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
        )
    if not group.consume_enable:
        raise RocketMQError(
            f"subscription group no permission, {group_name}",
            response_code=ResponseCode.NO_PERMISSION,
        )


def check_pop(broker: BrokerController, header: PopRequest, now_ms: int) -> MessageFilter | None:
    """The checks of ``processRequest`` in Java's order; raises RocketMQError with Java's code."""
    config = broker.config
    if header.is_timeout_too_much(now_ms):
        raise RocketMQError(
            f"the broker[{config.broker_ip1}] pop message is timeout too much",
            response_code=ResponseCode.POLLING_TIMEOUT,
        )
    if not config.broker_permission & PERM_READ:
        raise RocketMQError(
            f"the broker[{config.broker_ip1}] pop message is forbidden",
            response_code=ResponseCode.NO_PERMISSION,
        )
    if header.max_msg_nums > MAX_BATCH_NUMS:
        raise RocketMQError(
            f"the broker[{config.broker_ip1}] pop message's num is greater than 32",
            response_code=ResponseCode.INVALID_PARAMETER,
        )
    if not config.timer_wheel_enable:
        raise RocketMQError(
            f"the broker[{config.broker_ip1}] pop message is forbidden because timerWheelEnable is false",
            response_code=ResponseCode.SYSTEM_ERROR,
        )
    check_queue_and_group(broker, header.topic, header.queue_id, header.consumer_group)
    return pop_message_filter(
        header.topic, header.consumer_group, header.exp, header.exp_type or EXPRESSION_TAG, now_ms
    )


class PopReader:
    """One POP request's reading (``popMsgFromTopic``/``popMsgFromQueue``); see the module docstring."""

    def __init__(
        self,
        broker: BrokerController,
        state: PopState,
        pop: PopConfig,
        writer: RecordWriter,
        orders: ConsumerOrderInfoManager,
    ) -> None:
        self.broker = broker
        self.state = state
        self.pop = pop
        self.writer = writer
        self.orders = orders

    async def read(self, header: PopRequest, message_filter: MessageFilter | None, now_ms: int) -> PopBatch:
        state, pop = self.state, self.pop
        random_q = state.random_percent()
        order = header.is_order()
        batch = PopBatch(pop_time=now_ms, revive_qid=state.next_revive_qid(order))
        priority = not order and self._priority_mode(header, random_q)
        need_retry = random_q < (
            pop.pop_from_retry_probability_for_priority if priority else pop.pop_from_retry_probability
        )
        v1 = pop.enable_retry_topic_v2 and pop.retrieve_message_from_pop_retry_topic_v1 and random_q % 2 == 0
        random_q = PRIORITY_ORDER if priority else random_q
        retry_topic = build_pop_retry_topic(
            header.topic, header.consumer_group, pop.enable_retry_topic_v2 and not v1
        )
        if need_retry and not order:
            await self._read_topic(retry_topic, True, header, message_filter, batch, random_q)
        if header.queue_id < 0:
            await self._read_topic(header.topic, False, header, message_filter, batch, random_q)
        else:
            await self._read_queue(header.topic, False, header.queue_id, header, message_filter, batch)
        if not need_retry and not order and len(batch.buffers) < header.max_msg_nums:
            await self._read_topic(retry_topic, True, header, message_filter, batch, random_q)
        return batch

    async def _read_topic(
        self,
        topic: str,
        is_retry: bool,
        header: PopRequest,
        message_filter: MessageFilter | None,
        batch: PopBatch,
        random_q: int,
    ) -> None:
        config = self.broker.topics.select(topic)
        if config is None or config.read_queue_nums <= 0:
            return
        count = config.read_queue_nums
        if random_q == PRIORITY_ORDER:
            queues = priority_queue_order(count)
        else:
            queues = self.broker.config.followed.pop_queue_order(count, random_q)
        for queue_id in queues:
            await self._read_queue(topic, is_retry, queue_id, header, message_filter, batch)

    def _priority_mode(self, header: PopRequest, random_q: int) -> bool:
        """Whether a non-orderly POP reads a priority topic highest queue first
        (:mod:`broker.priority`)."""
        topic = self.broker.topics.select(header.topic)
        if topic is None or not is_priority_topic(topic.attributes):
            return False
        group = self.broker.groups.find(header.consumer_group, create=False)
        return random_q < priority_factor(group.attributes if group is not None else {})

    def pop_offset(
        self, topic: str, group: str, queue_id: int, init_mode: int, lock_key: str, init: bool = True
    ) -> int:
        """``getPopOffset``; ``init``: commit the initial offset of a group that has none."""
        broker = self.broker
        offset = broker.offsets.query(group, topic, queue_id)
        if offset < 0:
            store = broker.store
            if init_mode == CONSUME_INIT_MODE_MIN or topic.startswith("%RETRY%"):
                offset = store.get_min_offset_in_queue(topic, queue_id)
            elif (
                self.pop.init_pop_offset_by_check_msg_in_mem
                and store.get_min_offset_in_queue(topic, queue_id) <= 0
                and broker.first_message_in_memory(topic, queue_id)
            ):
                offset = 0
            else:
                offset = max(store.get_max_offset_in_queue(topic, queue_id) - 1, 0)
            if init:
                broker.offsets.commit(group, topic, queue_id, offset)
        return max(offset, self.state.latest_offset(lock_key))

    async def _read_queue(
        self,
        topic: str,
        is_retry: bool,
        queue_id: int,
        header: PopRequest,
        message_filter: MessageFilter | None,
        batch: PopBatch,
    ) -> None:
        broker, state, group = self.broker, self.state, header.consumer_group
        store = broker.store
        lock_key = polling_key(topic, group, queue_id)
        order = header.is_order()
        if not state.try_lock(lock_key):
            if not order:
                offset = self.pop_offset(topic, group, queue_id, header.init_mode, lock_key, init=False)
                batch.rest_num += store.get_max_offset_in_queue(topic, queue_id) - offset
            return
        try:
            offset = self.pop_offset(topic, group, queue_id, header.init_mode, lock_key)
            if order:
                if self.orders.check_block(header.attempt_id, topic, group, queue_id, header.invisible_time):
                    return
                state.add_in_flight(topic, group, queue_id, -state.in_flight(topic, group, queue_id))
            wanted = header.max_msg_nums - len(batch.buffers)
            if wanted <= 0 or (
                self.pop.enable_pop_message_threshold
                and state.in_flight(topic, group, queue_id) > self.pop.pop_inflight_message_threshold
            ):
                batch.rest_num += store.get_max_offset_in_queue(topic, queue_id) - offset
                return
            result = store.get_message(topic, queue_id, offset, wanted, MAX_POP_BYTES, message_filter)
            if result.status in _RESET_STATUSES:
                broker.offsets.commit(group, topic, queue_id, result.next_begin_offset)
                offset = result.next_begin_offset
                result = store.get_message(topic, queue_id, offset, wanted, MAX_POP_BYTES, message_filter)
            if result.buffers and order:
                batch.order_entries.extend(
                    self.orders.update(
                        header.attempt_id,
                        topic,
                        group,
                        queue_id,
                        batch.pop_time,
                        header.invisible_time,
                        result.queue_offsets,
                    )
                )
                broker.offsets.commit(group, topic, queue_id, offset)
                state.add_in_flight(topic, group, queue_id, len(result.buffers))
                batch.start_entries.append(start_offset_entry(topic, queue_id, offset))
                batch.msg_entries.append(msg_offset_entry(topic, queue_id, result.queue_offsets))
            elif result.buffers:
                ck = PopCheckPoint(
                    start_offset=offset,
                    pop_time=batch.pop_time,
                    invisible_time=header.invisible_time,
                    num=len(result.buffers),
                    queue_id=queue_id,
                    topic=topic,
                    group=group,
                    broker_name=broker.config.broker_name,
                    queue_offset_diff=[o - offset for o in result.queue_offsets],
                )
                if not await self.writer.put_ck(ck, batch.revive_qid):
                    batch.rest_num += result.max_offset - result.next_begin_offset + len(result.buffers)
                    return
                broker.offsets.commit(group, topic, queue_id, result.next_begin_offset)
                state.set_latest_offset(lock_key, result.next_begin_offset)
                state.add_in_flight(topic, group, queue_id, len(result.buffers))
                batch.start_entries.append(start_offset_entry(topic, queue_id, offset))
                batch.msg_entries.append(msg_offset_entry(topic, queue_id, result.queue_offsets))
            elif result.status in _SKIPPED_STATUSES and result.next_begin_offset > -1:
                broker.offsets.commit(group, topic, queue_id, result.next_begin_offset)
                if not order:
                    state.set_latest_offset(lock_key, result.next_begin_offset)
            batch.rest_num += result.max_offset - result.next_begin_offset
            for data in result.buffers:
                batch.buffers.append(self._retry_as_normal(data, header, batch, offset) if is_retry else data)
        finally:
            state.unlock(lock_key)

    def _retry_as_normal(self, data: bytes, header: PopRequest, batch: PopBatch, start: int) -> bytes:
        """A retry-topic record as Java returns it: ``POP_CK`` set, the normal topic in place."""
        try:
            record = decode_record(data)
            props = decode_properties(record.properties)
            if POP_CK not in props:
                props[POP_CK] = build_extra_info(
                    start,
                    batch.pop_time,
                    header.invisible_time,
                    batch.revive_qid,
                    record.topic,
                    self.broker.config.broker_name,
                    record.queue_id,
                    record.queue_offset,
                )
            record.properties = encode_properties(props)
            record.topic = header.topic
            return encode_record(record)
        except CodecError as err:
            logger.error("retry record of %s could not be re-encoded, sent as stored: %s", header.topic, err)
            return data


def pop_response_fields(batch: PopBatch) -> tuple[str, str]:
    """``startOffsetInfo`` and ``msgOffsetInfo``: Java sends them even empty."""
    return join_entries(batch.start_entries), join_entries(batch.msg_entries)
