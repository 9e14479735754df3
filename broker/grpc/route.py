"""QueryRoute and QueryAssignment: the topic's queues, all served by this endpoint.

Mirrors ``org.apache.rocketmq.proxy.grpc.v2.route.RouteActivity`` in local mode: the broker's
own topic table stands for the NameServer's route (the broker registers exactly that table), and
every queue's broker endpoint is the address the client reached us at (the request's
``endpoints`` hosts) with our gRPC port, as ``convertToAddressList`` does when
``useEndpointPortFromRequest`` is off.
"""

from __future__ import annotations

from broker.controller import BrokerController
from broker.grpc.common import OK, ClientContext, StatusError, status
from broker.lite import lite_bind_topic
from broker.topic_config_manager import TopicConfigManager, TopicValidationError, validate_topic
from codec.bodies.register import PERM_READ, PERM_WRITE, TopicConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

MASTER_ID = 0  # MixAll.MASTER_ID
MESSAGE_TYPE_ATTRIBUTE = "message.type"  # TopicAttributes.TOPIC_MESSAGE_TYPE_ATTRIBUTE

# RouteActivity.parseTopicMessageType: TopicMessageType to the types a queue accepts.
_ACCEPTED_TYPES: dict[str, list[pb.MessageType]] = {
    "NORMAL": [pb.NORMAL],
    "FIFO": [pb.FIFO],
    "TRANSACTION": [pb.TRANSACTION],
    "DELAY": [pb.DELAY],
    "PRIORITY": [pb.PRIORITY],
    "LITE": [pb.LITE],
    "MIXED": [pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION],
}


def topic_message_type(topic: TopicConfig | None) -> str:
    """``TopicConfig.getTopicMessageType``: the ``message.type`` attribute, NORMAL when unset;
    UNSPECIFIED for a topic this broker does not have (``LocalMetadataService``)."""
    if topic is None:
        return "UNSPECIFIED"
    attributes = topic.attributes or {}
    value = attributes.get(MESSAGE_TYPE_ATTRIBUTE) or attributes.get("+" + MESSAGE_TYPE_ATTRIBUTE)
    return value or "NORMAL"


def accepted_types(message_type: str) -> list[pb.MessageType]:
    return _ACCEPTED_TYPES.get(message_type, [pb.MESSAGE_TYPE_UNSPECIFIED])


def permission(perm: int) -> pb.Permission:
    """``RouteActivity.convertToPermission``."""
    readable, writable = bool(perm & PERM_READ), bool(perm & PERM_WRITE)
    if readable and writable:
        return pb.READ_WRITE
    if readable:
        return pb.READ
    return pb.WRITE if writable else pb.NONE


def check_topic(resource: pb.Resource, topics: TopicConfigManager) -> str:
    """``GrpcValidator.validateTopic`` (system topics as ``TopicValidator.isSystemTopic``, with the
    ones this broker created at start); raises StatusError ILLEGAL_TOPIC."""
    name = resource.name
    if not name:
        raise StatusError(pb.ILLEGAL_TOPIC, "topic name cannot be empty")
    try:
        validate_topic(name)
    except TopicValidationError as err:
        raise StatusError(pb.ILLEGAL_TOPIC, str(err)) from None
    if topics.is_system(name):
        raise StatusError(pb.ILLEGAL_TOPIC, f"cannot access system topic: {name}")
    return name


class RouteActivity:
    """QueryRoute and QueryAssignment over the broker's topic and group tables."""

    def __init__(self, broker: BrokerController, grpc_port: int) -> None:
        self.broker = broker
        self.grpc_port = grpc_port

    def _topic(self, name: str) -> TopicConfig:
        topic = self.broker.topics.select(name)
        if topic is None:
            # What the NameServer answers (TOPIC_NOT_EXIST) and the Proxy reports.
            raise StatusError(pb.TOPIC_NOT_FOUND, f"No topic route info in name server for the topic: {name}")
        return topic

    def _broker(self, endpoints: pb.Endpoints) -> pb.Broker:
        addresses = [pb.Address(host=a.host, port=self.grpc_port) for a in endpoints.addresses]
        scheme = endpoints.scheme or pb.IPv4
        return pb.Broker(
            name=self.broker.config.broker_name,
            id=MASTER_ID,
            endpoints=pb.Endpoints(scheme=scheme, addresses=addresses),
        )

    def query_route(self, ctx: ClientContext, request: pb.QueryRouteRequest) -> pb.QueryRouteResponse:
        """``RouteActivity.queryRoute`` with ``genMessageQueueFromQueueData``: read-only queues
        first, then write-only, then read-write, then (inaccessible topic) NONE, ids in that order."""
        name = check_topic(request.topic, self.broker.topics)
        topic = self._topic(name)
        broker = self._broker(request.endpoints)
        types = accepted_types(topic_message_type(topic))
        perm = topic.perm
        read_only = write_only = read_write = none = 0
        if perm & PERM_READ and perm & PERM_WRITE:
            read_write = min(topic.write_queue_nums, topic.read_queue_nums)
            read_only = topic.read_queue_nums - read_write
            write_only = topic.write_queue_nums - read_write
        elif perm & PERM_WRITE:
            write_only = topic.write_queue_nums
        elif perm & PERM_READ:
            read_only = topic.read_queue_nums
        else:
            none = max(1, topic.write_queue_nums, topic.read_queue_nums)
        queues: list[pb.MessageQueue] = []
        for count, queue_perm in (
            (read_only, pb.READ),
            (write_only, pb.WRITE),
            (read_write, pb.READ_WRITE),
            (none, pb.NONE),
        ):
            for _ in range(count):
                queues.append(
                    pb.MessageQueue(
                        topic=request.topic,
                        id=len(queues),
                        permission=queue_perm,
                        broker=broker,
                        accept_message_types=types,
                    )
                )
        return pb.QueryRouteResponse(status=OK, message_queues=queues)

    def query_assignment(
        self, ctx: ClientContext, request: pb.QueryAssignmentRequest
    ) -> pb.QueryAssignmentResponse:
        """``RouteActivity.queryAssignment``: one queue of id -1 (any queue: POP), or every read
        queue when the group consumes orderly and is not a lite group (5.5: ``lite.bind.topic``)."""
        name = check_topic(request.topic, self.broker.topics)
        if not request.group.name:
            raise StatusError(pb.ILLEGAL_CONSUMER_GROUP, "consumer group cannot be empty")
        topic = self._topic(name)
        group = self.broker.groups.find(request.group.name)
        fifo = group is not None and group.consume_message_orderly and not lite_bind_topic(group.attributes)
        assignments: list[pb.Assignment] = []
        if topic.perm & PERM_READ and topic.read_queue_nums > 0:
            broker = self._broker(request.endpoints)
            queue_perm = permission(topic.perm)
            ids = range(topic.read_queue_nums) if fifo else [-1]
            assignments = [
                pb.Assignment(
                    message_queue=pb.MessageQueue(
                        topic=request.topic, id=i, permission=queue_perm, broker=broker
                    )
                )
                for i in ids
            ]
        if not assignments:
            return pb.QueryAssignmentResponse(status=status(pb.FORBIDDEN, "no readable queue"))
        return pb.QueryAssignmentResponse(status=OK, assignments=assignments)
