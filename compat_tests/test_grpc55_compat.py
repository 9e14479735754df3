"""RocketMQ 5.5 over gRPC, lite topics and priority messages, on our gateway and on Apache RocketMQ
5.5.0's Proxy (cluster mode, its NameServer and a broker with ``enableLmq`` and
``enableMultiDispatch``, from Maven Central's jars), one start of each for the module.

The Python gRPC client (rocketmq-python-client 5.1.2, unmodified): a LitePushConsumer
subscribed to 2 of 4 lite topics gets exactly their messages, in send order within each lite
topic, and nothing of a lite topic after ``unsubscribe_lite``, on both. Raw SyncLiteSubscription
calls get the same refusals from both too. (The client 5.1.2's
``subscribe_lite`` sends the characters of the name rather than the name; the subscription is
right from the client's periodic full sync on, within 30 s, on both.) Raw SendMessage calls get
the same refusals from both. A LiteSimpleConsumer receives its lite topic on ours (as 5.5.1
serves it); the 5.5.0 Proxy refuses that client type's settings, so there the client's own
quota check (0 lite topics) refuses ``subscribe_lite`` (``docs/lite.md``).

After the push scenario, the six lite subcommands of the 5.5.0 ``mqadmin`` (getBrokerLiteInfo,
getParentTopicInfo, getLiteTopicInfo, getLiteClientInfo, getLiteGroupInfo, triggerLiteDispatch)
print the same lines on both, times aside, and raw lite admin requests get the same refusals.

The real 5.5.0 Proxy in cluster mode in front of our NameServer and broker (its own fixture, near
the end of the module) serves the same push scenario with the same assertions: our broker answers
the Proxy's remoting lite codes (``docs/lite.md``). An exclusive lite group's takeover gets the
same oneway NOTIFY_UNSUBSCRIBE_LITE from our broker and from the 5.5.0 one (raw frames).

Ours runs with ``brokerVersion=5.5.0`` in this module (behind the Proxy too).

Priority (``docs/priority.md``): the Python client sends a backlog of mixed priorities and a
SimpleConsumer receives it in the same order from both, each message with its priority and the
type PRIORITY; raw SendMessage and QueryRoute calls get the same answers from both, refusals
included.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from codec.codes import ResponseCode
from compat_tests.grpc_targets import Endpoint, start_cluster_reference, start_ours
from compat_tests.lite55_admin import (
    ADMIN_CLIENT,
    ADMIN_LMQS,
    EXPECTED_ADMIN,
    EXPECTED_REFUSALS,
    NORMAL_TOPIC,
    PARENT,
    PUSH_GROUP,
    SIMPLE_GROUP,
    SIMPLE_PARENT,
    admin_outputs,
    lite_admin_refusals,
    normalized,
    subscribe_over_remoting,
)
from compat_tests.lite55_notify import SOLO_ATTRIBUTES, SOLO_GROUP, exclusive_takeover
from compat_tests.pop_raw import wait_route
from compat_tests.priority55_grpc import (
    EXPECTED,
    PRIORITIES,
    PRIORITY_GROUP,
    PRIORITY_NORMAL_TOPIC,
    PRIORITY_TOPIC,
    call,
    create_priority_topics,
    send_priority,
)
from compat_tests.reference import ReferenceServers, free_port, run_mqadmin
from compat_tests.scenario import TEST_JVM_OPTIONS
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

VERSION = "5.5.0"
REPO = Path(__file__).resolve().parent.parent
SERVICE = "/apache.rocketmq.v2.MessagingService/"
METADATA = (("x-mq-client-id", "lite-check"), ("x-mq-language", "PYTHON"), ("x-mq-protocol", "v2"))
ROUNDS = 3
LMQ_CONF = {"enableLmq": "true", "enableMultiDispatch": "true"}


@pytest.fixture(scope="module", params=("ours", f"reference-{VERSION}"))
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    workdir = tmp_path_factory.mktemp(request.param)
    if request.param == "ours":
        ours = start_ours(workdir, {**LMQ_CONF, "brokerVersion": VERSION})
        try:
            endpoint = Endpoint("ours", ours.grpc_addr, ours.namesrv_addr)
            create_resources(endpoint, workdir)
            create_priority_topics(endpoint, workdir)
            yield endpoint
        finally:
            ours.stop()
    else:
        endpoint, servers = start_cluster_reference(workdir, VERSION, LMQ_CONF)
        try:
            create_resources(endpoint, workdir)
            create_priority_topics(endpoint, workdir)
            yield endpoint
        finally:
            servers.stop(kill=True)


def mqadmin(endpoint: Endpoint, home: Path, *args: str) -> None:
    out = run_mqadmin(endpoint.namesrv_addr, *args, home=home, version=VERSION)
    assert "success" in out, out


def create_resources(endpoint: Endpoint, home: Path) -> None:
    """Two LITE parent topics, a normal topic and a group bound to each parent, with 5.5.0's tools."""
    for topic, attributes in (
        (PARENT, ("-a", "+message.type=LITE")),
        (SIMPLE_PARENT, ("-a", "+message.type=LITE")),
        (NORMAL_TOPIC, ()),
    ):
        queues = ("-r", "4", "-w", "4")
        mqadmin(endpoint, home, "updateTopic", "-c", "DefaultCluster", "-t", topic, *queues, *attributes)
        wait_route(endpoint.namesrv_addr, topic)
    # The push group is orderly: its settings say fifo, so the client consumes a batch in order
    # (else its thread pool may print two messages of one lite topic's batch swapped).
    for group, parent, orderly in ((PUSH_GROUP, PARENT, "true"), (SIMPLE_GROUP, SIMPLE_PARENT, "false")):
        mqadmin(
            endpoint, home, "updateSubGroup", "-c", "DefaultCluster", "-g", group, "-o", orderly,
            "--attributes", f"+lite.bind.topic={parent}",
        )  # fmt: skip


def send(endpoint: Endpoint, topic: str, message_id: str, lite_topic: str | None) -> tuple[int, str]:
    """One raw SendMessage; its (code, message)."""
    props = pb.SystemProperties(message_id=message_id, body_encoding=pb.IDENTITY)
    props.message_type = pb.LITE if lite_topic is not None else pb.NORMAL
    if lite_topic is not None:
        props.lite_topic = lite_topic
    props.born_timestamp.GetCurrentTime()
    sent = pb.Message(topic=pb.Resource(name=topic), body=b"raw", system_properties=props)
    with grpc.insecure_channel(endpoint.grpc_addr) as channel:
        rpc = channel.unary_unary(
            SERVICE + "SendMessage",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.SendMessageResponse.FromString,
        )
        answer = rpc(pb.SendMessageRequest(messages=[sent]), metadata=METADATA, timeout=30)
    return answer.status.code, answer.status.message


def sync(
    endpoint: Endpoint,
    topic: str,
    group: str,
    *lite_topics: str,
    metadata: tuple[tuple[str, str], ...] = METADATA,
) -> tuple[int, str]:
    """One raw SyncLiteSubscription (PARTIAL_ADD); its (code, message)."""
    request = pb.SyncLiteSubscriptionRequest(
        action=pb.PARTIAL_ADD,
        topic=pb.Resource(name=topic),
        group=pb.Resource(name=group),
        lite_topic_set=lite_topics,
    )
    with grpc.insecure_channel(endpoint.grpc_addr) as channel:
        rpc = channel.unary_unary(
            SERVICE + "SyncLiteSubscription",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.SyncLiteSubscriptionResponse.FromString,
        )
        answer = rpc(request, metadata=metadata, timeout=30)
    return answer.status.code, answer.status.message


def python_client(module: str, *args: str, home: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """One of the Python 5.x client scripts (``compat_tests.<module>``) as its own process."""
    return subprocess.run(
        [sys.executable, "-m", f"compat_tests.{module}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "HOME": str(home)},
        check=False,
    )


def run_scenario(target: Endpoint, tmp_path: Path, mode: str, topic: str, group: str) -> list[str]:
    args = (mode, target.grpc_addr, topic, group, str(ROUNDS))
    result = python_client("grpc_python_lite", *args, home=tmp_path, timeout=240)
    lines = result.stdout.splitlines()
    assert lines, result.stderr[-2000:]
    assert lines[-1] == "DONE", result.stdout + result.stderr[-2000:]
    return lines


def test_refusals_of_lite_sends(target: Endpoint) -> None:
    conflict = (
        "org.apache.rocketmq.proxy.common.ProxyException:"
        " TopicMessageType validate failed, the expected type is {}, but actual type is {}"
    )
    answers = {
        "lite on a normal topic": send(target, NORMAL_TOPIC, "lite-normal", "l0"),
        "normal on a lite topic": send(target, PARENT, "normal-lite", None),
        "illegal lite topic": send(target, PARENT, "illegal", "l0.x"),
        "long lite topic": send(target, PARENT, "long", "x" * 65),
    }
    assert answers == {
        "lite on a normal topic": (pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, conflict.format("NORMAL", "LITE")),
        "normal on a lite topic": (pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, conflict.format("LITE", "NORMAL")),
        "illegal lite topic": (
            pb.ILLEGAL_LITE_TOPIC,
            "lite topic can only contain alphanumeric characters, hyphens(-), and underscores(_)",
        ),
        "long lite topic": (pb.ILLEGAL_LITE_TOPIC, "lite topic exceed the max size 64"),
    }


def test_refusals_of_lite_subscriptions(target: Endpoint) -> None:
    too_many = [f"t{i}" for i in range(2000 + 300 + 1)]  # the default quota and the Proxy's buffer
    answers = {
        "another topic": sync(target, NORMAL_TOPIC, PUSH_GROUP, "l9"),
        "illegal lite topic": sync(target, PARENT, PUSH_GROUP, "l9.x"),
        "too many": sync(target, PARENT, PUSH_GROUP, *too_many),
    }
    assert answers == {
        "another topic": (
            pb.ILLEGAL_TOPIC,
            f"lite group {PUSH_GROUP} is expected to bind topic {PARENT}, but actual is {NORMAL_TOPIC}",
        ),
        "illegal lite topic": (
            pb.ILLEGAL_LITE_TOPIC,
            "lite topic can only contain alphanumeric characters, hyphens(-), and underscores(_)",
        ),
        "too many": (pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED, "lite subscription quota exceeded: 2000"),
    }


@pytest.fixture(scope="module")
def pushed(target: Endpoint, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The push scenario's lines, run once per target: the lite traffic the admin test reads."""
    return run_scenario(target, tmp_path_factory.mktemp("push"), "push", PARENT, PUSH_GROUP)


def test_lite_push_consumer_gets_its_lite_topics_in_order_and_none_after_unsubscribing(
    pushed: list[str],
) -> None:
    assert_lite_push_order(pushed)


def test_lite_admin_subcommands(target: Endpoint, pushed: list[str], tmp_path: Path) -> None:
    """After the push scenario and a raw subscription of ADMIN_CLIENT: the six 5.5.0 lite
    subcommands print the same on both (times aside), raw requests get the same refusals, and
    LITE_SUBSCRIPTION_CTL changes a client's lite topics as GET_LITE_CLIENT_INFO then shows."""
    assert pushed[-1] == "DONE"
    metadata = (("x-mq-client-id", ADMIN_CLIENT), *METADATA[1:])
    assert sync(target, PARENT, PUSH_GROUP, "l0", "l2", "l9", metadata=metadata)[0] == pb.OK
    outputs = {
        name: normalized(name, text) for name, text in admin_outputs(target.namesrv_addr, tmp_path).items()
    }
    # A Java set prints in hash order: the client's lite topics are compared as a set.
    client = outputs["client"]
    assert client[3].startswith("Lite Topics: ["), client
    assert set(client[3][len("Lite Topics: [") : -1].split(", ")) == ADMIN_LMQS, client
    client[3] = "LITE TOPICS"
    assert outputs == EXPECTED_ADMIN
    broker_addr = wait_route(target.namesrv_addr, PARENT)
    assert lite_admin_refusals(broker_addr) == EXPECTED_REFUSALS
    success = (ResponseCode.SUCCESS, None)
    assert subscribe_over_remoting(broker_addr) == {
        "add": success,
        "remove": success,
        "add again": success,
        "liteTopicCount": 2,
        "liteTopicSet": [f"%LMQ%${PARENT}$l1", f"%LMQ%${PARENT}$l3"],
        "lastAccessTime set": True,
    }


def test_lite_simple_consumer(target: Endpoint, tmp_path: Path) -> None:
    lines = run_scenario(target, tmp_path, "simple", SIMPLE_PARENT, SIMPLE_GROUP)
    received = [tuple(line.split()[1:]) for line in lines if line.startswith("RECEIVED")]
    if target.name == "ours":
        assert received == [("l0", f"l0-{i}") for i in range(ROUNDS)], "\n".join(lines)
    else:
        # 5.5.0's Proxy refuses the client type's settings ("Client type is not consumer"), so
        # the client keeps its quota of 0 lite topics and refuses subscribe_lite itself.
        assert received == [], "\n".join(lines)
        failed = [line for line in lines if line.startswith("FAILED")]
        assert len(failed) == 1, "\n".join(lines)
        assert failed[0].startswith(
            "FAILED LiteSubscriptionQuotaExceededException 42902, Lite subscription exceed quota: 0"
        ), "\n".join(lines)


# --- The Java gRPC client 5.1.0 (compat_tests/java/grpc51, rmqgrpc51.LitePush) ------------------
# Its own LITE parent and groups, made on the module's targets the first time a test here asks.

JAVA_CLIENT = REPO / "compat_tests" / "java" / "grpc51" / "target"
JAVA_PARENT = "LiteChatsJava"
JAVA_PUSH_GROUP = "LiteJavaPushGroup"
JAVA_QUOTA_GROUP = "LiteJavaQuotaGroup"
JAVA_QUOTA = 2  # lite.sub.client.quota of JAVA_QUOTA_GROUP
JAVA_RUN_S = 90  # the scenario's own deadline
JAVA_TIMEOUT_S = JAVA_RUN_S + 60.0  # and the JVM's start and the client's shutdown on a busy machine


@pytest.fixture(scope="module")
def java_target(target: Endpoint, tmp_path_factory: pytest.TempPathFactory) -> Endpoint:
    """The module's target with JAVA_PARENT, an orderly group bound to it and one with a quota."""
    home = tmp_path_factory.mktemp(f"java-{target.name}")
    topic = ("-c", "DefaultCluster", "-t", JAVA_PARENT, "-r", "4", "-w", "4", "-a", "+message.type=LITE")
    mqadmin(target, home, "updateTopic", *topic)
    wait_route(target.namesrv_addr, JAVA_PARENT)
    bind = f"+lite.bind.topic={JAVA_PARENT}"
    for group, attributes in (
        (JAVA_PUSH_GROUP, bind),
        (JAVA_QUOTA_GROUP, f"{bind},+lite.sub.client.quota={JAVA_QUOTA}"),
    ):
        mqadmin(
            target, home, "updateSubGroup", "-c", "DefaultCluster", "-g", group, "-o", "true",
            "--attributes", attributes,
        )  # fmt: skip
    return target


def run_java_lite(target: Endpoint, tmp_path: Path, mode: str, group: str, count: int) -> list[str]:
    """rmqgrpc51.LitePush on the target; its outcome lines, DONE last."""
    if not (JAVA_CLIENT / "classes" / "rmqgrpc51" / "LitePush.class").is_file():
        pytest.fail("the 5.1.0 gRPC client scenarios are missing: run scripts/setup-java.sh")
    result = subprocess.run(
        [
            "java",
            "-Xmx128m",
            *TEST_JVM_OPTIONS,
            f"-Duser.home={tmp_path}",
            *("-cp", f"{JAVA_CLIENT / 'classes'}{os.pathsep}{JAVA_CLIENT / 'lib'}/*"),
            "rmqgrpc51.LitePush",
            *(target.grpc_addr, mode, JAVA_PARENT, group, str(count), str(JAVA_RUN_S)),
        ],
        capture_output=True,
        text=True,
        timeout=JAVA_TIMEOUT_S,
        env={**os.environ, "HOME": str(tmp_path)},
        check=False,
    )
    lines = [line for line in result.stdout.splitlines() if line.split(" ", 1)[0].isupper()]
    assert lines, f"no outcome (exit {result.returncode}):\n{result.stderr[-3000:]}"
    assert lines[-1] == "DONE", result.stdout + result.stderr[-3000:]
    return lines


def assert_lite_push_order(lines: list[str]) -> None:
    """A lite push scenario's outcome: no failure, exactly the subscribed lite topics, each in send
    order, and l1 nothing after unsubscribing."""
    failed = [line for line in lines if line.startswith("FAILED")]
    assert failed == [], "\n".join(lines)
    received = [tuple(line.split()[1:]) for line in lines if line.startswith("RECEIVED")]
    by_lite = {lite: [body for got_lite, body in received if got_lite == lite] for lite, _ in received}
    assert by_lite == {
        "l0": [f"l0-{i}" for i in range(ROUNDS)] + ["l0-after"],
        "l1": [f"l1-{i}" for i in range(ROUNDS)],
    }, "\n".join(lines)


def test_java_lite_push_consumer_gets_its_lite_topics_in_order_and_none_after_unsubscribing(
    java_target: Endpoint, tmp_path: Path
) -> None:
    lines = run_java_lite(java_target, tmp_path, "push", JAVA_PUSH_GROUP, ROUNDS)
    assert_lite_push_order(lines)
    assert lines.index("UNSUBSCRIBED l1") > max(lines.index(f"RECEIVED l1 l1-{i}") for i in range(ROUNDS))


def test_java_lite_subscription_beyond_the_group_quota(java_target: Endpoint, tmp_path: Path) -> None:
    """The settings carry the group's quota; the client refuses the subscription beyond it."""
    lines = run_java_lite(java_target, tmp_path, "quota", JAVA_QUOTA_GROUP, JAVA_QUOTA + 2)
    assert lines == [
        *(f"SUBSCRIBED q{i}" for i in range(JAVA_QUOTA)),
        "QUOTA_EXCEEDED org.apache.rocketmq.client.java.exception.LiteSubscriptionQuotaExceededException"
        f" [request-id=null, response-code=42902] Lite subscription quota exceeded {JAVA_QUOTA}",
        "DONE",
    ]


# --- Priority messages (the Python client 5.1.2) -----------------------------------------------


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
        "priority on a normal topic": send_priority(
            target, PRIORITY_NORMAL_TOPIC, "prio-normal", message_type=pb.PRIORITY, priority=1
        ),
        "normal on a priority topic": send_priority(
            target, PRIORITY_TOPIC, "normal-prio", message_type=pb.NORMAL
        ),
        "negative priority": send_priority(
            target, PRIORITY_TOPIC, "negative", message_type=pb.PRIORITY, priority=-1
        ),
        "priority as a user property": send_priority(
            target, PRIORITY_TOPIC, "user-prop", message_type=pb.PRIORITY
        ),
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
    args = (target.grpc_addr, PRIORITY_TOPIC, PRIORITY_GROUP, *PRIORITIES)
    result = python_client("grpc_python_priority", *args, home=tmp_path, timeout=180)
    lines = result.stdout.splitlines()
    received = [tuple(line.split()[1:]) for line in lines if line.startswith("RECEIVED")]
    assert received == EXPECTED, result.stdout + result.stderr[-2000:]
    types = [tuple(line.split()[1:]) for line in lines if line.startswith("TYPE")]
    assert types == [(body, str(pb.PRIORITY)) for body, _ in EXPECTED], result.stdout
    assert lines[-1] == "DONE", result.stdout


# -- The 5.5.0 Proxy in cluster mode in front of our NameServer and broker -------------------------


@pytest.fixture(scope="module")
def proxy_over_ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    """The real 5.5.0 Proxy (cluster mode) whose NameServer is ours: it reaches our broker over
    remoting (LITE_SUBSCRIPTION_CTL, POP_LITE_MESSAGE, ACK_MESSAGE with a lite topic, ...)."""
    workdir = tmp_path_factory.mktemp("proxy-over-ours")
    ours = start_ours(workdir / "ours", {**LMQ_CONF, "brokerVersion": VERSION})
    servers: ReferenceServers | None = None
    try:
        namesrv_port = int(ours.namesrv_addr.rsplit(":", 1)[1])
        proxy_home = workdir / "proxy"
        proxy_home.mkdir()
        servers = dataclasses.replace(
            ReferenceServers.on_loopback(proxy_home, version=VERSION), namesrv_port=namesrv_port
        )
        servers.checks_exits = True
        grpc_port = free_port()
        servers.start_cluster_proxy(grpc_port, free_port())
        endpoint = Endpoint("proxy-over-ours", f"127.0.0.1:{grpc_port}", ours.namesrv_addr)
        create_resources(endpoint, workdir)
        yield endpoint
    finally:
        if servers is not None:
            servers.stop(kill=True)
        ours.stop()


def test_proxy_over_ours_serves_the_lite_push_consumer_its_lite_topics_in_order_and_none_after_unsubscribing(
    proxy_over_ours: Endpoint, tmp_path: Path
) -> None:
    """The scenario of the test above, through the 5.5.0 Proxy in front of our broker: the same
    assertions."""
    lines = run_scenario(proxy_over_ours, tmp_path, "push", PARENT, PUSH_GROUP)
    assert_lite_push_order(lines)


def test_an_exclusive_lite_takeover_tells_the_other_client_over_remoting(
    target: Endpoint, tmp_path: Path
) -> None:
    """NOTIFY_UNSUBSCRIBE_LITE: the broker's oneway notice to the connection of the client that
    lost a lite topic to another client of its exclusive group (raw frames, as two Proxies)."""
    mqadmin(
        target, tmp_path, "updateSubGroup", "-c", "DefaultCluster", "-g", SOLO_GROUP, "-o", "true",
        "--attributes", SOLO_ATTRIBUTES,
    )  # fmt: skip
    broker_addr = wait_route(target.namesrv_addr, PARENT)
    assert exclusive_takeover(broker_addr) == {
        "add a": ResponseCode.SUCCESS,
        "add b": ResponseCode.SUCCESS,
        "notices to a": [("solo-a", SOLO_GROUP, "l7", True)],
        "notices to b": [],
    }
