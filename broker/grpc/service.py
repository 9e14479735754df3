"""The method table of apache.rocketmq.v2.MessagingService for this broker.

Mirrors ``GrpcMessagingApplication``: each RPC path to the activity that answers it. The RPCs not
listed here are answered UNIMPLEMENTED by the transport; see docs/grpc.md for which they are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from broker.auth.guard import AuthGuard
from broker.controller import BrokerController
from broker.grpc.auth import grpc_auth
from broker.grpc.client import ClientActivity
from broker.grpc.common import ClientContext, Handler, Req, Resp, unary
from broker.grpc.consumer import ConsumerActivity
from broker.grpc.lite import LiteActivity
from broker.grpc.observe import CallRecorder
from broker.grpc.request_checks import RequestChecks, chain
from broker.grpc.route import RouteActivity
from broker.grpc.send import SendActivity
from broker.grpc.stream_faults import receive_with_faults, telemetry_with_faults
from broker.grpc.transaction import TransactionActivity
from broker.service.services import BrokerServices
from gateway.transport.faults import FaultPoint
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

SERVICE = "apache.rocketmq.v2.MessagingService"

#: The service's RPC names by the full name of their request message, as the .proto declares them.
_METHOD_OF_REQUEST = {
    rpc.input_type.full_name: rpc.name for rpc in pb.DESCRIPTOR.pool.FindServiceByName(SERVICE).methods
}


def path(method: str) -> str:
    return f"/{SERVICE}/{method}"


class MessagingService:
    """The activities over one broker; ``methods`` is what the gRPC server serves."""

    def __init__(
        self,
        broker: BrokerController,
        grpc_port: int,
        services: BrokerServices | None = None,
        auth: AuthGuard | None = None,
        config: GrpcServerConfig | None = None,
        faults: FaultPoint | None = None,
        recorder: CallRecorder | None = None,
    ) -> None:
        """``services``: the broker's typed operations, which the remoting processors share; without
        them the producing RPCs get services of their own and the consuming ones are answered
        UNIMPLEMENTED. ``auth``: the broker's authentication and authorization
        check, run on every request message as the Proxy's request pipeline (None: both off).
        ``config``: the endpoint's settings (the renewal of
        receipt handles, the limits of the request checks, which run after authentication:
        :mod:`broker.grpc.request_checks`); the consumer's ``renewer.run`` must be started by whoever
        runs the service. ``faults``: the gRPC fault rules every unary call and every request
        message of a streaming one consults (:mod:`broker.grpc.faults`,
        :mod:`broker.grpc.stream_faults`; None: none). ``recorder``: told of every request answered
        and refused, the broker's metrics among its observers (:mod:`broker.grpc.observe`; default:
        one without observers, which still logs the refusals)."""
        self.faults = faults
        self.recorder = recorder if recorder is not None else CallRecorder()
        self.validation = RequestChecks(broker, config or GrpcServerConfig())
        self.check = chain(grpc_auth(auth), self.validation)
        self.route = RouteActivity(broker, grpc_port)
        self.clients = ClientActivity(broker, check=self.check, recorder=self.recorder, config=config)
        shared = services
        self.transactions = TransactionActivity(
            broker, self.clients.sessions, shared.end_transaction if shared else None
        )
        self.clients.peer_for = self.transactions.peer_for
        self.validation.settings_of = self.clients.settings_of
        self.send = SendActivity(
            broker, self.transactions, shared.send if shared else None, shared.recall if shared else None
        )
        self.consumer = None
        self.lite: LiteActivity | None = None
        if shared is not None:
            self.consumer = ConsumerActivity(
                broker,
                shared.consume,
                self.clients.settings_of,
                self.check,
                config,
                self.clients.is_online,
                send_back=shared.send_back,
                recorder=self.recorder,
            )
            self.lite = LiteActivity(
                broker,
                shared.consume,
                shared.lite,
                shared.lite_lifecycle,
                self.clients.sessions,  # a lite topic taken from a client is told on its stream
                shared.lite_pop,
            )
            self.consumer.lite = self.lite
            self.clients.on_termination = self.lite.forget

    @property
    def methods(self) -> dict[str, Handler]:
        methods = self._methods()
        consumer = self.consumer
        if consumer is not None:
            methods[path("ReceiveMessage")] = (
                consumer.receive_message
                if self.faults is None
                else receive_with_faults(consumer.receive_message, self.faults, path("ReceiveMessage"))
            )
            methods.update(
                (
                    self._unary(pb.AckMessageRequest, pb.AckMessageResponse, consumer.ack_message),
                    self._unary(
                        pb.ChangeInvisibleDurationRequest,
                        pb.ChangeInvisibleDurationResponse,
                        consumer.change_invisible_duration,
                    ),
                    self._unary(
                        pb.ForwardMessageToDeadLetterQueueRequest,
                        pb.ForwardMessageToDeadLetterQueueResponse,
                        consumer.forward_message_to_dead_letter_queue,
                    ),
                )
            )
        if self.lite is not None:
            methods.update(
                (
                    self._unary(
                        pb.SyncLiteSubscriptionRequest,
                        pb.SyncLiteSubscriptionResponse,
                        self.lite.sync_lite_subscription,
                    ),
                )
            )
        return methods

    def _methods(self) -> dict[str, Handler]:
        methods = dict(
            (
                self._unary(pb.QueryRouteRequest, pb.QueryRouteResponse, self.route.query_route),
                self._unary(
                    pb.QueryAssignmentRequest, pb.QueryAssignmentResponse, self.route.query_assignment
                ),
                self._unary(pb.HeartbeatRequest, pb.HeartbeatResponse, self.clients.heartbeat),
                self._unary(
                    pb.NotifyClientTerminationRequest,
                    pb.NotifyClientTerminationResponse,
                    self.clients.notify_client_termination,
                ),
                self._unary(pb.SendMessageRequest, pb.SendMessageResponse, self.send.send_message),
                self._unary(pb.RecallMessageRequest, pb.RecallMessageResponse, self.send.recall_message),
                self._unary(
                    pb.EndTransactionRequest, pb.EndTransactionResponse, self.transactions.end_transaction
                ),
            )
        )
        methods[path("Telemetry")] = (
            self.clients.telemetry
            if self.faults is None
            else telemetry_with_faults(self.clients.telemetry, self.faults, path("Telemetry"))
        )
        return methods

    def _unary(
        self,
        request_type: type[Req],
        response_type: type[Resp],
        fn: Callable[[ClientContext, Req], Resp | Awaitable[Resp]],
    ) -> tuple[str, Handler]:
        """The path and handler of the RPC that takes ``request_type``, with the request pipeline's
        check, the fault rules and the call recorder."""
        method = path(_METHOD_OF_REQUEST[request_type.DESCRIPTOR.full_name])
        return method, unary(request_type, response_type, fn, self.check, self.faults, method, self.recorder)
