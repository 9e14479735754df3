"""Consuming by POP: pop, ack and change of invisible time, typed (``PopMessageProcessor``,
``AckMessageProcessor``, ``ChangeInvisibleTimeProcessor``).

Both front doors adapt onto :class:`ConsumeService`: POP_MESSAGE, ACK_MESSAGE and
CHANGE_MESSAGE_INVISIBLETIME (:mod:`broker.processors.pop`), and gRPC's ReceiveMessage, AckMessage
and ChangeInvisibleDuration (:mod:`broker.grpc.consumer`), so a gRPC consumer and a remoting POP
consumer of one group share every offset, checkpoint and orderly lock. The service owns the POP
state: the in-flight counts, the checkpoint writer, the orderly bookkeeping, the reader and the
long polling (the revive loop and NOTIFICATION share them).

A pop reads up to ``max_msg_nums`` records (reading in :mod:`broker.pop.pop_message`), long-polls
for ``poll_time`` when it found none, and answers the batch with the code the remoting answer
carries: SUCCESS, POLLING_TIMEOUT (nothing found) or POLLING_FULL. An ack writes an ``ack`` record
matching the checkpoint of its handle (``so`` and ``pt`` from the handle); it succeeds even when
that checkpoint was revived already, as on the Java broker. A change of invisible time writes a new
one-message checkpoint starting at the message's own offset, then acks the old handle, and answers
the new ``popTime``: the client's new handle is built from it. A refusal raises
:class:`RocketMQError` with Java's code and remark; a garbage handle (``extraInfo``) is refused
SYSTEM_ERROR after the topic, queue and offset checks, as Java's broker answers the
``IllegalArgumentException`` of ``ExtraInfoUtil``.
"""

from __future__ import annotations

import logging

from broker.config_tables import ConfigTable
from broker.controller import BrokerController
from broker.pop.long_polling import POLLING_FULL, POLLING_SUSPENDED, PopPolling
from broker.pop.order_info import CONSUMER_ORDER_INFO_JSON, ConsumerOrderInfoManager
from broker.pop.orderly import ack_orderly, change_orderly
from broker.pop.pop_message import PopBatch, PopReader, PopRequest, check_pop
from broker.pop.records import PopConfig
from broker.pop.state import PopState
from broker.pop.writer import RecordWriter
from codec.bodies.pop import AckMsg, PopCheckPoint
from codec.codes import ResponseCode
from codec.errors import RocketMQError
from codec.extra_info import ExtraInfo, build_pop_retry_topic, parse_extra_info

logger = logging.getLogger(__name__)


class PopOutcome:
    """What a pop collected: ``code`` is SUCCESS, POLLING_TIMEOUT (nothing found) or POLLING_FULL;
    ``batch`` the records and their offset infos; ``suspended``: the request waited in the long
    polling and was woken (not timed out)."""

    __slots__ = ("batch", "code", "suspended")

    def __init__(self, code: int, batch: PopBatch, suspended: bool) -> None:
        self.code = code
        self.batch = batch
        self.suspended = suspended


class AckRequest:
    """One popped message to acknowledge: its group, topic (the real one: a retry topic for a
    retried message), queue, queue offset and handle (``extraInfo``)."""

    __slots__ = ("extra_info", "group", "offset", "queue_id", "topic")

    def __init__(self, group: str, topic: str, queue_id: int, extra_info: str, offset: int) -> None:
        self.group = group
        self.topic = topic
        self.queue_id = queue_id
        self.extra_info = extra_info
        self.offset = offset


class ChangeInvisibleOutcome:
    """The new checkpoint's pop time, invisible time and revive queue (all zero when an orderly
    message was consumed already)."""

    __slots__ = ("invisible_time", "pop_time", "revive_qid")

    def __init__(self, pop_time: int, invisible_time: int, revive_qid: int) -> None:
        self.pop_time = pop_time
        self.invisible_time = invisible_time
        self.revive_qid = revive_qid


def _ack_of(request: AckRequest, info: ExtraInfo) -> AckMsg:
    """The ``ack`` record of one popped offset: what an ack and a change of invisible time write."""
    return AckMsg(
        ack_offset=request.offset,
        start_offset=info.ck_queue_offset,
        group=request.group,
        topic=request.topic,
        queue_id=request.queue_id,
        pop_time=info.pop_time,
        broker_name=info.broker_name,
    )


def order_info_table(broker: BrokerController, orders: ConsumerOrderInfoManager) -> ConfigTable:
    """``consumerOrderInfo.json``: written when changed (each revive round and the offsets'
    period, as ``ConsumerOrderInfoManager.persist``), without the entries of topics, queues or
    groups that are gone; a malformed file is logged and the table starts empty."""

    def exists(topic: str, group: str, queue_id: int) -> bool:
        config = broker.topics.select(topic)
        found = config is not None and queue_id < config.read_queue_nums
        return found and broker.groups.find(group, create=False) is not None

    return ConfigTable(
        CONSUMER_ORDER_INFO_JSON, lambda: orders.to_obj(exists), orders.load_obj, strict=False, source=orders
    )


class ConsumeService:
    """See the module docstring."""

    def __init__(self, broker: BrokerController, pop: PopConfig, state: PopState | None = None) -> None:
        self.broker = broker
        self.pop = pop
        self.state = state or PopState(pop.revive_queue_num)
        self.writer = RecordWriter(broker)
        tables = broker.tables
        self.orders = ConsumerOrderInfoManager(broker.now_ms, lambda: tables.load(CONSUMER_ORDER_INFO_JSON))
        tables.register(order_info_table(broker, self.orders))
        self.reader = PopReader(broker, self.state, pop, self.writer, self.orders)
        self.polling = PopPolling(broker, pop.pop_polling_size, pop.max_pop_polling_size)

    # -- pop ---------------------------------------------------------------------------------------

    async def pop_message(self, request: PopRequest, now_ms: int | None = None) -> PopOutcome:
        """Read, long-poll when nothing was found; raises :class:`RocketMQError` for a refused pop.
        ``now_ms``: the pop time to use (the lite pop gives all the queues of one answer one)."""
        broker = self.broker
        now = broker.now_ms() if now_ms is None else now_ms
        if not request.born_time:
            request.born_time = now
        message_filter = check_pop(broker, request, now)
        batch = await self.reader.read(request, message_filter, now)
        code = ResponseCode.SUCCESS
        suspended = False
        if not batch.buffers:
            code = ResponseCode.POLLING_TIMEOUT
            if request.poll_time > 0 and not broker.stopping:
                outcome = await self.polling.wait(
                    request.topic,
                    request.consumer_group,
                    request.queue_id,
                    self._queues_of(request),
                    message_filter,
                    self._deadline(request, now),
                )
                suspended = outcome == POLLING_SUSPENDED
                if outcome == POLLING_FULL:
                    code = ResponseCode.POLLING_FULL
                else:
                    batch = await self.reader.read(request, message_filter, broker.now_ms())
                    if batch.buffers:
                        code = ResponseCode.SUCCESS
        return PopOutcome(code, batch, suspended)

    def _deadline(self, request: PopRequest, now: int) -> int:
        """The poll time's end; for an orderly pop no later than a blocked queue frees up
        (``ConsumerOrderInfoLockManager`` wakes the request then)."""
        deadline = (request.born_time or now) + request.poll_time
        if request.is_order():
            topic = self.broker.topics.select(request.topic)
            queue_ids = (
                [request.queue_id] if request.queue_id >= 0 else range(topic.read_queue_nums if topic else 0)
            )
            for queue_id in queue_ids:
                free_at = self.orders.unblock_time(request.topic, request.consumer_group, queue_id)
                if free_at > now:
                    deadline = min(deadline, free_at + 1)
        return deadline

    def _queues_of(self, request: PopRequest) -> list[tuple[str, int]]:
        topics = self.broker.topics
        queues: list[tuple[str, int]] = []
        topic = topics.select(request.topic)
        if request.queue_id >= 0:
            queues.append((request.topic, request.queue_id))
        elif topic is not None:
            queues.extend((request.topic, q) for q in range(topic.read_queue_nums))
        v2 = self.pop.enable_retry_topic_v2
        names = {build_pop_retry_topic(request.topic, request.consumer_group, v2)}
        if v2 and self.pop.retrieve_message_from_pop_retry_topic_v1:
            names.add(build_pop_retry_topic(request.topic, request.consumer_group))
        for name in sorted(names):
            retry = topics.select(name)
            if retry is not None:
                queues.extend((name, q) for q in range(retry.read_queue_nums))
        return queues

    # -- ack ---------------------------------------------------------------------------------------

    def revive_queue_ok(self, revive_qid: int) -> bool:
        """A handle's revive queue outside ``0..reviveQueueNum-1``: Java puts the record into that queue
        of the revive topic, where no reviver ever reads it (its revive threads read the configured
        queues). The answer is the same; here nothing is written, so a hostile handle cannot make
        the store create consume queues for any int."""
        if 0 <= revive_qid < self.pop.revive_queue_num:
            return True
        logger.debug(
            "POP handle with revive queue %d outside 0..%d: nothing written",
            revive_qid,
            self.pop.revive_queue_num - 1,
        )
        return False

    def _check_queue_offset(self, topic: str, queue_id: int, offset: int, *, inclusive_max: bool) -> None:
        config = self.broker.topics.select(topic)
        if config is None:
            raise RocketMQError(
                f"topic[{topic}] not exist, apply first please!", response_code=ResponseCode.TOPIC_NOT_EXIST
            )
        if queue_id < 0 or queue_id >= config.read_queue_nums:
            raise RocketMQError(
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{config.read_queue_nums}]",
                response_code=ResponseCode.MESSAGE_ILLEGAL,
            )
        store = self.broker.store
        low = store.get_min_offset_in_queue(topic, queue_id)
        high = store.get_max_offset_in_queue(topic, queue_id)
        if offset < low or offset > high or (not inclusive_max and offset == high):
            raise RocketMQError(
                f"offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{low}~{high}",
                response_code=ResponseCode.NO_MESSAGE,
            )

    async def ack_message(self, request: AckRequest) -> None:
        """Acknowledge one popped message; raises :class:`RocketMQError` for a refused ack."""
        self._check_queue_offset(request.topic, request.queue_id, request.offset, inclusive_max=True)
        info = parse_extra_info(request.extra_info)
        if info.is_order():
            ack_orderly(
                self.broker,
                self.orders,
                self.polling.wake,
                request.topic,
                request.group,
                request.queue_id,
                request.offset,
                info,
            )
            self.state.add_in_flight(request.topic, request.group, request.queue_id, -1)
            return
        ack = _ack_of(request, info)
        if self.revive_queue_ok(info.revive_qid):
            await self.writer.put_ack(ack, info.revive_qid, info.invisible_time)
        self.state.add_in_flight(request.topic, request.group, request.queue_id, -1)

    # -- change of invisible time ------------------------------------------------------------------

    async def change_invisible_time(self, request: AckRequest, invisible_time: int) -> ChangeInvisibleOutcome:
        """Make the message of ``request``'s handle visible again ``invisible_time`` ms from now;
        raises :class:`RocketMQError` for a refused change."""
        self._check_queue_offset(request.topic, request.queue_id, request.offset, inclusive_max=False)
        info = parse_extra_info(request.extra_info)
        if info.is_order():
            changed = change_orderly(
                self.broker,
                self.orders,
                request.topic,
                request.group,
                request.queue_id,
                request.offset,
                info,
                invisible_time,
            )
            return ChangeInvisibleOutcome(changed.pop_time, changed.invisible_time, changed.revive_qid)
        now = self.broker.now_ms()
        ck = PopCheckPoint(
            start_offset=request.offset,
            pop_time=now,
            invisible_time=invisible_time,
            num=1,
            queue_id=request.queue_id,
            topic=request.topic,
            group=request.group,
            broker_name=info.broker_name,
            queue_offset_diff=[0],
        )
        if not self.revive_queue_ok(info.revive_qid):
            # Java writes both records into a revive queue no reviver reads: nothing happens.
            return ChangeInvisibleOutcome(now, invisible_time, info.revive_qid)
        if not await self.writer.put_ck(ck, info.revive_qid):
            raise RocketMQError(
                "change invisible time failed, put ck error", response_code=ResponseCode.SYSTEM_ERROR
            )
        await self.writer.put_ack(_ack_of(request, info), info.revive_qid, info.invisible_time)
        return ChangeInvisibleOutcome(now, invisible_time, info.revive_qid)
