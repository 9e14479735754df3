"""Lite topics over gRPC on our gateway and on Apache RocketMQ 5.5.0's Proxy (cluster mode, its
NameServer and a broker with ``enableLmq`` and ``enableMultiDispatch``, from Maven Central's
jars), one start of each for the module.

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
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import trio

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import CustomHeader
from codec.headers.lite import (
    GetLiteClientInfoRequestHeader,
    GetLiteGroupInfoRequestHeader,
    GetLiteTopicInfoRequestHeader,
    GetParentTopicInfoRequestHeader,
    TriggerLiteDispatchRequestHeader,
)
from compat_tests.grpc_targets import start_ours
from compat_tests.mqadmin_batch import mqadmin_batch
from compat_tests.pop_raw import wait_route
from compat_tests.reference import REFERENCE_LIBS, ReferenceServers, free_port, run_mqadmin
from gateway.transport.client import connect
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

VERSION = "5.5.0"
REPO = Path(__file__).resolve().parent.parent
SERVICE = "/apache.rocketmq.v2.MessagingService/"
METADATA = (("x-mq-client-id", "lite-check"), ("x-mq-language", "PYTHON"), ("x-mq-protocol", "v2"))
PARENT = "LiteChats"
SIMPLE_PARENT = "LiteChatsSimple"
NORMAL_TOPIC = "LiteNormal"
PUSH_GROUP = "LitePushGroup"
SIMPLE_GROUP = "LiteSimpleGroup"
ROUNDS = 3
LMQ_CONF = {"enableLmq": "true", "enableMultiDispatch": "true"}


@dataclass
class Endpoint:
    name: str
    grpc_addr: str
    namesrv_addr: str


def start_reference(workdir: Path) -> tuple[Endpoint, ReferenceServers]:
    if not REFERENCE_LIBS[VERSION].is_dir():
        pytest.fail("the 5.5.0 reference jars are missing: run scripts/setup-java.sh")
    extra_conf = tuple(f"{k}={v}" for k, v in LMQ_CONF.items())
    servers = ReferenceServers.on_loopback(workdir, version=VERSION, extra_conf=extra_conf)
    servers.checks_exits = True
    try:
        servers.start_namesrv()
        servers.start_broker()
        servers.wait_registered()
        grpc_port = free_port()
        servers.start_cluster_proxy(grpc_port, free_port())
    except BaseException:
        servers.stop(kill=True)
        raise
    return Endpoint("reference", f"127.0.0.1:{grpc_port}", servers.namesrv_addr), servers


@pytest.fixture(scope="module", params=("ours", f"reference-{VERSION}"))
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    workdir = tmp_path_factory.mktemp(request.param)
    if request.param == "ours":
        ours = start_ours(workdir, LMQ_CONF)
        try:
            endpoint = Endpoint("ours", ours.grpc_addr, ours.namesrv_addr)
            create_resources(endpoint, workdir)
            yield endpoint
        finally:
            ours.stop()
    else:
        endpoint, servers = start_reference(workdir)
        try:
            create_resources(endpoint, workdir)
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


def run_scenario(target: Endpoint, tmp_path: Path, mode: str, topic: str, group: str) -> list[str]:
    result = subprocess.run(
        [
            sys.executable,
            *("-m", "compat_tests.grpc_python_lite", mode, target.grpc_addr, topic, group, str(ROUNDS)),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO,
        env={**os.environ, "HOME": str(tmp_path)},
        check=False,
    )
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
    lines = pushed
    failed = [line for line in lines if line.startswith("FAILED")]
    assert failed == [], "\n".join(lines)
    received = [tuple(line.split()[1:]) for line in lines if line.startswith("RECEIVED")]
    by_lite = {lite: [body for got_lite, body in received if got_lite == lite] for lite, _ in received}
    # Exactly the subscribed lite topics, each in send order; l1 nothing after unsubscribing.
    assert by_lite == {
        "l0": [f"l0-{i}" for i in range(ROUNDS)] + ["l0-after"],
        "l1": [f"l1-{i}" for i in range(ROUNDS)],
    }, "\n".join(lines)


ADMIN_CLIENT = "lite-admin-check"


def admin_outputs(target: Endpoint, home: Path) -> dict[str, str]:
    """The six lite subcommands of the 5.5.0 tools (one JVM), after the push scenario and a raw
    subscription of ADMIN_CLIENT to l0, l2 and l9 (no message)."""
    p, g = ("-p", PARENT), ("-g", PUSH_GROUP)
    commands = {
        "broker": ["getBrokerLiteInfo", "-c", "DefaultCluster", "-d"],
        "parent": ["getParentTopicInfo", *p],
        "parent-normal": ["getParentTopicInfo", "-p", NORMAL_TOPIC],
        "parent-unknown": ["getParentTopicInfo", "-p", "NoSuchParent"],
        "topic-l0": ["getLiteTopicInfo", *p, "-l", "l0", "-s"],
        "topic-l3": ["getLiteTopicInfo", *p, "-l", "l3", "-s"],
        "topic-l9": ["getLiteTopicInfo", *p, "-l", "l9"],
        "client": ["getLiteClientInfo", *p, *g, "-c", ADMIN_CLIENT, "-s"],
        "client-unknown": ["getLiteClientInfo", *p, *g, "-c", "nobody", "-s"],
        "client-other-group": ["getLiteClientInfo", *p, "-g", SIMPLE_GROUP, "-c", ADMIN_CLIENT],
        "group": ["getLiteGroupInfo", *p, *g],
        "group-l1": ["getLiteGroupInfo", *p, *g, "-l", "l1"],
        "group-l9": ["getLiteGroupInfo", *p, *g, "-l", "l9"],
        "group-unknown": ["getLiteGroupInfo", *p, "-g", "NoSuchGroup"],
        "dispatch": ["triggerLiteDispatch", *p, *g],
        "dispatch-client": ["triggerLiteDispatch", *p, *g, "-c", ADMIN_CLIENT],
        "dispatch-unknown": ["triggerLiteDispatch", *p, "-g", "NoSuchGroup"],
    }
    return mqadmin_batch(target.namesrv_addr, commands, home, version=VERSION)


TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}")  # UtilAll.timeMillisToHumanString2
MIN_UNCONSUMED = re.compile(r"Min Unconsumed Timestamp: \d+ \(\d+ s ago\)")
TRACE = re.compile(r"^\s+(at |\.\.\. \d+ more)")


def normalized(name: str, output: str) -> list[str]:
    """The lines of one subcommand's output, runs of spaces as one, times as ``<time>``, stack
    frames dropped; in getBrokerLiteInfo's row the broker address and the two figures that count
    every consume queue and every offset entry of the broker (not only lite ones) as ``*``."""
    lines = []
    for line in output.splitlines():
        if TRACE.match(line):
            continue
        line = MIN_UNCONSUMED.sub("Min Unconsumed Timestamp: <ms>", TIME.sub("<time>", line))
        fields = line.split()
        if name == "broker" and len(fields) == 9 and not line.startswith("#"):
            fields[0] = fields[6] = fields[7] = "*"
        lines.append(" ".join(fields))
    return lines


LAG_HEADER = "NO Lite Topic Lag Count UnconsumedTimestamp"
TOPIC_HEADER = "#Broker Name #MinOffset #MaxOffset #LastUpdate #Sharding #SubClientCount"
CLIENT_HEADER = "#Broker #LiteTopicCount #LastAccessTime #LastConsumeTime"
OFFSET_HEADER = "#Broker Name #BrokerOffset #ConsumeOffset #LagCount #LastUpdate"
PARENT_HEADER = "#Broker Name #TTL #Lite Count #LMQ NUM #GROUPS"
EXPECTED_ADMIN = {
    "broker": [
        "#Broker #Store Type #Max LMQ #Current LMQ #SubscriptionCount #OrderInfoCount #CQTableSize"
        " #OffsetTableSize #eventMapSize",
        # The push scenario's 4 LMQs (l0..l3; this test runs before test_lite_simple_consumer,
        # whose sends add 2 on ours only), the 3 lite topics of ADMIN_CLIENT, 2 lite queues read
        # orderly (l0, l1), 1 client event set (ADMIN_CLIENT's).
        "* default 20000 4 3 2 * * 1",
        f'Topic Meta: {{"{PARENT}":-1,"{SIMPLE_PARENT}":-1}}',
        f'Group Meta: {{"{PARENT}":["{PUSH_GROUP}"],"{SIMPLE_PARENT}":["{SIMPLE_GROUP}"]}}',
    ],
    "parent": [f"Parent Topic Info: [{PARENT}]", PARENT_HEADER, f"broker-a -1 4 4 [{PUSH_GROUP}]"],
    "parent-normal": [f"Parent Topic Info: [{NORMAL_TOPIC}]", PARENT_HEADER, "[broker-a] error."],
    "parent-unknown": [
        "org.apache.rocketmq.tools.command.SubCommandException: GetParentTopicInfoSubCommand command failed",
        "Caused by: org.apache.rocketmq.client.exception.MQClientException: CODE: 17 DESC: No topic route"
        " info in name server for the topic: NoSuchParent",
        "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.",
    ],
    "topic-l0": [
        f"Lite Topic Info: [{PARENT}] [l0] [%LMQ%${PARENT}$l0]",
        TOPIC_HEADER,
        "broker-a 0 4 <time> true 1",
        f"[{ADMIN_CLIENT}@{PUSH_GROUP}]",
    ],
    "topic-l3": [
        f"Lite Topic Info: [{PARENT}] [l3] [%LMQ%${PARENT}$l3]",
        TOPIC_HEADER,
        "broker-a 0 3 <time> true 0",
        "[]",
    ],
    "topic-l9": [
        f"Lite Topic Info: [{PARENT}] [l9] [%LMQ%${PARENT}$l9]",
        TOPIC_HEADER,
        "broker-a 0 0 - true 1",
    ],
    "client": [
        f"Lite Client Info: [{PARENT}] [{PUSH_GROUP}] [{ADMIN_CLIENT}]",
        CLIENT_HEADER,
        "broker-a 3 <time> N/A",
        "LITE TOPICS",
    ],
    "client-unknown": [
        f"Lite Client Info: [{PARENT}] [{PUSH_GROUP}] [nobody]",
        CLIENT_HEADER,
        "broker-a N/A N/A N/A",
    ],
    "client-other-group": [
        f"Lite Client Info: [{PARENT}] [{SIMPLE_GROUP}] [{ADMIN_CLIENT}]",
        CLIENT_HEADER,
        "[broker-a] error.",
    ],
    "group": [
        f"Lite Group Info: [{PUSH_GROUP}] [{PARENT}]",
        "Total Lag Count: 1",  # l1-after, sent after unsubscribing l1
        "Min Unconsumed Timestamp: <ms>",
        "------TopK by lag count-----",
        LAG_HEADER,
        "1 l1 1 <time>",
        "------TopK by lag time------",
        LAG_HEADER,
    ],
    "group-l1": [
        f"Lite Group Info: [{PUSH_GROUP}] [{PARENT}]",
        OFFSET_HEADER,
        "broker-a 4 3 1 <time>",
        "Total Lag Count: 1",
        "Min Unconsumed Timestamp: <ms>",
    ],
    "group-l9": [
        f"Lite Group Info: [{PUSH_GROUP}] [{PARENT}]",
        OFFSET_HEADER,
        "broker-a - - - -",
        "Total Lag Count: 0",
        "Min Unconsumed Timestamp: <ms>",
    ],
    "group-unknown": [
        f"Lite Group Info: [NoSuchGroup] [{PARENT}]",
        "[broker-a] error.",
        "Total Lag Count: 0",
        "Min Unconsumed Timestamp: <ms>",
        "------TopK by lag count-----",
        LAG_HEADER,
        "------TopK by lag time------",
        LAG_HEADER,
    ],
    "dispatch": [f"Group And Topic Info: [{PUSH_GROUP}] [{PARENT}]", "broker-a dispatched"],
    "dispatch-client": [f"Group And Topic Info: [{PUSH_GROUP}] [{PARENT}]", "broker-a dispatched"],
    "dispatch-unknown": [f"Group And Topic Info: [NoSuchGroup] [{PARENT}]", "broker-a error"],
}
ADMIN_LMQS = {f"%LMQ%${PARENT}${lite}" for lite in ("l0", "l2", "l9")}


def test_lite_admin_subcommands(target: Endpoint, pushed: list[str], tmp_path: Path) -> None:
    """After the push scenario and a raw subscription of ADMIN_CLIENT: the six 5.5.0 lite
    subcommands print the same on both (times aside), and raw requests get the same refusals."""
    assert pushed[-1] == "DONE"
    metadata = (("x-mq-client-id", ADMIN_CLIENT), *METADATA[1:])
    assert sync(target, PARENT, PUSH_GROUP, "l0", "l2", "l9", metadata=metadata)[0] == pb.OK
    outputs = {name: normalized(name, text) for name, text in admin_outputs(target, tmp_path).items()}
    # A Java set prints in hash order: the client's lite topics are compared as a set.
    client = outputs["client"]
    assert client[3].startswith("Lite Topics: ["), client
    assert set(client[3][len("Lite Topics: [") : -1].split(", ")) == ADMIN_LMQS, client
    client[3] = "LITE TOPICS"
    assert outputs == EXPECTED_ADMIN
    assert lite_admin_refusals(wait_route(target.namesrv_addr, PARENT)) == {
        "unknown parent": (ResponseCode.TOPIC_NOT_EXIST, "Topic [NoSuchParent] not exist."),
        "normal parent": (ResponseCode.INVALID_PARAMETER, f"Topic [{NORMAL_TOPIC}] type not match."),
        "lite topic of an unknown parent": (ResponseCode.TOPIC_NOT_EXIST, "Topic [NoSuchParent] not exist."),
        "client of another group": (
            ResponseCode.INVALID_PARAMETER,
            f"Subscription [{SIMPLE_GROUP}]-[{PARENT}] not match.",
        ),
        "client of an invalid group": (
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            "Group [bad group] not exist.",
        ),
        # An unknown group with a valid name is auto-created (autoCreateSubscriptionGroup).
        "unknown group": (ResponseCode.INVALID_PARAMETER, "Group [NoSuchGroup] is not a LITE group."),
        "invalid group": (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "Group [bad group] not exist."),
        "dispatch of an unknown group": (
            ResponseCode.INVALID_PARAMETER,
            "Group [NoSuchGroup2] is not a LITE group.",
        ),
    }


def lite_admin_refusals(broker_addr: str) -> dict[str, tuple[int, str | None]]:
    """Raw lite admin requests the broker refuses: (code, remark) of each."""
    client = {"parent_topic": PARENT, "client_id": ADMIN_CLIENT}
    asks: dict[str, tuple[int, CustomHeader]] = {
        "unknown parent": (
            RequestCode.GET_PARENT_TOPIC_INFO,
            GetParentTopicInfoRequestHeader("NoSuchParent"),
        ),
        "normal parent": (RequestCode.GET_PARENT_TOPIC_INFO, GetParentTopicInfoRequestHeader(NORMAL_TOPIC)),
        "lite topic of an unknown parent": (
            RequestCode.GET_LITE_TOPIC_INFO,
            GetLiteTopicInfoRequestHeader("NoSuchParent", "l0"),
        ),
        "client of another group": (
            RequestCode.GET_LITE_CLIENT_INFO,
            GetLiteClientInfoRequestHeader(group=SIMPLE_GROUP, **client),
        ),
        "client of an invalid group": (
            RequestCode.GET_LITE_CLIENT_INFO,
            GetLiteClientInfoRequestHeader(group="bad group", **client),
        ),
        "unknown group": (
            RequestCode.GET_LITE_GROUP_INFO,
            GetLiteGroupInfoRequestHeader("NoSuchGroup", None, 20),
        ),
        "invalid group": (
            RequestCode.GET_LITE_GROUP_INFO,
            GetLiteGroupInfoRequestHeader("bad group", None, 20),
        ),
        "dispatch of an unknown group": (
            RequestCode.TRIGGER_LITE_DISPATCH,
            TriggerLiteDispatchRequestHeader("NoSuchGroup2"),
        ),
    }

    async def run() -> dict[str, tuple[int, str | None]]:
        answers: dict[str, tuple[int, str | None]] = {}
        async with connect(broker_addr) as conn:
            for name, (code, header) in asks.items():
                response = await conn.invoke(RemotingCommand.request(code, header), 10)
                answers[name] = (response.code, response.remark)
        return answers

    return trio.run(run)


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
