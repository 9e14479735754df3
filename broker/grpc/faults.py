"""Fault rules on the gRPC endpoint's calls (:mod:`gateway.transport.faults`, target grpc).

:func:`broker.grpc.common.unary` asks :func:`injected` after the request parsed and passed the
request pipeline's checks, only when its point has an active rule; so without rules a call pays
one attribute check; :mod:`broker.grpc.stream_faults` asks it for each request message of a
streaming call. What a firing rule does:

* ``respond``: the response carries that ``apache.rocketmq.v2.Code`` in its ``status`` and
  nothing else, as the Proxy answers a refused request (``ResponseBuilder.buildStatus``; a busy
  broker's SYSTEM_BUSY becomes TOO_MANY_REQUESTS with the broker's remark);
* ``close``: the call ends with gRPC status UNAVAILABLE and no response message. That is what a
  client's stub reports when the server fails under it (a Proxy going away, a connection reset),
  and, unlike tearing down the HTTP/2 connection, it hits only the matching call, not the other
  calls the client multiplexes over the same connection;
* ``drop``: no answer ever (the point's sleep, forever); the client's deadline expires
  (DEADLINE_EXCEEDED) and it cancels;
* ``delay_ms``: wait first, then any of these, or the real handler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from google.protobuf.message import Message as ProtoMessage

from gateway.transport.faults import FaultPoint
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from gateway.transport.grpc.status import GrpcError, StatusCode


@dataclass(frozen=True, slots=True)
class RequestNames:
    """The topic and group of a request message, under the names a rule matches on."""

    topic: str | None
    consumer_group: str | None
    producer_group: str | None = None

    @classmethod
    def of(cls, request: ProtoMessage) -> RequestNames:
        """The names of a request message: its ``topic``, its first message's or its queue's
        (ReceiveMessage); its ``group``, or a telemetry command's subscription group."""
        fields = request.DESCRIPTOR.fields_by_name
        topic = request.topic.name if "topic" in fields else None  # type: ignore[attr-defined]
        if topic is None and "messages" in fields and request.messages:  # type: ignore[attr-defined]
            topic = request.messages[0].topic.name  # type: ignore[attr-defined]
        if topic is None and "message_queue" in fields:
            topic = request.message_queue.topic.name  # type: ignore[attr-defined]
        group = request.group.name if "group" in fields else None  # type: ignore[attr-defined]
        if group is None and "settings" in fields:
            group = request.settings.subscription.group.name  # type: ignore[attr-defined]
        return cls(topic or None, group or None)


async def injected(
    point: FaultPoint,
    method: str,
    remote_addr: str,
    request: ProtoMessage,
    response_type: type[ProtoMessage],
) -> ProtoMessage | None:
    """The response a firing rule gives instead of the handler's, or None to run the handler
    (no rule fired, or one that only delays); raises GrpcError UNAVAILABLE for ``close``."""
    fault = point.match(method, RequestNames.of(request), remote_addr)
    if fault is None:
        return None
    rule = fault.rule
    if rule.delay_ms and point.sleep is not None:
        await point.sleep(fault.delay_s)
    if rule.respond is not None:
        code = cast("pb.Code", rule.respond)
        message = fault.remark if fault.remark is not None else pb.Code.Name(code)
        return response_type(status=pb.Status(code=code, message=message))
    if rule.close:
        raise GrpcError(StatusCode.UNAVAILABLE, "connection to the server lost (injected fault)")
    if rule.drop and point.sleep is not None:
        await point.sleep(math.inf)
    return None
