"""POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME and POLLING_INFO.

An ACK_MESSAGE or CHANGE_MESSAGE_INVISIBLETIME naming a ``liteTopic`` (5.5: a cluster-mode Proxy's
lite consumer) reaches that lite topic's LMQ queue (:func:`broker.service.lite_pop.lite_ack_queue`).

The remoting door of the consume service (:mod:`broker.service.consume`, which mirrors
``PopMessageProcessor``, ``AckMessageProcessor`` and ``ChangeInvisibleTimeProcessor``): each header
becomes the service's typed request and its outcome the response. BATCH_ACK_MESSAGE (a remoting
client's batch of acks in a body) and POLLING_INFO (``PollingInfoProcessor``) are answered here
from the service's state. The POP state is the service's; its parts are reachable here too
(``state``, ``writer``, ``orders``, ``reader``, ``polling``) for the revive loop and NOTIFICATION.
"""

from __future__ import annotations

import logging

from broker.controller import BrokerController
from broker.pop.orderly import ack_orderly
from broker.pop.pop_message import PopRequest, pop_response_fields
from broker.pop.records import PopConfig
from broker.pop.state import PopState
from broker.service.consume import AckRequest, ConsumeService
from broker.service.lite_pop import lite_ack_queue
from codec.bodies.pop import BatchAck, BatchAckMessageRequestBody, BatchAckMsg
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.extra_info import (
    POP_ORDER_REVIVE_QUEUE,
    ExtraInfo,
    join_entries,
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


class PopProcessor:
    def __init__(
        self,
        broker: BrokerController,
        pop: PopConfig,
        state: PopState | None = None,
        service: ConsumeService | None = None,
    ) -> None:
        self.broker = broker
        self.pop = pop
        self.service = service if service is not None else ConsumeService(broker, pop, state)
        self.state = self.service.state
        self.writer = self.service.writer
        self.orders = self.service.orders
        self.reader = self.service.reader
        self.polling = self.service.polling

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
        pop = PopRequest(
            consumer_group=header.consumer_group,
            topic=header.topic,
            queue_id=header.queue_id,
            max_msg_nums=header.max_msg_nums,
            invisible_time=header.invisible_time,
            poll_time=header.poll_time,
            init_mode=header.init_mode,
            born_time=header.born_time,
            exp_type=header.exp_type,
            exp=header.exp,
            order=header.order,
            attempt_id=header.attempt_id,
        )
        outcome = await self.service.pop_message(pop)
        if outcome.suspended:
            ctx.suspended = True
        batch = outcome.batch
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
        return request.make_response(
            outcome.code, remark, header=response_header, body=b"".join(batch.buffers)
        )

    # -- ACK_MESSAGE / BATCH_ACK_MESSAGE -----------------------------------------------------------

    def _acked_topic(
        self, header: AckMessageRequestHeader | ChangeInvisibleTimeRequestHeader, *, is_ack: bool
    ) -> str:
        """The queue's topic an ack or a change of invisible time applies to: the request's topic,
        or, with a ``liteTopic``, its lite topic's queue (``AckMessageProcessor.ackLite``)."""
        if not (header.lite_topic and header.lite_topic.strip()):
            return header.topic
        return lite_ack_queue(
            self.broker,
            header.consumer_group,
            header.topic,
            header.lite_topic,
            header.queue_id,
            header.extra_info,
            is_ack=is_ack,
        )

    async def ack_message(
        self, ctx: RequestContext, request: RemotingCommand, header: AckMessageRequestHeader
    ) -> RemotingCommand:
        topic = self._acked_topic(header, is_ack=True)
        await self.service.ack_message(
            AckRequest(header.consumer_group, topic, header.queue_id, header.extra_info, header.offset)
        )
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
            if self.service.revive_queue_ok(entry.revive_queue_id):
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
        topic = self._acked_topic(header, is_ack=False)
        changed = await self.service.change_invisible_time(
            AckRequest(header.consumer_group, topic, header.queue_id, header.extra_info, header.offset),
            header.invisible_time,
        )
        response_header = ChangeInvisibleTimeResponseHeader(
            changed.pop_time, changed.invisible_time, changed.revive_qid
        )
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
