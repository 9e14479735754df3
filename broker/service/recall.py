"""Recalling a delayed message before its delivery: a :class:`RecallRequest` in, a
:class:`RecallOutcome` out (``RecallMessageProcessor``, 5.3.x).

The request carries the recall handle the send answered (:mod:`codec.recall_handle`). The broker
checks it in Java's order (recall enabled - ``recallMessageEnable``, off by default -, the broker
writable unless ``allowRecallWhenBrokerNotWriteable``, the topic known, the handle decodable, its
topic the request's, its broker this one, its time still ahead and within ``timerMaxDelaySec``),
then writes a delete marker through the timer: a message of the handle's topic carrying
``TIMER_DEL_UNIQKEY`` and the handle's time, which lands in the same timer slot as the message and
cancels it there (:mod:`broker.timer.service`). The outcome names the recalled message's unique
key. Recalling a message already delivered is "timestamp invalid"; one recalled twice succeeds
twice, as in Java. A refusal raises :class:`RecallRefused` with Java's code and remark.

Both front doors adapt onto :class:`RecallService`: RECALL_MESSAGE (:mod:`broker.processors.recall`)
and gRPC's RecallMessage (:mod:`broker.grpc.send`).
"""

from __future__ import annotations

from broker.controller import BrokerController
from broker.timer.service import (
    TIMER_DEL_UNIQKEY,
    TIMER_DELIVER_MS,
    TimerMessageError,
    delete_key,
    route_timer_message_by_config,
)
from codec.bodies.register import PERM_WRITE
from codec.codes import ResponseCode
from codec.errors import CodecError, RocketMQError
from codec.message import MessageRecord
from codec.properties import PGROUP, TAGS, UNIQ_KEY, encode_properties
from codec.recall_handle import RecallHandle
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


class RecallRefused(RocketMQError):
    """A recall refused: ``response_code`` and the remark (the message)."""


class RecallRequest:
    """``topic`` and the send's ``recall_handle``; ``producer_group`` (None: not given) goes into
    the marker's properties; ``remote_addr`` (``host:port``) is its born host."""

    __slots__ = ("producer_group", "recall_handle", "remote_addr", "topic")

    def __init__(
        self, topic: str, recall_handle: str, producer_group: str | None = None, remote_addr: str = ""
    ) -> None:
        self.topic = topic
        self.recall_handle = recall_handle
        self.producer_group = producer_group
        self.remote_addr = remote_addr


class RecallOutcome:
    """A recall done: the recalled message's unique key."""

    __slots__ = ("message_id",)

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id


class RecallService:
    """See the module docstring."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    async def recall(self, request: RecallRequest) -> RecallOutcome:
        """Write the delete marker of ``request``'s handle; raises :class:`RecallRefused`."""
        handle = self.check(request)
        try:
            record, props = self.marker(request, handle)
        except TimerMessageError:  # the timer refuses it (wheel disabled): a failed put in Java
            raise RecallRefused(
                "recall failed, execute error", response_code=ResponseCode.SYSTEM_ERROR
            ) from None
        result = await self.broker.put_messages([record], [props])
        if result.status not in _PUT_OK:
            raise RecallRefused("recall failed, execute error", response_code=ResponseCode.SYSTEM_ERROR)
        return RecallOutcome(handle.message_id)

    def check(self, request: RecallRequest) -> RecallHandle:
        """The decoded handle, or :class:`RecallRefused` with Java's code and remark."""
        config = self.broker.config
        if not config.recall_message_enable:
            raise RecallRefused(
                "recall failed, operation is forbidden", response_code=ResponseCode.NO_PERMISSION
            )
        if not config.broker_permission & PERM_WRITE and not config.allow_recall_when_broker_not_writeable:
            raise RecallRefused(NOT_AVAILABLE, response_code=ResponseCode.SERVICE_NOT_AVAILABLE)
        if self.broker.topics.select(request.topic) is None:
            raise RecallRefused(
                f"recall failed, the topic[{request.topic}] not exist",
                response_code=ResponseCode.TOPIC_NOT_EXIST,
            )
        try:
            handle = RecallHandle.decode(request.recall_handle)
        except CodecError as err:
            raise RecallRefused(str(err), response_code=ResponseCode.ILLEGAL_OPERATION) from None
        if handle.topic != request.topic:
            raise RecallRefused(
                "recall failed, topic not match", response_code=ResponseCode.ILLEGAL_OPERATION
            )
        if handle.broker_name != config.broker_name:
            raise RecallRefused(NOT_AVAILABLE, response_code=ResponseCode.ILLEGAL_OPERATION)
        try:
            time_left = int(handle.timestamp) - self.broker.now_ms()
        except ValueError:  # NumberUtils.toLong(..., -1)
            time_left = -1 - self.broker.now_ms()
        if time_left <= 0 or time_left >= config.timer_max_delay_sec * 1000:
            raise RecallRefused(
                "recall failed, timestamp invalid", response_code=ResponseCode.ILLEGAL_OPERATION
            )
        return handle

    def marker(self, request: RecallRequest, handle: RecallHandle) -> tuple[MessageRecord, dict[str, str]]:
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
        if request.producer_group is not None:
            props[PGROUP] = request.producer_group
        born_host, born_port = broker.client_address(request.remote_addr)
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
        route_timer_message_by_config(broker.config, record, props, now)
        return record, props
