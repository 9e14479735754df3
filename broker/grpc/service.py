"""The method table of apache.rocketmq.v2.MessagingService for this broker.

Mirrors ``GrpcMessagingApplication``: each RPC path to the activity that answers it. The RPCs not
listed here are answered UNIMPLEMENTED by the transport; see docs/grpc.md for which they are.
"""

from __future__ import annotations

from broker.controller import BrokerController
from broker.grpc.client import ClientActivity
from broker.grpc.common import Handler, unary
from broker.grpc.consumer import ConsumerActivity
from broker.grpc.route import RouteActivity
from broker.grpc.send import SendActivity
from broker.grpc.transaction import TransactionActivity
from broker.pop.processor import PopProcessor
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

SERVICE = "apache.rocketmq.v2.MessagingService"


def path(method: str) -> str:
    return f"/{SERVICE}/{method}"


class MessagingService:
    """The activities over one broker; ``methods`` is what the gRPC server serves."""

    def __init__(self, broker: BrokerController, grpc_port: int, pop: PopProcessor | None = None) -> None:
        """``pop``: the broker's POP processor, which the consuming RPCs hand their work to; without
        it they are answered UNIMPLEMENTED."""
        self.route = RouteActivity(broker, grpc_port)
        self.clients = ClientActivity(broker)
        self.transactions = TransactionActivity(broker, self.clients.sessions)
        self.clients.peer_for = self.transactions.peer_for
        self.send = SendActivity(broker, self.transactions)
        self.consumer = ConsumerActivity(broker, pop, self.clients.settings_of) if pop is not None else None

    @property
    def methods(self) -> dict[str, Handler]:
        methods = self._methods()
        consumer = self.consumer
        if consumer is not None:
            methods[path("ReceiveMessage")] = consumer.receive_message
            methods[path("AckMessage")] = unary(
                pb.AckMessageRequest, pb.AckMessageResponse, consumer.ack_message
            )
            methods[path("ChangeInvisibleDuration")] = unary(
                pb.ChangeInvisibleDurationRequest,
                pb.ChangeInvisibleDurationResponse,
                consumer.change_invisible_duration,
            )
            methods[path("ForwardMessageToDeadLetterQueue")] = unary(
                pb.ForwardMessageToDeadLetterQueueRequest,
                pb.ForwardMessageToDeadLetterQueueResponse,
                consumer.forward_message_to_dead_letter_queue,
            )
        return methods

    def _methods(self) -> dict[str, Handler]:
        return {
            path("QueryRoute"): unary(pb.QueryRouteRequest, pb.QueryRouteResponse, self.route.query_route),
            path("QueryAssignment"): unary(
                pb.QueryAssignmentRequest, pb.QueryAssignmentResponse, self.route.query_assignment
            ),
            path("Heartbeat"): unary(pb.HeartbeatRequest, pb.HeartbeatResponse, self.clients.heartbeat),
            path("NotifyClientTermination"): unary(
                pb.NotifyClientTerminationRequest,
                pb.NotifyClientTerminationResponse,
                self.clients.notify_client_termination,
            ),
            path("Telemetry"): self.clients.telemetry,
            path("SendMessage"): unary(pb.SendMessageRequest, pb.SendMessageResponse, self.send.send_message),
            path("RecallMessage"): unary(
                pb.RecallMessageRequest, pb.RecallMessageResponse, self.send.recall_message
            ),
            path("EndTransaction"): unary(
                pb.EndTransactionRequest, pb.EndTransactionResponse, self.transactions.end_transaction
            ),
        }
