"""The request pipeline's last step: each request message through the Proxy's checks of its RPC.

Mirrors where the Proxy's activities call ``GrpcValidator`` and their own validate* methods, first
thing, after the authentication pipeline: :class:`RequestChecks` is a
:data:`broker.grpc.common.RequestCheck` that picks the check of the request's type from
:mod:`broker.grpc.validation`. ReceiveMessage is checked by the consumer activity itself, which
needs the long-polling time the check computes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf.message import Message as ProtoMessage

from broker.controller import BrokerController
from broker.grpc import validation as v
from broker.grpc.common import ClientContext, RequestCheck
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

SettingsOf = Callable[[str], "pb.Settings | None"]


class RequestChecks:
    """The checks of every unary request and Telemetry command; see the module docstring.

    ``settings_of(client id)`` gives a client's settings (a heartbeat's check depends on the
    client's type); set it once the client activity exists."""

    def __init__(self, broker: BrokerController, config: GrpcServerConfig) -> None:
        self.broker = broker
        self.config = config
        self.settings_of: SettingsOf = lambda _client_id: None
        system = broker.topics.is_system
        self._checks: dict[type[Any], Callable[[ClientContext, Any], object]] = {
            pb.SendMessageRequest: lambda _ctx, r: v.validate_send(r, system, config, broker.now_ms()),
            pb.RecallMessageRequest: lambda _ctx, r: v.validate_topic(r.topic, system),
            pb.QueryRouteRequest: lambda _ctx, r: v.validate_topic(r.topic, system),
            pb.QueryAssignmentRequest: lambda _ctx, r: v.validate_topic_and_group(r, system),
            pb.AckMessageRequest: lambda _ctx, r: v.validate_topic_and_group(r, system),
            pb.ForwardMessageToDeadLetterQueueRequest: lambda _ctx, r: v.validate_topic_and_group(r, system),
            pb.ChangeInvisibleDurationRequest: lambda _ctx, r: v.validate_change_invisible_duration(
                r, system, config
            ),
            pb.EndTransactionRequest: lambda _ctx, r: v.validate_end_transaction(r, system),
            pb.HeartbeatRequest: self._heartbeat,
            pb.TelemetryCommand: self._telemetry,
        }

    def __call__(self, ctx: ClientContext, request: ProtoMessage) -> None:
        check = self._checks.get(type(request))
        if check is not None:
            check(ctx, request)

    def _heartbeat(self, ctx: ClientContext, request: pb.HeartbeatRequest) -> None:
        settings = self.settings_of(ctx.client_id) if ctx.client_id else None
        if settings is not None:
            v.validate_heartbeat(request, settings.client_type)

    def _telemetry(self, _ctx: ClientContext, command: pb.TelemetryCommand) -> None:
        if command.WhichOneof("command") == "settings":
            v.validate_settings(command.settings, self.broker.topics.is_system)


def chain(first: RequestCheck | None, then: RequestCheck) -> RequestCheck:
    """``first`` (the authentication pipeline, when on), then ``then``."""
    if first is None:
        return then

    def both(ctx: ClientContext, request: ProtoMessage) -> None:
        first(ctx, request)
        then(ctx, request)

    return both
