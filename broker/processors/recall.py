"""RECALL_MESSAGE (370, 5.3.x): cancel a delayed message before its delivery
(``RecallMessageProcessor``).

The request carries the recall handle the send answered (:mod:`codec.recall_handle`). The broker
checks it in Java's order (recall enabled - ``recallMessageEnable``, off by default -, the broker
writable unless ``allowRecallWhenBrokerNotWriteable``, the topic known, the handle decodable, its
topic the request's, its broker this one, its time still ahead and within ``timerMaxDelaySec``),
then writes a delete marker through the timer: a message of the handle's topic carrying
``TIMER_DEL_UNIQKEY`` and the handle's time, which lands in the same timer slot as the message and
cancels it there (:mod:`broker.timer.service`). The answer's ``msgId`` is the recalled message's
unique key. Recalling a message already delivered is "timestamp invalid"; one recalled twice
answers success twice, as in Java.
"""

from __future__ import annotations

from broker.controller import BrokerController
from broker.timer.service import (
    TIMER_DEL_UNIQKEY,
    TIMER_DELIVER_MS,
    TimerMessageError,
    delete_key,
    route_timer_message,
)
from codec.bodies.register import PERM_WRITE
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import CodecError, RocketMQError
from codec.headers.recall import RecallMessageRequestHeader
from codec.message import MessageRecord
from codec.properties import MSG_REGION, PGROUP, TAGS, UNIQ_KEY, encode_properties
from codec.recall_handle import RecallHandle
from gateway.transport.dispatch import Dispatcher, RequestContext
from store.results import PutMessageStatus

RECALL_MESSAGE_TAG = "_RECALL_TAG_"
BORN_TIMESTAMP = "BORN_TIMESTAMP"  # MessageConst.PROPERTY_BORN_TIMESTAMP
TRACE_CONTEXT = "TRACE_CONTEXT"  # MessageConst.PROPERTY_TRACE_CONTEXT
NOT_AVAILABLE = "recall failed, broker service not available"
_PUT_OK = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)


class RecallMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.RECALL_MESSAGE, self.recall, RecallMessageRequestHeader)

    async def recall(
        self, ctx: RequestContext, request: RemotingCommand, header: RecallMessageRequestHeader
    ) -> RemotingCommand:
        handle = self.check(header)
        try:
            record, props = self.marker(ctx, header, handle)
        except TimerMessageError:  # the timer refuses it (wheel disabled): a failed put in Java
            raise self._refuse(ResponseCode.SYSTEM_ERROR, "recall failed, execute error") from None
        result = await self.broker.put_messages([record], [props])
        if result.status not in _PUT_OK:
            raise self._refuse(ResponseCode.SYSTEM_ERROR, "recall failed, execute error")
        fields = {"msgId": handle.message_id, **self._extras()}
        return request.make_response(ResponseCode.SUCCESS, None, header=fields)

    def check(self, header: RecallMessageRequestHeader) -> RecallHandle:
        """The decoded handle, or :class:`RocketMQError` with Java's code and remark."""
        config = self.broker.config
        if not config.recall_message_enable:
            raise self._refuse(ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden")
        if not config.broker_permission & PERM_WRITE and not config.allow_recall_when_broker_not_writeable:
            raise self._refuse(
                ResponseCode.SERVICE_NOT_AVAILABLE, "recall failed, broker service not available"
            )
        if self.broker.topics.select(header.topic) is None:
            raise self._refuse(
                ResponseCode.TOPIC_NOT_EXIST, f"recall failed, the topic[{header.topic}] not exist"
            )
        try:
            handle = RecallHandle.decode(header.recall_handle)
        except CodecError as err:
            raise self._refuse(ResponseCode.ILLEGAL_OPERATION, str(err)) from None
        if handle.topic != header.topic:
            raise self._refuse(ResponseCode.ILLEGAL_OPERATION, "recall failed, topic not match")
        if handle.broker_name != config.broker_name:
            raise self._refuse(ResponseCode.ILLEGAL_OPERATION, NOT_AVAILABLE)
        try:
            time_left = int(handle.timestamp) - self.broker.now_ms()
        except ValueError:  # NumberUtils.toLong(..., -1)
            time_left = -1 - self.broker.now_ms()
        if time_left <= 0 or time_left >= config.timer_max_delay_sec * 1000:
            raise self._refuse(ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid")
        return handle

    def marker(
        self, ctx: RequestContext, header: RecallMessageRequestHeader, handle: RecallHandle
    ) -> tuple[MessageRecord, dict[str, str]]:
        """``buildMessage``: the delete marker, already routed into the timer topic."""
        broker = self.broker
        now = broker.now_ms()
        props = {
            TAGS: RECALL_MESSAGE_TAG,
            TIMER_DEL_UNIQKEY: delete_key(handle.topic, handle.message_id),
            UNIQ_KEY: handle.message_id,
            TIMER_DELIVER_MS: handle.timestamp,
            BORN_TIMESTAMP: str(now),
            TRACE_CONTEXT: "",
        }
        if header.producer_group is not None:
            props[PGROUP] = header.producer_group
        born_host, born_port = broker.client_address(ctx.connection.remote_addr)
        record = MessageRecord(
            topic=handle.topic,
            queue_id=0,
            body=b"0",
            properties=encode_properties(props),
            born_timestamp=now,
            born_host=born_host,
            born_port=born_port,
            store_host=broker.store_host,
            store_port=broker.store_port,
        )
        config = broker.config
        route_timer_message(
            record,
            props,
            now,
            max_delay_sec=config.timer_max_delay_sec,
            precision_ms=config.timer_precision_ms,
            wheel_enable=config.timer_wheel_enable,
        )
        return record, props

    def _extras(self) -> dict[str, str]:
        return {MSG_REGION: self.broker.config.region_id}  # on every answer, errors included

    def _refuse(self, code: int, remark: str) -> RocketMQError:
        return RocketMQError(remark, response_code=code, ext_fields=self._extras())
