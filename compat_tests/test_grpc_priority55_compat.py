"""Priority messages over gRPC on our gateway and on Apache RocketMQ 5.5.0's Proxy (cluster mode,
its NameServer and broker from Maven Central's jars), one start of each for the module.

The Python gRPC client (rocketmq-python-client 5.1.2, unmodified) sends a backlog of mixed
priorities and a SimpleConsumer receives it in the same order from both, each message with its
priority and the type PRIORITY; raw SendMessage and
QueryRoute calls get the same answers from both, refusals included (``docs/priority.md``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from google.protobuf.message import Message as ProtoMessage

from compat_tests.grpc_targets import Endpoint, start_cluster_reference, start_ours
from compat_tests.pop_raw import wait_route
from compat_tests.reference import run_mqadmin
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

VERSION = "5.5.0"
REPO = Path(__file__).resolve().parent.parent
SERVICE = "/apache.rocketmq.v2.MessagingService/"
METADATA = (("x-mq-client-id", "priority-check"), ("x-mq-language", "PYTHON"), ("x-mq-protocol", "v2"))
PRIORITY_TOPIC = "PrioGrpc"
NORMAL_TOPIC = "PrioGrpcNormal"
QUEUES = 4
# Sent in this order as m0, m1, ...; received highest queue first, FIFO within a queue
# (priority 7 is stored in the last queue, 3).
PRIORITIES = ["0", "3", "1", "7", "2", "0", "3", "1", "2"]
EXPECTED = [("m1", "3"), ("m3", "7"), ("m6", "3"), ("m4", "2"), ("m8", "2"), ("m2", "1"), ("m7", "1")]
EXPECTED += [("m0", "0"), ("m5", "0")]
R = TypeVar("R", bound=ProtoMessage)


@pytest.fixture(scope="module", params=("ours", f"reference-{VERSION}"))
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    workdir = tmp_path_factory.mktemp(request.param)
    if request.param == "ours":
        ours = start_ours(workdir)
        try:
            endpoint = Endpoint("ours", ours.grpc_addr, ours.namesrv_addr)
            create_topics(endpoint, workdir)
            yield endpoint
        finally:
            ours.stop()
    else:
        endpoint, servers = start_cluster_reference(workdir, VERSION)
        try:
            create_topics(endpoint, workdir)
            yield endpoint
        finally:
            servers.stop(kill=True)


def create_topics(endpoint: Endpoint, home: Path) -> None:
    """A priority topic and a normal one, made with the 5.5.0 tools."""
    for topic, attributes in ((PRIORITY_TOPIC, ("-a", "+message.type=PRIORITY")), (NORMAL_TOPIC, ())):
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


def send(endpoint: Endpoint, topic: str, message_id: str, **system: Any) -> tuple[int, str]:
    """One raw SendMessage; its (code, message)."""
    props = pb.SystemProperties(message_id=message_id, body_encoding=pb.IDENTITY, **system)
    props.born_timestamp.GetCurrentTime()
    sent = pb.Message(topic=pb.Resource(name=topic), body=b"raw", system_properties=props)
    if "user" in message_id:
        sent.user_properties["_SYS_MSG_PRIORITY_"] = "1"
    answer = call(endpoint, "SendMessage", pb.SendMessageRequest(messages=[sent]), pb.SendMessageResponse)
    return answer.status.code, answer.status.message


def test_route_of_a_priority_topic(target: Endpoint) -> None:
    endpoints = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=1)])
    request = pb.QueryRouteRequest(topic=pb.Resource(name=PRIORITY_TOPIC), endpoints=endpoints)
    route = call(target, "QueryRoute", request, pb.QueryRouteResponse)
    assert route.status.code == pb.OK, route.status
    assert {tuple(q.accept_message_types) for q in route.message_queues} == {(pb.PRIORITY,)}


def test_refusals_of_priority_sends(target: Endpoint) -> None:
    conflict = (
        "org.apache.rocketmq.proxy.common.ProxyException:"
        " TopicMessageType validate failed, the expected type is {}, but actual type is {}"
    )
    answers = {
        "priority on a normal topic": send(
            target, NORMAL_TOPIC, "prio-normal", message_type=pb.PRIORITY, priority=1
        ),
        "normal on a priority topic": send(target, PRIORITY_TOPIC, "normal-prio", message_type=pb.NORMAL),
        "negative priority": send(target, PRIORITY_TOPIC, "negative", message_type=pb.PRIORITY, priority=-1),
        "priority as a user property": send(target, PRIORITY_TOPIC, "user-prop", message_type=pb.PRIORITY),
    }
    assert answers == {
        "priority on a normal topic": (
            pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
            conflict.format("NORMAL", "PRIORITY"),
        ),
        "normal on a priority topic": (
            pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
            conflict.format("PRIORITY", "NORMAL"),
        ),
        "negative priority": (
            pb.INTERNAL_SERVER_ERROR,
            "The priority must be greater than or equal to 0. IllegalArgumentException."
            " org.apache.rocketmq.common.message.Message.setPriority(Message.java:161)",
        ),
        "priority as a user property": (
            pb.ILLEGAL_MESSAGE_PROPERTY_KEY,
            "property is used by system: _SYS_MSG_PRIORITY_",
        ),
    }


def test_python_client_backlog_comes_back_highest_priority_first(target: Endpoint, tmp_path: Path) -> None:
    """Sent after the refusals, which stored nothing: the backlog is these nine messages only."""
    result = subprocess.run(
        [
            sys.executable,
            *("-m", "compat_tests.grpc_python_priority", target.grpc_addr, PRIORITY_TOPIC, "PrioGrpcGroup"),
            *PRIORITIES,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
        env={**os.environ, "HOME": str(tmp_path)},
        check=False,
    )
    lines = result.stdout.splitlines()
    received = [tuple(line.split()[1:]) for line in lines if line.startswith("RECEIVED")]
    assert received == EXPECTED, result.stdout + result.stderr[-2000:]
    types = [tuple(line.split()[1:]) for line in lines if line.startswith("TYPE")]
    assert types == [(body, str(pb.PRIORITY)) for body, _ in EXPECTED], result.stdout
    assert lines[-1] == "DONE", result.stdout
