"""Fault rules on the gRPC endpoint's streaming calls: ``ReceiveMessage`` (server streaming) and
``Telemetry`` (bidirectional), target grpc (:mod:`gateway.transport.faults`).

Each request message of such a call passes the rules as a unary call's request does
(:func:`broker.grpc.faults.injected`), before the handler reads it, only while the point has an
active rule:

* ``ReceiveMessage`` has one request message. ``respond`` answers the call with one
  ``ReceiveMessageResponse`` carrying that status and ends it, as the Proxy answers a refused
  receive (``ReceiveMessageResponseStreamWriter.writeAndComplete`` with a status only);
* ``Telemetry`` carries many commands. ``respond`` answers the matching command with a
  ``TelemetryCommand`` carrying that status instead of handling it; the stream goes on, so a rule
  with ``times`` refuses that many commands (the first is the client's settings);
* ``close`` ends the call with gRPC UNAVAILABLE (the client sees its stream fail, as when a Proxy
  goes away); ``drop`` never handles the message, so the call hangs until the client's deadline
  or cancel; ``delay_ms`` waits first.

A rule matches a receive by its group and its queue's topic, a telemetry command by the group of
its settings' subscription (a publishing client's commands have no group); a message that does
not parse goes to the handler, which answers it as without rules. Unlike a unary call, the
request pipeline's check (authentication) runs after the rules, in the handler.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage

from broker.grpc.common import Call, Handler
from broker.grpc.faults import injected
from gateway.transport.faults import FaultPoint
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb


async def fault_answer(
    point: FaultPoint,
    method: str,
    call: Call,
    payload: bytes,
    request_type: type[ProtoMessage],
    response_type: type[ProtoMessage],
) -> ProtoMessage | None:
    """What a firing rule answers ``payload`` with (None: hand it to the handler); raises
    GrpcError UNAVAILABLE for ``close``."""
    try:
        request = request_type.FromString(payload)
    except DecodeError:
        return None
    return await injected(point, method, call.peer, request, response_type)


class _FaultedCall:
    """The call as a streaming handler sees it: a message already read comes first, then each
    request message passes the rules (``per_message``), a refused one answered and skipped."""

    def __init__(
        self,
        call: Call,
        point: FaultPoint,
        method: str,
        first: bytes | None,
        per_message: bool,
    ) -> None:
        self.call = call
        self.metadata = call.metadata
        self.peer = call.peer
        self.connection_id = call.connection_id
        self.point = point
        self.method = method
        self._first = first
        self._replay = first is not None
        self.per_message = per_message

    async def receive(self) -> bytes | None:
        if self._replay:
            self._replay = False
            return self._first
        while True:
            payload = await self.call.receive()
            if payload is None or not self.per_message or not self.point.rules:
                return payload
            answer = await fault_answer(
                self.point, self.method, self.call, payload, pb.TelemetryCommand, pb.TelemetryCommand
            )
            if answer is None:
                return payload
            await self.call.send(answer.SerializeToString())

    async def send(self, payload: bytes, *, flush: bool = True) -> None:
        await self.call.send(payload, flush=flush)

    def post(self, payload: bytes) -> bool:
        return self.call.post(payload)

    @property
    def cancelled(self) -> bool:
        return self.call.cancelled


def receive_with_faults(handler: Handler, point: FaultPoint, method: str) -> Handler:
    """``ReceiveMessage`` (``handler``) with the rules of ``point`` for its ``method`` path."""

    async def handle(call: Call) -> None:
        if not point.rules:
            await handler(call)
            return
        payload = await call.receive()
        if payload is not None:
            answer = await fault_answer(
                point, method, call, payload, pb.ReceiveMessageRequest, pb.ReceiveMessageResponse
            )
            if answer is not None:
                await call.send(answer.SerializeToString())
                return
        await handler(_FaultedCall(call, point, method, payload, per_message=False))

    return handle


def telemetry_with_faults(handler: Handler, point: FaultPoint, method: str) -> Handler:
    """``Telemetry`` (``handler``) with the rules of ``point`` for its ``method`` path, asked
    for every command the client sends."""

    async def handle(call: Call) -> None:
        await handler(_FaultedCall(call, point, method, None, per_message=True))

    return handle
