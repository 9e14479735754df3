"""POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME and POLLING_INFO.

Mirrors ``PopMessageProcessor.processRequest`` (reading in :mod:`broker.pop.pop_message`),
``AckMessageProcessor``, ``ChangeInvisibleTimeProcessor`` and ``PollingInfoProcessor``. An ack writes
an ``ack`` record matching the checkpoint of its handle (``so`` and ``pt`` from the handle); the
answer is ``SUCCESS`` even when that checkpoint was revived already, as on the Java broker. A change
of invisible time writes a new one-message checkpoint starting at the message's own offset, then
acks the old handle, and answers the new ``popTime``: the client's new handle is built from it.

A garbage ``extraInfo`` is answered ``SYSTEM_ERROR`` after the topic, queue and offset checks, as
Java's broker answers the ``IllegalArgumentException`` of ``ExtraInfoUtil``.
"""

from __future__ import annotations

import logging

from broker.controller import BrokerController
from broker.pop.long_polling import POLLING_FULL, POLLING_SUSPENDED, PopPolling
from broker.pop.order_info import CONSUMER_ORDER_INFO_JSON, ConsumerOrderInfoManager
from broker.pop.orderly import ack_orderly, change_orderly
from broker.pop.pop_message import PopReader, check_pop, pop_response_fields
from broker.pop.records import PopConfig
from broker.pop.state import PopState
from broker.pop.writer import RecordWriter
from codec.bodies.pop import AckMsg, BatchAck, BatchAckMessageRequestBody, BatchAckMsg, PopCheckPoint
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.extra_info import (
    POP_ORDER_REVIVE_QUEUE,
    ExtraInfo,
    build_pop_retry_topic,
    join_entries,
    parse_extra_info,
    real_topic,
)
from codec.headers.base import EmptyHeader
from codec.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from gateway.transport.dispatch import Dispatcher, RequestContext

logger = logging.getLogger(__name__)


def _ack_of(header: AckMessageRequestHeader | ChangeInvisibleTimeRequestHeader, info: ExtraInfo) -> AckMsg:
    """The ``ack`` record of one popped offset: what ACK_MESSAGE and CHANGE_INVISIBLE_TIME write."""
    return AckMsg(
        ack_offset=header.offset,
        start_offset=info.ck_queue_offset,
        group=header.consumer_group,
        topic=header.topic,
        queue_id=header.queue_id,
        pop_time=info.pop_time,
        broker_name=info.broker_name,
    )


class PopProcessor:
    def __init__(self, broker: BrokerController, pop: PopConfig, state: PopState | None = None) -> None:
        self.broker = broker
        self.pop = pop
        self.state = state or PopState(pop.revive_queue_num)
        self.writer = RecordWriter(broker)
        self.orders = ConsumerOrderInfoManager(
            broker.now_ms, lambda: broker.store.config_files.load(CONSUMER_ORDER_INFO_JSON)
        )
        self.reader = PopReader(broker, self.state, pop, self.writer, self.orders)
        self.polling = PopPolling(broker, pop.pop_polling_size, pop.max_pop_polling_size)

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.POP_MESSAGE, self.pop_message, PopMessageRequestHeader)
        dispatcher.register(RequestCode.ACK_MESSAGE, self.ack_message, AckMessageRequestHeader)
        dispatcher.register(RequestCode.BATCH_ACK_MESSAGE, self.batch_ack_message, EmptyHeader)
        dispatcher.register(
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
            self.change_invisible_time,
            ChangeInvisibleTimeRequestHeader,
        )
        dispatcher.register(RequestCode.POLLING_INFO, self.polling_info, PollingInfoRequestHeader)

    # -- POP_MESSAGE -------------------------------------------------------------------------------

    async def pop_message(
        self, ctx: RequestContext, request: RemotingCommand, header: PopMessageRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        now = broker.now_ms()
        if not header.born_time:
            header.born_time = now
        message_filter = check_pop(broker, header, now)
        batch = await self.reader.read(header, message_filter, now)
        code = ResponseCode.SUCCESS
        if not batch.buffers:
            code = ResponseCode.POLLING_TIMEOUT
            if header.poll_time > 0 and not broker.stopping:
                outcome = await self.polling.wait(
                    header.topic,
                    header.consumer_group,
                    header.queue_id,
                    self._queues_of(header),
                    message_filter,
                    self._deadline(header, now),
                )
                ctx.suspended = outcome == POLLING_SUSPENDED
                if outcome == POLLING_FULL:
                    code = ResponseCode.POLLING_FULL
                else:
                    batch = await self.reader.read(header, message_filter, broker.now_ms())
                    if batch.buffers:
                        code = ResponseCode.SUCCESS
        start, msgs = pop_response_fields(batch)
        response_header = PopMessageResponseHeader(
            pop_time=batch.pop_time,
            invisible_time=header.invisible_time,
            revive_qid=batch.revive_qid,
            rest_num=batch.rest_num,
            start_offset_info=start,
            msg_offset_info=msgs,
            order_count_info=join_entries(batch.order_entries) if header.is_order() else None,
        )
        remark = "FOUND" if batch.buffers else "NO_MESSAGE_IN_QUEUE"
        return request.make_response(code, remark, header=response_header, body=b"".join(batch.buffers))

    def _deadline(self, header: PopMessageRequestHeader, now: int) -> int:
        """The poll time's end; for an orderly pop no later than a blocked queue frees up
        (``ConsumerOrderInfoLockManager`` wakes the request then)."""
        deadline = (header.born_time or now) + header.poll_time
        if header.is_order():
            topic = self.broker.topics.select(header.topic)
            queue_ids = (
                [header.queue_id] if header.queue_id >= 0 else range(topic.read_queue_nums if topic else 0)
            )
            for queue_id in queue_ids:
                free_at = self.orders.unblock_time(header.topic, header.consumer_group, queue_id)
                if free_at > now:
                    deadline = min(deadline, free_at + 1)
        return deadline

    def _queues_of(self, header: PopMessageRequestHeader) -> list[tuple[str, int]]:
        topics = self.broker.topics
        queues: list[tuple[str, int]] = []
        topic = topics.select(header.topic)
        if header.queue_id >= 0:
            queues.append((header.topic, header.queue_id))
        elif topic is not None:
            queues.extend((header.topic, q) for q in range(topic.read_queue_nums))
        v2 = self.pop.enable_retry_topic_v2
        names = {build_pop_retry_topic(header.topic, header.consumer_group, v2)}
        if v2 and self.pop.retrieve_message_from_pop_retry_topic_v1:
            names.add(build_pop_retry_topic(header.topic, header.consumer_group))
        for name in sorted(names):
            retry = topics.select(name)
            if retry is not None:
                queues.extend((name, q) for q in range(retry.read_queue_nums))
        return queues

    # -- ACK_MESSAGE / BATCH_ACK_MESSAGE -----------------------------------------------------------

    def _revive_queue_ok(self, revive_qid: int) -> bool:
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

    async def ack_message(
        self, ctx: RequestContext, request: RemotingCommand, header: AckMessageRequestHeader
    ) -> RemotingCommand:
        self._check_queue_offset(header.topic, header.queue_id, header.offset, inclusive_max=True)
        info = parse_extra_info(header.extra_info)
        if info.is_order():
            ack_orderly(
                self.broker,
                self.orders,
                self.polling.wake,
                header.topic,
                header.consumer_group,
                header.queue_id,
                header.offset,
                info,
            )
            self.state.add_in_flight(header.topic, header.consumer_group, header.queue_id, -1)
            return request.make_response(ResponseCode.SUCCESS)
        ack = _ack_of(header, info)
        if self._revive_queue_ok(info.revive_qid):
            await self.writer.put_ack(ack, info.revive_qid, info.invisible_time)
        self.state.add_in_flight(header.topic, header.consumer_group, header.queue_id, -1)
        return request.make_response(ResponseCode.SUCCESS)

    async def batch_ack_message(
        self, ctx: RequestContext, request: RemotingCommand, _header: EmptyHeader
    ) -> RemotingCommand:
        body = BatchAckMessageRequestBody.decode(request.body) if request.body else None
        if body is None or not body.acks:
            return request.make_response(ResponseCode.NO_MESSAGE)
        store = self.broker.store
        code: int = ResponseCode.SUCCESS
        for entry in body.acks:
            topic = real_topic(entry.topic, entry.group, entry.retry)
            if self.broker.topics.select(topic) is None:
                continue
            low = store.get_min_offset_in_queue(topic, entry.queue_id)
            high = store.get_max_offset_in_queue(topic, entry.queue_id)
            if low < 0 or high < 0:
                continue
            offsets = [entry.start_offset + i for i in entry.bits if low <= entry.start_offset + i <= high]
            if entry.revive_queue_id == POP_ORDER_REVIVE_QUEUE:
                code = self._batch_ack_orderly(topic, entry, offsets) or code
                continue
            if not offsets:
                continue
            ack = BatchAckMsg(
                ack_offset_list=offsets,
                start_offset=entry.start_offset,
                group=entry.group,
                topic=topic,
                queue_id=entry.queue_id,
                pop_time=entry.pop_time,
                broker_name=body.broker_name,
            )
            if self._revive_queue_ok(entry.revive_queue_id):
                await self.writer.put_ack(ack, entry.revive_queue_id, entry.invisible_time)
            self.state.add_in_flight(topic, entry.group, entry.queue_id, -len(offsets))
        return request.make_response(code)

    def _batch_ack_orderly(self, topic: str, entry: BatchAck, offsets: list[int]) -> int:
        """Each offset acked on its own (``ackOrderly``); MESSAGE_ILLEGAL if one was refused, else 0."""
        info = ExtraInfo(
            entry.start_offset,
            entry.pop_time,
            entry.invisible_time,
            POP_ORDER_REVIVE_QUEUE,
            entry.retry,
            "",
            entry.queue_id,
            None,
        )
        code = 0
        for offset in offsets:
            try:
                ack_orderly(
                    self.broker,
                    self.orders,
                    self.polling.wake,
                    topic,
                    entry.group,
                    entry.queue_id,
                    offset,
                    info,
                )
            except RocketMQError as err:
                code = err.response_code
        return code

    # -- CHANGE_MESSAGE_INVISIBLETIME --------------------------------------------------------------

    async def change_invisible_time(
        self, ctx: RequestContext, request: RemotingCommand, header: ChangeInvisibleTimeRequestHeader
    ) -> RemotingCommand:
        self._check_queue_offset(header.topic, header.queue_id, header.offset, inclusive_max=False)
        info = parse_extra_info(header.extra_info)
        if info.is_order():
            response_header = change_orderly(
                self.broker,
                self.orders,
                header.topic,
                header.consumer_group,
                header.queue_id,
                header.offset,
                info,
                header.invisible_time,
            )
            return request.make_response(ResponseCode.SUCCESS, header=response_header)
        now = self.broker.now_ms()
        ck = PopCheckPoint(
            start_offset=header.offset,
            pop_time=now,
            invisible_time=header.invisible_time,
            num=1,
            queue_id=header.queue_id,
            topic=header.topic,
            group=header.consumer_group,
            broker_name=info.broker_name,
            queue_offset_diff=[0],
        )
        if not self._revive_queue_ok(info.revive_qid):
            # Java writes both records into a revive queue no reviver reads: nothing happens.
            return request.make_response(
                ResponseCode.SUCCESS,
                header=ChangeInvisibleTimeResponseHeader(now, header.invisible_time, info.revive_qid),
            )
        if not await self.writer.put_ck(ck, info.revive_qid):
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, "change invisible time failed, put ck error"
            )
        ack = _ack_of(header, info)
        await self.writer.put_ack(ack, info.revive_qid, info.invisible_time)
        response_header = ChangeInvisibleTimeResponseHeader(now, header.invisible_time, info.revive_qid)
        return request.make_response(ResponseCode.SUCCESS, header=response_header)

    # -- POLLING_INFO ------------------------------------------------------------------------------

    def polling_info(
        self, ctx: RequestContext, request: RemotingCommand, header: PollingInfoRequestHeader
    ) -> RemotingCommand:
        topic = self.broker.topics.select(header.topic)
        if topic is None:
            raise RocketMQError(
                f"topic[{header.topic}] not exist, apply first please!",
                response_code=ResponseCode.TOPIC_NOT_EXIST,
            )
        if header.queue_id >= topic.read_queue_nums:
            raise RocketMQError(
                f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] "
                f"topicConfig.readQueueNums:[{topic.read_queue_nums}]",
                response_code=ResponseCode.INVALID_PARAMETER,
            )
        if self.broker.groups.find(header.consumer_group) is None:
            raise RocketMQError(
                f"subscription group [{header.consumer_group}] does not exist",
                response_code=ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            )
        num = self.polling.polling_num(header.topic, header.consumer_group, header.queue_id)
        return request.make_response(ResponseCode.SUCCESS, header=PollingInfoResponseHeader(num))
