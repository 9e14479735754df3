"""One broker, two protocols: a message sent over RocketMQ 5's gRPC protocol is consumed over the
remoting protocol, and one sent over remoting is received over gRPC, with body, tag, keys and
user properties intact; against our gateway and against the real 5.3.3 broker behind its Proxy
in local mode, with identical assertions.

The gRPC producer is rocketmq-client-java 5.0.8 (``compat_tests/java/grpc5``, ``rmqgrpc.Produce``),
the remoting side the 5.3.3 Java client's ``DefaultMQPushConsumer`` and ``DefaultMQProducer``
(``rmqcompat.Scenario``'s consume and produce), the gRPC SimpleConsumer the Go 5.x client
(``compat_tests/grpc_go``: it reports every field of a received message). In the Proxy a gRPC
message becomes the broker's ``MessageExt`` (``GrpcConverter``) and back, so a user property set
on one side is a user property on the other, and the keys list of a 5.x message is the
space-separated ``KEYS`` property of a remoting message.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.grpc_targets import (
    GrpcTarget,
    create_group,
    create_topic,
    produce,
    start_ours,
    start_real,
)
from compat_tests.scenario import of, run_scenario
from compat_tests.test_grpc_go_compat import run_go

pytestmark = [pytest.mark.compat, pytest.mark.slow]

LINE = "5.3.3"  # the remoting client line
STEP_S = 60.0  # one remoting scenario run
COUNT = 3


@pytest.fixture(scope="module", params=["ours", "real"])
def cross_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GrpcTarget]:
    workdir = tmp_path_factory.mktemp(f"grpc-cross-{request.param}")
    started = start_ours(workdir) if request.param == "ours" else start_real(workdir)
    try:
        yield started
    finally:
        started.stop()


def test_grpc_message_consumed_by_remoting_push_consumer(cross_target: GrpcTarget, tmp_path: Path) -> None:
    topic, group = "GrpcToRemoting", "GrpcToRemotingGroup"
    create_topic(cross_target, topic)
    lines = produce(cross_target, tls=False, topic=topic, count=COUNT)
    sent = {int(line.split()[1]): line.split()[2] for line in lines if line.startswith("SENT")}
    assert sorted(sent) == list(range(COUNT)), lines
    events = run_scenario(
        LINE, "consume", cross_target.namesrv_addr, tmp_path, STEP_S, topic=topic, group=group, expect=COUNT
    )
    received = {e["msgId"]: e for e in of(events, "received")}
    assert set(received) == set(sent.values()), events[-3:]
    for i, message_id in sent.items():
        message = received[message_id]
        assert message["body"] == f"grpc message {i} 中文"
        assert (message["tags"], message["keys"]) == ("TagA", f"key-{i}")
        assert message["props"] == {"index": str(i)}
        assert message["reconsumeTimes"] == 0


def test_remoting_message_received_by_grpc_simple_consumer(
    cross_target: GrpcTarget, grpc_go: Path, tmp_path: Path
) -> None:
    topic, group = "RemotingToGrpc", "RemotingToGrpcGroup"
    create_topic(cross_target, topic)
    create_group(cross_target, group, 16)
    events = run_scenario(
        LINE, "produce", cross_target.namesrv_addr, tmp_path, STEP_S,
        topic=topic, count=COUNT, tags="TagR", keys_prefix="rkey-", props="origin:remoting,lang:中文",
    )  # fmt: skip
    sent = {e["i"]: e["msgId"] for e in of(events, "sent")}
    assert sorted(sent) == list(range(COUNT)), events[-3:]
    events = run_go(
        grpc_go, cross_target, tls=True, mode="consume", topic=topic, group=group, count=COUNT,
        change="false", timeout="60s",
    )  # fmt: skip
    assert not [e for e in events if e["event"].endswith("_failed")], events
    received = {e["id"]: e for e in of(events, "received")}
    assert set(received) == set(sent.values())
    for i, message_id in sent.items():
        message = received[message_id]
        assert message["body"] == f"消息 {i} body of message {i}"
        assert (message["tag"], message["keys"]) == ("TagR", [f"rkey-{i}"])
        assert message["props"] == {"origin": "remoting", "lang": "中文"}
        assert message["attempt"] == 1
    assert sorted(e["id"] for e in of(events, "acked")) == sorted(sent.values())
