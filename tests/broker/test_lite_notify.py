"""NOTIFY_UNSUBSCRIBE_LITE (``LiteSubscriptionRegistryImpl.excludeClientByLmqName`` /
``notifyUnsubscribeLite``, ``Broker2Client.notifyUnsubscribeLite``) without sockets: an exclusive
group's PARTIAL_ADD through LITE_SUBSCRIPTION_CTL takes the lite topic from the group's other
client, which is told on the connection its own subscription came on; a gRPC client of ours is told
over its Telemetry stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from broker.app import Broker
from broker.grpc.common import ClientContext
from broker.grpc.lite import LiteActivity
from broker.lite import LiteSubscriptionRegistry, is_lite_sub_exclusive, to_lmq_name
from broker.subscription_group_manager import SubscriptionGroupConfig
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from codec.headers.lite import NotifyUnsubscribeLiteRequestHeader
from gateway.transport.dispatch import ConnectionInfo, RequestContext
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.test_lite_admin import GROUP, PARENT, lite_broker

SOLO = "SoloReaders"  # an exclusive lite group bound to PARENT


class FakePeer:
    """A client connection that keeps what the broker sends it."""

    def __init__(self) -> None:
        self.sent: list[RemotingCommand] = []
        self.closed = False
        self.writable = True

    async def invoke(self, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        raise AssertionError("the broker only sends oneway notices here")

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        self.sent.append(request)

    def try_invoke_oneway(self, request: RemotingCommand) -> bool:
        if self.closed:
            return False
        self.sent.append(request)
        return True

    def close(self) -> None:
        self.closed = True


class FakeCall:
    """A Telemetry stream that keeps what is posted to it."""

    def __init__(self) -> None:
        self.posted: list[bytes] = []
        self.metadata: dict[str, str] = {}
        self.peer = "127.0.0.1:50001"
        self.connection_id = 1
        self.cancelled = False

    async def receive(self) -> bytes | None:
        return None

    async def send(self, payload: bytes, *, flush: bool = True) -> None:
        self.posted.append(payload)

    def post(self, payload: bytes) -> bool:
        self.posted.append(payload)
        return True


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with lite_broker(tmp_path) as found:
        attributes = {"lite.bind.topic": PARENT, "lite.sub.model": "Exclusive"}
        found.controller.groups.update(SubscriptionGroupConfig(SOLO, attributes=attributes))
        yield found


def ctl(broker: Broker, peer: FakePeer, action: str, client: str, group: str, *lites: str) -> RemotingCommand:
    entry = {
        "action": action,
        "clientId": client,
        "group": group,
        "topic": PARENT,
        "liteTopicSet": list(lites),
    }
    request = RemotingCommand.request(
        RequestCode.LITE_SUBSCRIPTION_CTL,
        EmptyHeader(),
        body=json.dumps({"subscriptionSet": [entry]}).encode(),
    )

    async def main() -> RemotingCommand:
        ctx = RequestContext(ConnectionInfo(id(peer), "127.0.0.1:50000", "127.0.0.1:10911", peer))
        response = await broker.dispatcher.dispatch(ctx, request)
        assert response is not None
        return response

    answer = trio.run(main)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    return answer


def notices(peer: FakePeer) -> list[tuple[str, str, str]]:
    out = []
    for command in peer.sent:
        assert command.code == RequestCode.NOTIFY_UNSUBSCRIBE_LITE
        header = command.header(NotifyUnsubscribeLiteRequestHeader)
        out.append((header.client_id, header.consumer_group, header.lite_topic))
    return out


def test_an_exclusive_groups_subscription_takes_the_lite_topic_and_tells_the_other_client(
    broker: Broker,
) -> None:
    proxy_a, proxy_b = FakePeer(), FakePeer()
    ctl(broker, proxy_a, "PARTIAL_ADD", "A", SOLO, "l0", "l1")
    ctl(broker, proxy_b, "PARTIAL_ADD", "B", SOLO, "l0")
    registry = broker.services.lite
    assert registry.lmq_names_of("A") == [to_lmq_name(PARENT, "l1")]
    assert registry.lmq_names_of("B") == [to_lmq_name(PARENT, "l0")]
    assert notices(proxy_a) == [("A", SOLO, "l0")]
    assert notices(proxy_b) == []
    # B takes l1 too: A has no lite topic left and is forgotten.
    ctl(broker, proxy_b, "PARTIAL_ADD", "B", SOLO, "l1")
    assert notices(proxy_a) == [("A", SOLO, "l0"), ("A", SOLO, "l1")]
    assert "A" not in registry.by_client
    # Subscribing again to what it holds tells the client nothing.
    ctl(broker, proxy_b, "PARTIAL_ADD", "B", SOLO, "l0")
    assert notices(proxy_b) == []


def test_a_shared_group_keeps_every_subscriber_and_tells_nobody(broker: Broker) -> None:
    proxy_a, proxy_b = FakePeer(), FakePeer()
    ctl(broker, proxy_a, "PARTIAL_ADD", "A", GROUP, "l0")
    ctl(broker, proxy_b, "PARTIAL_ADD", "B", GROUP, "l0")
    assert broker.services.lite.subscribers_of(to_lmq_name(PARENT, "l0")) >= {("A", GROUP), ("B", GROUP)}
    assert (proxy_a.sent, proxy_b.sent) == ([], [])


def test_a_client_gone_or_without_a_connection_is_not_told(broker: Broker) -> None:
    proxy_a, proxy_b = FakePeer(), FakePeer()
    ctl(broker, proxy_a, "PARTIAL_ADD", "A", SOLO, "l0")
    ctl(broker, proxy_a, "COMPLETE_REMOVE", "A", SOLO)  # forgets A's connection too
    ctl(broker, proxy_a, "PARTIAL_REMOVE", "A", SOLO)  # no add: no connection recorded
    broker.services.lite.add_partial("A", SOLO, PARENT, ["l0"])  # e.g. through our gRPC door
    ctl(broker, proxy_b, "PARTIAL_ADD", "B", SOLO, "l0")
    assert proxy_a.sent == []
    assert broker.services.lite.lmq_names_of("A") == []
    # A closed connection loses the notice.
    ctl(broker, proxy_a, "PARTIAL_ADD", "C", SOLO, "l0")
    proxy_a.close()
    ctl(broker, proxy_b, "PARTIAL_ADD", "B", SOLO, "l0")
    assert proxy_a.sent == []


def test_the_registry_tells_its_listeners_of_each_subscription_it_drops() -> None:
    registry = LiteSubscriptionRegistry()
    told: list[tuple[str, str, str]] = []
    registry.unsubscribe_listeners.append(lambda *event: told.append(event))
    registry.add_partial("A", SOLO, PARENT, ["l0", "l1"])
    registry.add_partial("X", "Other", PARENT, ["l0"])
    registry.exclude_others("B", SOLO, PARENT, ["l0", "l9"])
    assert told == [("A", SOLO, to_lmq_name(PARENT, "l0"))]
    assert registry.subscribers_of(to_lmq_name(PARENT, "l0")) == {("X", "Other")}
    assert is_lite_sub_exclusive({"+lite.sub.model": "Exclusive"})
    assert not is_lite_sub_exclusive({"lite.sub.model": "Shared"})


def test_a_grpc_client_is_told_over_its_telemetry_stream(broker: Broker) -> None:
    stream = FakeCall()
    lite = LiteActivity(
        broker.controller, broker.services.consume, broker.services.lite, sessions={"A": stream}
    )
    lite.notify_unsubscribe("A", SOLO, to_lmq_name(PARENT, "l0"))
    lite.notify_unsubscribe("gone", SOLO, to_lmq_name(PARENT, "l0"))
    commands = [pb.TelemetryCommand.FromString(payload) for payload in stream.posted]
    assert [c.notify_unsubscribe_lite_command.lite_topic for c in commands] == ["l0"]
    assert lite.notified == 1


def test_a_takeover_on_either_door_tells_each_client_once_on_its_own_door(broker: Broker) -> None:
    """One takeover path for both doors: a client of our gRPC endpoint that loses a lite topic to
    a Proxy's client hears it on its Telemetry stream, a Proxy's client that loses one to a gRPC
    client hears NOTIFY_UNSUBSCRIBE_LITE, a client both know hears it once (on its connection),
    and lite.sub.reset.offset.exclusive moves the group's offset back to 0 on each takeover."""
    attributes = {
        "lite.bind.topic": PARENT,
        "lite.sub.model": "Exclusive",
        "lite.sub.reset.offset.exclusive": "true",
    }
    broker.controller.groups.update(SubscriptionGroupConfig(SOLO, attributes=attributes))
    services, offsets = broker.services, broker.controller.offsets
    lmq_l0 = to_lmq_name(PARENT, "l0")
    streams = {"G": FakeCall()}
    lite = LiteActivity(broker.controller, services.consume, services.lite, services.lite_lifecycle, streams)
    request = pb.SyncLiteSubscriptionRequest(
        action=pb.PARTIAL_ADD,
        topic=pb.Resource(name=PARENT),
        group=pb.Resource(name=SOLO),
        lite_topic_set=["l0"],
    )
    grpc_client = ClientContext("G", "127.0.0.1:50001", "PYTHON", "5.1.2", {})

    def told(client: str) -> list[str]:
        commands = [pb.TelemetryCommand.FromString(payload) for payload in streams[client].posted]
        return [c.notify_unsubscribe_lite_command.lite_topic for c in commands]

    proxy = FakePeer()
    lite.sync_lite_subscription(grpc_client, request)
    offsets.commit(SOLO, lmq_l0, 0, 2)
    ctl(broker, proxy, "PARTIAL_ADD", "R", SOLO, "l0")
    assert (told("G"), notices(proxy)) == (["l0"], [])
    assert offsets.query(SOLO, lmq_l0, 0) == 0
    offsets.commit(SOLO, lmq_l0, 0, 2)
    lite.sync_lite_subscription(grpc_client, request)
    assert (told("G"), notices(proxy)) == (["l0"], [("R", SOLO, "l0")])
    assert offsets.query(SOLO, lmq_l0, 0) == 0
    assert {(c, g) for c, g in services.lite.subscribers_of(lmq_l0) if g == SOLO} == {("G", SOLO)}
    # R with a Telemetry stream here as well as its connection: told once, on the connection.
    streams["R"] = FakeCall()
    ctl(broker, proxy, "PARTIAL_ADD", "R", SOLO, "l0")
    lite.sync_lite_subscription(grpc_client, request)
    assert notices(proxy) == [("R", SOLO, "l0"), ("R", SOLO, "l0")]
    assert (told("G"), told("R")) == (["l0", "l0"], [])
    assert lite.notified == 2
