"""The priority part of ``compat_tests/test_grpc55_compat.py``: the topics, the backlog the
Python gRPC client sends and the order it must come back in, and raw SendMessage / QueryRoute
calls (``docs/priority.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message as ProtoMessage

from compat_tests.grpc_targets import Endpoint
from compat_tests.pop_raw import wait_route
from compat_tests.reference import run_mqadmin
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

VERSION = "5.5.0"
SERVICE = "/apache.rocketmq.v2.MessagingService/"
METADATA = (("x-mq-client-id", "priority-check"), ("x-mq-language", "PYTHON"), ("x-mq-protocol", "v2"))
PRIORITY_TOPIC = "PrioGrpc"
PRIORITY_NORMAL_TOPIC = "PrioGrpcNormal"
PRIORITY_GROUP = "PrioGrpcGroup"
QUEUES = 4
#: Sent in this order as m0, m1, ...; received highest queue first, FIFO within a queue
#: (priority 7 is stored in the last queue, 3).
PRIORITIES = ["0", "3", "1", "7", "2", "0", "3", "1", "2"]
EXPECTED = [("m1", "3"), ("m3", "7"), ("m6", "3"), ("m4", "2"), ("m8", "2"), ("m2", "1"), ("m7", "1")]
EXPECTED += [("m0", "0"), ("m5", "0")]
R = TypeVar("R", bound=ProtoMessage)


def create_priority_topics(endpoint: Endpoint, home: Path) -> None:
    """A priority topic and a normal one, made with the 5.5.0 tools."""
    for topic, attributes in (
        (PRIORITY_TOPIC, ("-a", "+message.type=PRIORITY")),
        (PRIORITY_NORMAL_TOPIC, ()),
    ):
        out = run_mqadmin(
            endpoint.namesrv_addr,
            *("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", str(QUEUES), "-w", str(QUEUES)),
            *attributes,
            home=home,
            version=VERSION,
        )
        assert "success" in out, out
        wait_route(endpoint.namesrv_addr, topic)


def call(endpoint: Endpoint, method: str, request: ProtoMessage, response_type: type[R]) -> R:
    with grpc.insecure_channel(endpoint.grpc_addr) as channel:
        rpc = channel.unary_unary(
            SERVICE + method,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response_type.FromString,
        )
        return rpc(request, metadata=METADATA, timeout=30)  # type: ignore[no-any-return]


def send_priority(endpoint: Endpoint, topic: str, message_id: str, **system: Any) -> tuple[int, str]:
    """One raw SendMessage; its (code, message). A message id containing "user" carries the
    priority as a user property instead."""
    props = pb.SystemProperties(message_id=message_id, body_encoding=pb.IDENTITY, **system)
    props.born_timestamp.GetCurrentTime()
    sent = pb.Message(topic=pb.Resource(name=topic), body=b"raw", system_properties=props)
    if "user" in message_id:
        sent.user_properties["_SYS_MSG_PRIORITY_"] = "1"
    answer = call(endpoint, "SendMessage", pb.SendMessageRequest(messages=[sent]), pb.SendMessageResponse)
    return answer.status.code, answer.status.message
