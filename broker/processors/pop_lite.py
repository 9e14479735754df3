"""POP_LITE_MESSAGE (5.5): the lite consumers' pop a cluster-mode Proxy sends its broker.

Mirrors org.apache.rocketmq.broker.processor.PopLiteMessageProcessor (5.5.0), as a thin door onto
the lite pop of :mod:`broker.service.lite_pop` (the one the gRPC endpoint's lite receive uses):
the checks of ``preCheck``, then a pop of the client's lite topics (``popByClientId``), each LMQ
queue orderly, waiting up to the request's poll time when none has a message
(``PopLiteLongPollingService``).

The answer, as Java writes it and the client's ``MQClientAPIImpl.processPopLiteResponse`` reads it:

* code SUCCESS, remark ``FOUND``, the messages' stored bytes as the body; else POLLING_TIMEOUT
  (POLLING_FULL when the long polling is full), remark ``NO_MESSAGE_IN_QUEUE``, no body;
* the header ``PopLiteMessageResponseHeader`` in every answer (the client decodes it before it
  looks at the code, and its three numbers are ``@CFNotNull``; a refusal carries zeros):
  ``popTime`` (one for every message of the answer), ``invisibleTime``, ``reviveQid`` 999
  (``KeyBuilder.POP_ORDER_REVIVE_QUEUE``: every lite message is orderly) and ``orderCountInfo``,
  one consume count per message, the lite queues' ``transformOrderCountInfo`` joined by ``;``;
  no ``startOffsetInfo`` nor ``msgOffsetInfo``.

Each message goes out as the 5.5.0 broker stores it: in a queue of the parent topic, its LMQ queue
and offset in ``INNER_MULTI_DISPATCH`` and ``INNER_MULTI_QUEUE_OFFSET`` (the client builds the
message's handle from those two). This gateway keeps a lite message in its LMQ queue only, so the
record is re-encoded with the parent topic and those two properties.
"""

from __future__ import annotations

import logging

from broker.controller import BrokerController
from broker.lite import split_lmq_name
from broker.service.lite_pop import LitePops, LitePopService, check_lite_pop
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.extra_info import POP_ORDER_REVIVE_QUEUE
from codec.headers.lite import PopLiteMessageRequestHeader, PopLiteMessageResponseHeader
from codec.message import encode_record, iter_records
from codec.properties import decode_properties, encode_properties
from gateway.transport.dispatch import Dispatcher, RequestContext

logger = logging.getLogger(__name__)

INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"  # MessageConst.PROPERTY_INNER_MULTI_DISPATCH
INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"  # MessageConst.PROPERTY_INNER_MULTI_QUEUE_OFFSET
_KEY_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR


def lite_order_count_info(entries: list[str], msg_count: int) -> str:
    """``PopLiteMessageProcessor.transformOrderCountInfo``: one consume count per message of one
    LMQ queue, from the ``orderCountInfo`` entries its orderly pop built (per offset delivered
    before, then the queue's own)."""
    if not entries:
        return ";".join(["0"] * msg_count)
    if len(entries) > 1:
        return ";".join(entries[:-1])  # the per-offset entries, without the queue's
    parts = entries[0].split(_KEY_SEPARATOR)
    count = parts[2] if len(parts) == 3 else "0"
    return ";".join([count] * msg_count)


def lite_message_bytes(lmq_name: str, buffers: list[bytes]) -> tuple[bytes, int]:
    """The stored records of one LMQ queue as the 5.5.0 broker hands them out (module
    docstring), and how many there are."""
    names = split_lmq_name(lmq_name)
    parent = names[0] if names is not None else lmq_name
    out = []
    for buffer in buffers:
        for record in iter_records(buffer):
            props = decode_properties(record.properties)
            props[INNER_MULTI_DISPATCH] = lmq_name
            props[INNER_MULTI_QUEUE_OFFSET] = str(record.queue_offset)
            record.topic = parent
            record.properties = encode_properties(props)
            out.append(encode_record(record))
    return b"".join(out), len(out)


def pop_lite_answer(pops: LitePops) -> tuple[bytes, str]:
    """The body and ``orderCountInfo`` of the pops that found messages."""
    bodies = []
    counts = []
    for request, batch in pops:
        body, count = lite_message_bytes(request.topic, batch.buffers)
        bodies.append(body)
        counts.append(lite_order_count_info(batch.order_entries, count))
    return b"".join(bodies), ";".join(counts)


class PopLiteMessageProcessor:
    """POP_LITE_MESSAGE over the broker's shared lite pop (module docstring)."""

    def __init__(self, broker: BrokerController, lite_pop: LitePopService) -> None:
        self.broker = broker
        self.lite_pop = lite_pop

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.POP_LITE_MESSAGE, self.pop_lite_message, PopLiteMessageRequestHeader)

    async def pop_lite_message(
        self, ctx: RequestContext, request: RemotingCommand, header: PopLiteMessageRequestHeader
    ) -> RemotingCommand:
        now = self.broker.now_ms()
        born = header.born_time or now  # the processor's own clock for a missing or "0" bornTime
        try:
            check_lite_pop(
                self.broker, header.topic, header.consumer_group, header.max_msg_num, born, header.poll_time
            )
        except RocketMQError as err:
            return request.make_response(
                err.response_code, str(err), header=PopLiteMessageResponseHeader(0, 0, 0)
            )
        remaining = max(0, born + header.poll_time - now)
        pops, polling_full = await self.lite_pop.pop(
            header.client_id,
            header.consumer_group,
            header.topic,
            header.max_msg_num,
            header.invisible_time,
            remaining,
            header.attempt_id,
        )
        if pops:
            body, order_count_info = pop_lite_answer(pops)
            response_header = PopLiteMessageResponseHeader(
                pop_time=pops[0][1].pop_time,
                invisible_time=header.invisible_time,
                revive_qid=POP_ORDER_REVIVE_QUEUE,
                order_count_info=order_count_info,
            )
            return request.make_response(ResponseCode.SUCCESS, "FOUND", header=response_header, body=body)
        ctx.suspended = remaining > 0
        code = ResponseCode.POLLING_FULL if polling_full else ResponseCode.POLLING_TIMEOUT
        response_header = PopLiteMessageResponseHeader(
            pop_time=now,
            invisible_time=header.invisible_time,
            revive_qid=POP_ORDER_REVIVE_QUEUE,
            order_count_info="",
        )
        return request.make_response(code, "NO_MESSAGE_IN_QUEUE", header=response_header)
