"""SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE: the remoting door of the send service.

Mirrors the remoting half of ``SendMessageProcessor``: a V2 header (one-letter keys) is converted
to the v1 header once, on arrival, as Java's ``parseRequestHeader`` does; the header and body
become a :class:`~broker.service.send_values.SendRequest` (the properties string decoded, a batch body
split into its items with each item's properties string kept as sent), :class:`SendService` does
the checks and the put, and its outcome becomes the response fields the client reads (``msgId``,
``queueId``, ``queueOffset``, ``transactionId``, ``recallHandle``) plus ``MSG_REGION`` and
``TRACE_ON``, which keep ``extFields`` non-null even on errors. A refusal
(:class:`~broker.service.send_values.SendRefused`) is raised again as :class:`SendError` carrying those
two fields, which the dispatcher answers with its code and remark.

What only the remoting protocol has stays here: the request version that says whether a client's
``maxReconsumeTimes`` counts (after 3.4.9), and the offset message ids of the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable

from broker.controller import BrokerController
from broker.service.send import SendService
from broker.service.send_values import BatchItem, SendOutcome, SendRefused, SendRequest
from codec.batch import decode_batch
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import MessageFormatError, RocketMQError
from codec.headers.send import SendMessageRequestHeader, SendMessageRequestHeaderV2
from codec.message_id import encode_offset_msg_id
from codec.properties import MSG_REGION, TRACE_ON, decode_properties
from codec.versions import version_ordinal
from gateway.transport.dispatch import Dispatcher, RequestContext

#: Clients after 3.4.9 send their own ``maxReconsumeTimes`` (``SendMessageProcessor``).
V3_4_9 = version_ordinal("V3_4_9")


class SendError(RocketMQError):
    """A send refused by a check or by the store: the code, the remark and the fields every send
    answer carries."""


class SendMessageProcessor:
    def __init__(self, broker: BrokerController, service: SendService | None = None) -> None:
        self.broker = broker
        self.service = service if service is not None else SendService(broker)

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.SEND_MESSAGE, self.send, SendMessageRequestHeader)
        dispatcher.register(RequestCode.SEND_MESSAGE_V2, self.send_v2, SendMessageRequestHeaderV2)
        dispatcher.register(RequestCode.SEND_BATCH_MESSAGE, self.send_v2, SendMessageRequestHeaderV2)

    def extras(self) -> dict[str, str]:
        """The fields on every send answer, refusals included."""
        config = self.broker.config
        return {MSG_REGION: config.region_id, TRACE_ON: "true" if config.trace_on else "false"}

    def refusal(self, err: RocketMQError) -> SendError:
        """``err`` (a service refusal) as the processor's error, with :meth:`extras`."""
        return SendError(str(err), response_code=err.response_code, ext_fields=self.extras())

    def send_v2(
        self, ctx: RequestContext, request: RemotingCommand, header: SendMessageRequestHeaderV2
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        return self.send(ctx, request, header.to_v1())

    def send(
        self, ctx: RequestContext, request: RemotingCommand, header: SendMessageRequestHeader
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        """The answer, or under ``SYNC_FLUSH`` an awaitable of it (the put waits for its fsync).

        Not a coroutine function on purpose: under ``ASYNC_FLUSH`` nothing waits, and the
        connection answers a plain return inline instead of starting a task for it."""
        try:
            answer = self.service.send(self.send_request(ctx, request, header))
        except SendRefused as err:
            raise self.refusal(err) from None
        if isinstance(answer, SendOutcome):
            return self._response(request, answer)
        return self._response_after(request, answer)

    def send_request(
        self, ctx: RequestContext, request: RemotingCommand, header: SendMessageRequestHeader
    ) -> SendRequest:
        """The typed request of a send command; raises :class:`SendRefused` for a batch body that
        does not decode (after the checks that come first, so the answer is the same as Java's)."""
        send = SendRequest(
            topic=header.topic,
            queue_id=header.queue_id,
            properties=decode_properties(header.properties),
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            flag=header.flag,
            reconsume_times=header.reconsume_times or 0,
            max_reconsume_times=header.max_reconsume_times if request.version > V3_4_9 else None,
            producer_group=header.producer_group,
            default_topic=header.default_topic,
            default_topic_queue_nums=header.default_topic_queue_nums,
            remote_addr=ctx.connection.remote_addr,
        )
        if not header.batch:
            send.body = bytes(request.body)
            return send
        try:
            entries = decode_batch(request.body)
        except MessageFormatError as err:
            self.service.check_batch(send)
            raise SendRefused(f"bad batch body: {err}", response_code=ResponseCode.MESSAGE_ILLEGAL) from None
        send.batch = [
            BatchItem(e.body, e.flag, decode_properties(e.properties), e.properties) for e in entries
        ]
        return send

    async def _response_after(
        self, request: RemotingCommand, pending: Awaitable[SendOutcome]
    ) -> RemotingCommand:
        try:
            outcome = await pending
        except SendRefused as err:
            raise self.refusal(err) from None
        return self._response(request, outcome)

    def _response(self, request: RemotingCommand, outcome: SendOutcome) -> RemotingCommand:
        broker = self.broker
        host, port = broker.store_host, broker.store_port
        # SendMessageResponseHeader.to_ext_fields written out (per request): its keys in its order.
        fields = {
            "msgId": ",".join(
                encode_offset_msg_id(host, port, offset) for offset in outcome.physical_offsets
            ),
            "queueId": str(outcome.queue_id),
            "queueOffset": str(outcome.queue_offset),
        }
        if outcome.transaction_id is not None:
            fields["transactionId"] = outcome.transaction_id
        if outcome.recall_handle is not None:
            fields["recallHandle"] = outcome.recall_handle
        fields.update(self.extras())
        return request.make_response(outcome.code, None, header=fields)
