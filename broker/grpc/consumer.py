"""ReceiveMessage, AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue.

Mirrors ``ReceiveMessageActivity`` / ``ReceiveMessageResponseStreamWriter``, ``AckMessageActivity``
(one ack per entry: ``enableBatchAck`` is off by default), ``ChangeInvisibleDurationActivity``,
``ForwardMessageToDLQActivity`` and the Proxy's ``ConsumerProcessor`` (receipt handles, the result
filter). Where the Proxy's ``LocalMessageService`` hands POP_MESSAGE, ACK_MESSAGE,
CHANGE_MESSAGE_INVISIBLETIME and CONSUMER_SEND_MSG_BACK commands to the broker's processors, these
call the typed services those processors adapt onto (:mod:`broker.service.consume`,
:mod:`broker.service.send_back`), so a gRPC consumer and a remoting POP consumer of one group share
every offset, checkpoint and orderly lock.

A lite consumer (LITE_PUSH_CONSUMER, LITE_SIMPLE_CONSUMER) receives from the queues of its lite
topics (:mod:`broker.grpc.lite`), and names a message's lite topic when it acknowledges it, changes
its invisible time or forwards it, so that those reach the lite topic's queue.

A receipt handle is the POP ``extraInfo`` of the message with its commit-log offset appended
(``ReceiptHandle.encode``). A receive with ``auto_renew`` (push consumers) gets the Proxy's default
invisible time and its handles are renewed here while the client processes the messages
(:mod:`broker.grpc.renewer`); an ack, a change of invisible time or a forward to the dead letter
queue of such a message uses the newest handle, whichever one the client names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from google.protobuf.message import DecodeError

from broker.controller import BrokerController
from broker.grpc.common import (
    OK,
    Call,
    ClientContext,
    RequestCheck,
    StatusError,
    caller,
    status,
    status_of,
)
from broker.grpc.convert import to_message
from broker.grpc.lite import LITE_CLIENT_TYPES, LiteActivity
from broker.grpc.observe import CallRecorder
from broker.grpc.renewal import HandleTable, ReceiptHandle, TrackedHandle
from broker.grpc.renewer import Renewer
from broker.grpc.route import check_topic
from broker.grpc.validation import validate_receive
from broker.lite import to_lmq_name
from broker.pop.pop_filter import pop_message_filter
from broker.pop.pop_message import PopBatch, PopRequest
from broker.service.consume import AckRequest, ConsumeService
from broker.service.send_back import SendBackRequest, SendBackService
from codec.bodies.heartbeat import EXPRESSION_SQL92, EXPRESSION_TAG
from codec.codes import ResponseCode
from codec.errors import CodecError, RocketMQError
from codec.extra_info import (
    build_extra_info,
    join_entries,
    parse_order_count_info,
    parse_start_offset_info,
    real_topic,
    retry_flag,
)
from codec.headers.pop import CONSUME_INIT_MODE_MAX
from codec.message import MessageRecord, iter_records
from codec.properties import POP_CK, decode_properties
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from gateway.transport.grpc.status import GrpcError, StatusCode

logger = logging.getLogger(__name__)

MAX_MSG_NUMS_FOR_POP = 32  # ProxyUtils.MAX_MSG_NUMS_FOR_POP_REQUEST
RECEIVE_MESSAGE = "ReceiveMessage"
DEFAULT_MAX_ATTEMPTS = 17  # a consumer without settings: the default group's 16 retries + 1


def lite_queue(topic: str, lite_topic: str) -> str:
    """The topic of the queue a message named by ``topic`` and ``lite_topic`` came from: the lite
    topic's LMQ queue (``AckMessageRequestHeader.liteTopic``), else the topic itself."""
    return to_lmq_name(topic, lite_topic) if lite_topic else topic


class ConsumerActivity:
    """The consuming RPCs over the broker's consume service; see the module docstring."""

    def __init__(
        self,
        broker: BrokerController,
        pop: ConsumeService,
        settings_of: Callable[[str], pb.Settings | None] | None = None,
        check: RequestCheck | None = None,
        config: GrpcServerConfig | None = None,
        online: Callable[[str, str], bool] | None = None,
        *,
        send_back: SendBackService | None = None,
        recorder: CallRecorder | None = None,
    ) -> None:
        """``online(client id, group)``: whether a client is still registered in a group (its
        renewed handles are cleared when it is not); ``send_back``: the broker's send-back service
        (default: one of its own); ``recorder``: told of every ReceiveMessage and its refusals
        (the unary RPCs tell theirs in ``unary()``)."""
        self.broker = broker
        self.pop = pop
        self.check = check  # the request pipeline (ReceiveMessage; the unary RPCs get it in unary())
        self.send_back = send_back if send_back is not None else SendBackService(broker)
        self.recorder = recorder if recorder is not None else CallRecorder()
        self.settings_of = settings_of
        self.config = config or GrpcServerConfig()
        self.handles = HandleTable()
        #: The lite consumers' receive (set by the wiring; None: lite topics not served).
        self.lite: LiteActivity | None = None
        self.renewer = Renewer(
            self.handles,
            self.config,
            self._renew_change,
            online or (lambda _client, _group: True),
            self._retry_policy_of,
            broker.now_ms,
        )

    def _retry_policy_of(self, group: str) -> dict[str, object] | None:
        config = self.broker.groups.find(group, create=False)
        return config.group_retry_policy if config is not None else None

    async def _latest(self, ctx: ClientContext, group: str, message_id: str, handle_text: str) -> str:
        """``removeReceiptHandle``: the newest handle of a renewed message (no longer renewed),
        else ``handle_text``."""
        tracked = self.handles.remove(ctx.client_id, group, message_id, handle_text)
        if tracked is None:
            return handle_text
        await self.renewer.settled(tracked)
        return tracked.current

    def _settings(self, ctx: ClientContext) -> pb.Settings | None:
        return self.settings_of(ctx.client_id) if self.settings_of and ctx.client_id else None

    def _max_attempts(self, ctx: ClientContext) -> int:
        settings = self._settings(ctx)
        if settings is not None and settings.backoff_policy.max_attempts > 0:
            return settings.backoff_policy.max_attempts
        return DEFAULT_MAX_ATTEMPTS

    def _fifo(self, ctx: ClientContext) -> bool:
        settings = self._settings(ctx)
        return settings is not None and settings.subscription.fifo

    # -- ReceiveMessage ----------------------------------------------------------------------------

    async def receive_message(self, call: Call) -> None:
        """The server stream: a status, the messages when there are some, the delivery timestamp.
        The recorder is told of it as a long poll (the broker holds it up to its poll time)."""
        recorder = self.recorder
        start = recorder.start()
        try:
            answer, refused = await self._answer_receive(call)
        except GrpcError as err:
            recorder.failed(RECEIVE_MESSAGE, caller(call), err.code, err.message, start)
            raise
        if refused:
            recorder.refused(
                RECEIVE_MESSAGE, caller(call), answer.code, answer.message, start, long_polling=True
            )
        else:
            recorder.answered(RECEIVE_MESSAGE, answer.code, start, long_polling=True)

    async def _answer_receive(self, call: Call) -> tuple[pb.Status, bool]:
        """Answer one ReceiveMessage: (the status it got, whether that was a refusal)."""
        payload = await call.receive()
        if payload is None:
            raise GrpcError(StatusCode.INTERNAL, "no request message")
        try:
            request = pb.ReceiveMessageRequest.FromString(payload)
        except DecodeError as err:
            raise GrpcError(StatusCode.INVALID_ARGUMENT, f"malformed ReceiveMessageRequest: {err}") from None
        ctx = ClientContext.of(call)
        if self.check is not None:
            try:
                self.check(ctx, request)
            except StatusError as err:  # answered before the activity runs: no delivery timestamp
                refusal = status_of(err)
                await call.send(pb.ReceiveMessageResponse(status=refusal).SerializeToString())
                return refusal, True
        refused = False
        try:
            messages = await self._receive(ctx, request)
        except (StatusError, RocketMQError) as err:
            answer, refused = status_of(err), True
            await call.send(pb.ReceiveMessageResponse(status=answer).SerializeToString())
        else:
            if isinstance(messages, pb.Status):
                answer = messages
                await call.send(pb.ReceiveMessageResponse(status=messages).SerializeToString())
            else:
                answer = OK
                await call.send(pb.ReceiveMessageResponse(status=OK).SerializeToString(), flush=False)
                for message in messages:
                    await call.send(
                        pb.ReceiveMessageResponse(message=message).SerializeToString(), flush=False
                    )
        stamp = pb.ReceiveMessageResponse()
        stamp.delivery_timestamp.FromMilliseconds(self.broker.now_ms())
        await call.send(stamp.SerializeToString())
        return answer, refused

    async def _receive(
        self, ctx: ClientContext, request: pb.ReceiveMessageRequest
    ) -> list[pb.Message] | pb.Status:
        settings = self._settings(ctx)
        poll, invisible = validate_receive(
            request, self.broker.topics.is_system, self.config, ctx.metadata, settings, ctx.version
        )
        topic, group = request.message_queue.topic.name, request.group.name
        auto_renew = request.auto_renew and self.config.enable_proxy_auto_renew
        if self.lite is not None and settings is not None and settings.client_type in LITE_CLIENT_TYPES:
            return await self._receive_lite(ctx, request, poll, invisible, auto_renew)
        expression = request.filter_expression
        exp_type = EXPRESSION_SQL92 if expression.type == pb.SQL else EXPRESSION_TAG
        exp = expression.expression or "*"
        try:
            pop_message_filter(topic, group, exp, exp_type, self.broker.now_ms())
        except RocketMQError as err:
            raise StatusError(pb.ILLEGAL_FILTER_EXPRESSION, str(err)) from None
        pop = PopRequest(
            consumer_group=group,
            topic=topic,
            queue_id=-1,
            max_msg_nums=min(request.batch_size, MAX_MSG_NUMS_FOR_POP),
            invisible_time=invisible,
            poll_time=poll,
            born_time=self.broker.now_ms(),
            init_mode=CONSUME_INIT_MODE_MAX,
            exp_type=exp_type,
            exp=exp,
            order=self._fifo(ctx),
            attempt_id=request.attempt_id if request.HasField("attempt_id") else None,
        )
        popped = await self.pop.pop_message(pop)
        if popped.code == ResponseCode.POLLING_FULL:
            return status(pb.TOO_MANY_REQUESTS, "polling full")
        if popped.code != ResponseCode.SUCCESS:
            return status(pb.MESSAGE_NOT_FOUND, "no new message")
        found = [(record, props, topic) for record, props in self._with_handles(pop, popped.batch)]
        return await self._messages(ctx, group, found, auto_renew)

    async def _receive_lite(
        self,
        ctx: ClientContext,
        request: pb.ReceiveMessageRequest,
        poll: int,
        invisible: int,
        auto_renew: bool,
    ) -> list[pb.Message] | pb.Status:
        """A lite consumer's receive (:mod:`broker.grpc.lite`): its lite topics' queues."""
        assert self.lite is not None
        topic, group = request.message_queue.topic.name, request.group.name
        pops = await self.lite.receive(
            ctx,
            group,
            topic,
            min(request.batch_size, MAX_MSG_NUMS_FOR_POP),
            invisible,
            poll,
            request.attempt_id if request.HasField("attempt_id") else None,
        )
        if not pops:
            return status(pb.MESSAGE_NOT_FOUND, "no new message")
        found = []
        for pop, batch in pops:
            for record, props in self._with_handles(pop, batch):
                record.topic = topic  # the message's topic is the parent; its queue the lite one
                found.append((record, props, pop.topic))
        return await self._messages(ctx, group, found, auto_renew)

    async def _messages(
        self,
        ctx: ClientContext,
        group: str,
        found: Sequence[tuple[MessageRecord, dict[str, str], str]],
        auto_renew: bool,
    ) -> list[pb.Message] | pb.Status:
        """The popped records, each with the topic its queue is of (a lite message's: its lite
        queue), as messages; those delivered too often are forwarded to the DLQ instead."""
        max_attempts = self._max_attempts(ctx)
        messages = []
        for record, props, topic in found:
            if record.reconsume_times >= max_attempts:
                # PopMessageResultFilterImpl: TO_DLQ, forwarded and not handed out.
                await self._forward_to_dlq(
                    ctx, ReceiptHandle(props[POP_CK]), props.get("UNIQ_KEY", ""), group, topic
                )
                continue
            message = to_message(record, props)
            message.system_properties.receipt_handle = props[POP_CK]
            messages.append(message)
            if auto_renew:
                tracked = TrackedHandle(
                    group, topic, message.system_properties.message_id, props[POP_CK],
                    record.reconsume_times, self.broker.now_ms(),
                )  # fmt: skip
                self.handles.add(ctx.client_id, tracked)
        if not messages:
            return status(pb.MESSAGE_NOT_FOUND, "no match message")
        return messages

    def _with_handles(
        self, request: PopRequest, batch: PopBatch
    ) -> list[tuple[MessageRecord, dict[str, str]]]:
        """``LocalMessageService.popMessage`` + ``ConsumerProcessor.createHandle``: each record's
        POP_CK (built from the start offsets unless the broker set it) and commit-log offset."""
        starts = parse_start_offset_info(join_entries(batch.start_entries)) or {}
        counts = parse_order_count_info(join_entries(batch.order_entries)) if request.is_order() else None
        broker_name = self.broker.config.broker_name
        out = []
        records = (record for buffer in batch.buffers for record in iter_records(buffer))
        for record in records:
            props = decode_properties(record.properties)
            if POP_CK not in props:
                key = f"{retry_flag(record.topic)}@{record.queue_id}"
                props[POP_CK] = build_extra_info(
                    starts.get(key, record.queue_offset),
                    batch.pop_time,
                    request.invisible_time,
                    batch.revive_qid,
                    record.topic,
                    broker_name,
                    record.queue_id,
                    record.queue_offset,
                )
                count = (counts or {}).get(key)
                if count:
                    record.reconsume_times = count
            props[POP_CK] = f"{props[POP_CK]} {record.physical_offset}"
            props.setdefault("1ST_POP_TIME", str(batch.pop_time))
            record.topic = request.topic
            out.append((record, props))
        return out

    # -- AckMessage ----------------------------------------------------------------------------------

    async def ack_message(self, ctx: ClientContext, request: pb.AckMessageRequest) -> pb.AckMessageResponse:
        topic = check_topic(request.topic, self.broker.topics)
        group = request.group.name
        entries = []
        for entry in request.entries:
            try:
                text = await self._latest(ctx, group, entry.message_id, entry.receipt_handle)
                ok = await self._ack(ctx, ReceiptHandle(text), group, lite_queue(topic, entry.lite_topic))
                result = OK if ok else status(pb.INTERNAL_SERVER_ERROR, "ack failed: status is abnormal")
            except (StatusError, RocketMQError) as err:
                result = status_of(err)
            entries.append(
                pb.AckMessageResultEntry(
                    message_id=entry.message_id, receipt_handle=entry.receipt_handle, status=result
                )
            )
        codes = {e.status.code for e in entries}
        if len(codes) > 1:
            overall = status(pb.MULTIPLE_RESULTS)
        elif codes:
            overall = status(codes.pop())
        else:
            overall = status(pb.INTERNAL_SERVER_ERROR, "ack message result is empty")
        return pb.AckMessageResponse(status=overall, entries=entries)

    def _ack_request(self, handle: ReceiptHandle, group: str, topic: str) -> AckRequest:
        """What an ack or a change of invisible time names (the retry topic of a retried
        message); raises StatusError for an expired handle (``ReceiptHandleProcessor``)."""
        if handle.expired(self.broker.now_ms()):
            raise StatusError(pb.INVALID_RECEIPT_HANDLE, "receipt handle is expired")
        real = real_topic(topic, group, handle.info.retry_flag)
        return AckRequest(group, real, handle.queue_id, handle.text, handle.offset)

    async def _ack(self, ctx: ClientContext | None, handle: ReceiptHandle, group: str, topic: str) -> bool:
        """``ConsumerProcessor.ackMessage``: True when the broker answered SUCCESS."""
        ack = self._ack_request(handle, group, topic)
        try:
            await self.pop.ack_message(ack)
        except (RocketMQError, CodecError):
            return False
        return True

    # -- ChangeInvisibleDuration ---------------------------------------------------------------------

    async def change_invisible_duration(
        self, ctx: ClientContext, request: pb.ChangeInvisibleDurationRequest
    ) -> pb.ChangeInvisibleDurationResponse:
        topic = check_topic(request.topic, self.broker.topics)
        group = request.group.name
        ReceiptHandle(request.receipt_handle)  # a malformed handle is refused before anything else
        invisible = request.invisible_duration.ToMilliseconds()  # checked: broker.grpc.request_checks
        text = await self._latest(ctx, group, request.message_id, request.receipt_handle)
        queue_topic = lite_queue(topic, request.lite_topic)
        new_handle = await self._change_invisible(ctx, ReceiptHandle(text), group, queue_topic, invisible)
        if new_handle is None:
            return pb.ChangeInvisibleDurationResponse(
                status=status(pb.INTERNAL_SERVER_ERROR, "changeInvisibleDuration failed: status is abnormal")
            )
        return pb.ChangeInvisibleDurationResponse(status=OK, receipt_handle=new_handle)

    async def _renew_change(self, tracked: TrackedHandle, invisible: int) -> str | None:
        return await self._change_invisible(
            None, ReceiptHandle(tracked.current), tracked.group, tracked.topic, invisible
        )

    async def _change_invisible(
        self, ctx: ClientContext | None, handle: ReceiptHandle, group: str, topic: str, invisible: int
    ) -> str | None:
        """``ConsumerProcessor.changeInvisibleTime``: the new handle, None when the broker did not
        answer SUCCESS. Raises StatusError for an expired handle."""
        ack = self._ack_request(handle, group, topic)
        try:
            changed = await self.pop.change_invisible_time(ack, invisible)
        except (RocketMQError, CodecError):
            return None
        info = handle.info
        # LocalMessageService.changeInvisibleTime: the old handle with the new popTime/invisibleTime.
        return " ".join(
            str(v)
            for v in (
                info.ck_queue_offset,
                changed.pop_time,
                changed.invisible_time,
                changed.revive_qid,
                info.retry_flag,
                info.broker_name,
                handle.queue_id,
                handle.offset,
                handle.commit_log_offset,
            )
        )

    # -- ForwardMessageToDeadLetterQueue -------------------------------------------------------------

    async def forward_message_to_dead_letter_queue(
        self, ctx: ClientContext, request: pb.ForwardMessageToDeadLetterQueueRequest
    ) -> pb.ForwardMessageToDeadLetterQueueResponse:
        topic = check_topic(request.topic, self.broker.topics)
        ReceiptHandle(request.receipt_handle)
        group = request.group.name
        text = await self._latest(ctx, group, request.message_id, request.receipt_handle)
        queue_topic = lite_queue(topic, request.lite_topic)
        code = await self._forward_to_dlq(ctx, ReceiptHandle(text), request.message_id, group, queue_topic)
        if code == ResponseCode.SUCCESS:
            return pb.ForwardMessageToDeadLetterQueueResponse(status=OK)
        return pb.ForwardMessageToDeadLetterQueueResponse(
            status=status(pb.INTERNAL_SERVER_ERROR, f"forward to dead letter queue failed, code={code}")
        )

    async def _forward_to_dlq(
        self, ctx: ClientContext, handle: ReceiptHandle, message_id: str, group: str, topic: str
    ) -> int:
        """``ProducerProcessor.forwardMessageToDeadLetterQueue``: a send-back with
        ``maxReconsumeTimes`` 0 (so to ``%DLQ%group``), then the ack of the handle."""
        if handle.commit_log_offset < 0:
            raise StatusError(pb.INVALID_RECEIPT_HANDLE, "commit log offset is empty")
        await self.send_back.send_back(
            SendBackRequest(
                group=group,
                offset=handle.commit_log_offset,
                delay_level=-1,
                max_reconsume_times=0,
                origin_msg_id=message_id,
                origin_topic=real_topic(topic, group, handle.info.retry_flag),
            )
        )
        try:
            await self._ack(ctx, handle, group, topic)
        except StatusError as err:
            logger.info("grpc: ack after forwarding %s to the DLQ refused: %s", message_id, err.message)
        return ResponseCode.SUCCESS
