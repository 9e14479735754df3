"""Lite topics over the gRPC endpoint, as the 5.5 Proxy and broker serve them.

SendMessage stores a message with a ``lite_topic`` under a LITE topic in that lite topic's own
queue and refuses it elsewhere; SyncLiteSubscription checks the group's bound topic and quota; a
lite consumer receives only its lite topics' messages, one lite topic FIFO, and nothing of a lite
topic it left. (The same with the Python client beside the real 5.5.0 Proxy:
compat_tests/test_grpc55_compat.py.)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from broker.grpc.client import ClientActivity
from broker.grpc.common import ClientContext
from broker.grpc.lite import LiteActivity
from broker.lite import to_lmq_name
from broker.subscription_group_manager import SubscriptionGroupConfig
from codec.bodies.register import TopicConfig
from codec.properties import decode_properties
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.helpers import pulled, running
from tests.broker.test_grpc_consume import receive, received
from tests.broker.test_grpc_service import Client, endpoint, in_thread, message, route_request

PARENT = "Chats"
GROUP = "ChatReaders"


def add_resources(app: Any, quota: int | None = None) -> None:
    controller = app.controller
    controller.topics.update(TopicConfig(PARENT, 4, 4, 6, attributes={"message.type": "LITE"}))
    controller.topics.update(TopicConfig("Plain", 4, 4, 6))
    attributes = {"+lite.bind.topic": PARENT}
    if quota is not None:
        attributes["+lite.sub.client.quota"] = str(quota)
    controller.groups.update(SubscriptionGroupConfig(GROUP, attributes=attributes))
    controller.groups.update(SubscriptionGroupConfig("Unbound"))


def lite_message(topic: str, body: bytes, index: int, lite: str) -> pb.Message:
    sent = message(topic, body, f"LITE{index:04d}", lite_topic=lite)
    sent.system_properties.message_type = pb.LITE
    return sent


def send(client: Client, sent: pb.Message) -> tuple[int, str]:
    answer = client.call("SendMessage", pb.SendMessageRequest(messages=[sent]), pb.SendMessageResponse)
    return answer.status.code, answer.status.message


def sync(
    client: Client, action: int, *lite_topics: str, topic: str = PARENT, group: str = GROUP
) -> tuple[int, str]:
    request = pb.SyncLiteSubscriptionRequest(
        action=action,  # type: ignore[arg-type]
        topic=pb.Resource(name=topic),
        group=pb.Resource(name=group),
        lite_topic_set=lite_topics,
    )
    answer = client.call("SyncLiteSubscription", request, pb.SyncLiteSubscriptionResponse)
    return answer.status.code, answer.status.message


def lite_consumer(client: Client, client_type: int = pb.LITE_PUSH_CONSUMER) -> pb.TelemetryCommand:
    settings = pb.Settings(
        client_type=client_type,  # type: ignore[arg-type]
        subscription=pb.Subscription(
            group=pb.Resource(name=GROUP),
            subscriptions=[pb.SubscriptionEntry(topic=pb.Resource(name=PARENT))],
        ),
    )
    return client.telemetry(settings)


async def test_a_lite_message_is_stored_in_its_lite_topics_queue(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, conn, port):
        add_resources(app)
        client = Client(port)
        answers = await in_thread(
            lambda: [send(client, lite_message(PARENT, b"x", i, lite)) for i, lite in enumerate("aab")]
        )
        in_a = await pulled(conn, to_lmq_name(PARENT, "a"), 0)
        in_b = await pulled(conn, to_lmq_name(PARENT, "b"), 0)
        in_parent = [await pulled(conn, PARENT, q) for q in range(4)]
    assert answers == [(pb.OK, "OK")] * 3
    assert [decode_properties(r.properties)["__LITE_TOPIC"] for r in in_a] == ["a", "a"]
    assert [r.queue_offset for r in in_a] == [0, 1]
    assert [decode_properties(r.properties)["__LITE_TOPIC"] for r in in_b] == ["b"]
    assert in_parent == [[], [], [], []]


async def test_lite_sends_are_refused_as_the_proxy_refuses_them(tmp_path: Path) -> None:
    conflict = (
        "org.apache.rocketmq.proxy.common.ProxyException: TopicMessageType validate failed,"
        " the expected type is {}, but actual type is {}"
    )
    async with endpoint(tmp_path) as (app, _conn, port):
        add_resources(app)
        client = Client(port)
        answers = await in_thread(
            lambda: [
                send(client, lite_message("Plain", b"x", 1, "a")),
                send(client, message(PARENT, b"x", "NORMAL1")),
                send(client, lite_message(PARENT, b"x", 2, "a.b")),
                send(client, lite_message(PARENT, b"x", 3, "x" * 65)),
                send(client, lite_message(PARENT, b"x", 4, "  ")),
            ]
        )
    assert answers == [
        (pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, conflict.format("NORMAL", "LITE")),
        (pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, conflict.format("LITE", "NORMAL")),
        (
            pb.ILLEGAL_LITE_TOPIC,
            "lite topic can only contain alphanumeric characters, hyphens(-), and underscores(_)",
        ),
        (pb.ILLEGAL_LITE_TOPIC, "lite topic exceed the max size 64"),
        (pb.ILLEGAL_LITE_TOPIC, "lite topic cannot be the char sequence of whitespace"),
    ]


async def test_sync_lite_subscription_checks_bind_topic_quota_and_names(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        add_resources(app, quota=1)
        client = Client(port)
        settings = await in_thread(lambda: lite_consumer(client))
        answers = await in_thread(
            lambda: [
                sync(client, pb.PARTIAL_ADD, "a"),
                sync(client, pb.PARTIAL_ADD, "a", topic="Plain"),
                sync(client, pb.PARTIAL_ADD, "a", group="Unbound"),
                sync(client, pb.PARTIAL_ADD, "bad name"),
                sync(client, pb.COMPLETE_ADD, *(f"t{i}" for i in range(302))),
            ]
        )
    assert settings.settings.subscription.lite_subscription_quota == 1
    assert settings.settings.subscription.max_lite_topic_size == 64
    assert answers == [
        (pb.OK, "OK"),
        (pb.ILLEGAL_TOPIC, f"lite group {GROUP} is expected to bind topic {PARENT}, but actual is Plain"),
        (pb.ILLEGAL_TOPIC, f"lite group Unbound is expected to bind topic null, but actual is {PARENT}"),
        (
            pb.ILLEGAL_LITE_TOPIC,
            "lite topic can only contain alphanumeric characters, hyphens(-), and underscores(_)",
        ),
        (pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED, "lite subscription quota exceeded: 1"),
    ]


async def test_a_lite_consumer_gets_its_lite_topics_in_order_and_none_after_leaving(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        add_resources(app)
        client = Client(port)

        def scenario() -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]], list[tuple[str, bytes]]]:
            lite_consumer(client, pb.LITE_SIMPLE_CONSUMER)
            assert sync(client, pb.PARTIAL_ADD, "a") == (pb.OK, "OK")
            assert sync(client, pb.PARTIAL_ADD, "b") == (pb.OK, "OK")
            for i, lite in enumerate("abcab"):
                assert send(client, lite_message(PARENT, f"{lite}{i}".encode(), i, lite)) == (pb.OK, "OK")
            first = received(receive(client, PARENT, group=GROUP))
            # FIFO per lite topic: the rest of a lite topic waits for the acks.
            blocked = received(receive(client, PARENT, group=GROUP))
            for got in first:
                entry = pb.AckMessageEntry(
                    message_id=got.system_properties.message_id,
                    receipt_handle=got.system_properties.receipt_handle,
                    lite_topic=got.system_properties.lite_topic,
                )
                request = pb.AckMessageRequest(
                    group=pb.Resource(name=GROUP), topic=pb.Resource(name=PARENT), entries=[entry]
                )
                assert client.call("AckMessage", request, pb.AckMessageResponse).status.code == pb.OK
            assert sync(client, pb.PARTIAL_REMOVE, "b") == (pb.OK, "OK")
            send(client, lite_message(PARENT, b"a5", 5, "a"))
            send(client, lite_message(PARENT, b"b6", 6, "b"))
            after = received(receive(client, PARENT, group=GROUP))
            return (
                [(m.system_properties.lite_topic, m.body) for m in first],
                [(m.system_properties.lite_topic, m.body) for m in blocked],
                [(m.system_properties.lite_topic, m.body) for m in after],
            )

        first, blocked, after = await in_thread(scenario)
    assert sorted(first) == [("a", b"a0"), ("a", b"a3"), ("b", b"b1"), ("b", b"b4")]
    assert [body for lite, body in first if lite == "a"] == [b"a0", b"a3"]
    assert blocked == []
    assert after == [("a", b"a5")]


class StreamCall:
    """A Telemetry stream that carries one settings command, then ends half-closed or reset."""

    def __init__(self, client_id: str, settings: pb.Settings, reset: bool) -> None:
        self.metadata = {"x-mq-client-id": client_id}
        self.peer = "127.0.0.1:1"
        self.connection_id = 1
        self.inbound = [pb.TelemetryCommand(settings=settings).SerializeToString()]
        self.sent: list[bytes] = []
        self.reset = reset

    async def receive(self) -> bytes | None:
        return self.inbound.pop(0) if self.inbound else None

    async def send(self, payload: bytes, *, flush: bool = True) -> None:
        self.sent.append(payload)

    def post(self, payload: bytes) -> bool:
        return False

    @property
    def cancelled(self) -> bool:
        return self.reset


async def test_a_cancelled_telemetry_stream_drops_the_clients_lite_subscriptions(tmp_path: Path) -> None:
    settings = pb.Settings(
        client_type=pb.LITE_PUSH_CONSUMER,
        subscription=pb.Subscription(
            group=pb.Resource(name=GROUP),
            subscriptions=[pb.SubscriptionEntry(topic=pb.Resource(name=PARENT))],
        ),
    )
    async with running(tmp_path) as (app, _conn):
        add_resources(app)
        broker = app.controller
        clients = ClientActivity(broker)
        lite = LiteActivity(broker, app.broker.services.consume)
        clients.on_termination = lite.forget
        for client_id in ("half-closed", "cancelled"):
            ctx = ClientContext(client_id, "127.0.0.1:1", "PYTHON", "5.1.2", {})
            request = pb.SyncLiteSubscriptionRequest(
                action=pb.PARTIAL_ADD,
                topic=pb.Resource(name=PARENT),
                group=pb.Resource(name=GROUP),
                lite_topic_set=["a"],
            )
            assert lite.sync_lite_subscription(ctx, request).status.code == pb.OK
            await clients.telemetry(StreamCall(client_id, settings, reset=client_id == "cancelled"))
        assert lite.registry.lmq_names_of("half-closed") == [to_lmq_name(PARENT, "a")]
        assert lite.registry.lmq_names_of("cancelled") == []


async def test_a_lite_topic_no_queue_can_have_does_not_stop_the_others(tmp_path: Path) -> None:
    """COMPLETE_ADD does not check names (5.5.0 neither); a receive skips the one that fails."""
    async with endpoint(tmp_path) as (app, _conn, port):
        add_resources(app)
        client = Client(port)

        def scenario() -> list[pb.Message]:
            lite_consumer(client, pb.LITE_SIMPLE_CONSUMER)
            assert sync(client, pb.COMPLETE_ADD, "x$y", "a") == (pb.OK, "OK")
            assert send(client, lite_message(PARENT, b"a0", 0, "a")) == (pb.OK, "OK")
            return received(receive(client, PARENT, group=GROUP))

        got = await in_thread(scenario)
    assert [(m.system_properties.lite_topic, m.body) for m in got] == [("a", b"a0")]


async def test_change_invisible_duration_of_a_lite_message_brings_it_back(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        add_resources(app)
        client = Client(port)

        def scenario() -> tuple[int, list[tuple[bytes, int]], float]:
            lite_consumer(client, pb.LITE_SIMPLE_CONSUMER)
            assert sync(client, pb.PARTIAL_ADD, "a") == (pb.OK, "OK")
            assert send(client, lite_message(PARENT, b"a0", 0, "a")) == (pb.OK, "OK")
            (first,) = received(receive(client, PARENT, group=GROUP))
            request = pb.ChangeInvisibleDurationRequest(
                group=pb.Resource(name=GROUP),
                topic=pb.Resource(name=PARENT),
                receipt_handle=first.system_properties.receipt_handle,
                message_id=first.system_properties.message_id,
                lite_topic="a",
            )
            request.invisible_duration.FromSeconds(1)
            changed = client.call("ChangeInvisibleDuration", request, pb.ChangeInvisibleDurationResponse)
            start = time.monotonic()
            again = received(receive(client, PARENT, group=GROUP))  # waits for the second to pass
            waited = time.monotonic() - start
            bodies = [(m.body, m.system_properties.delivery_attempt) for m in again]
            return changed.status.code, bodies, waited

        code, again, waited = await in_thread(scenario)
    assert code == pb.OK
    assert again == [(b"a0", 2)]
    assert waited < 4.5  # woken when the lite topic is free again, not at the 5 s long-polling end


async def test_an_orderly_lite_group_is_assigned_one_pop_queue(tmp_path: Path) -> None:
    """``RouteActivity.queryAssignment``: every queue for an orderly group, but not a lite one."""
    async with endpoint(tmp_path) as (app, _conn, port):
        add_resources(app)
        attributes = {"+lite.bind.topic": PARENT}
        app.controller.groups.update(
            SubscriptionGroupConfig(GROUP, consume_message_orderly=True, attributes=attributes)
        )
        app.controller.groups.update(SubscriptionGroupConfig("Orderly", consume_message_orderly=True))
        client = Client(port)

        def assigned(group: str) -> list[int]:
            request = pb.QueryAssignmentRequest(
                topic=pb.Resource(name=PARENT),
                group=pb.Resource(name=group),
                endpoints=route_request(PARENT, port).endpoints,
            )
            answer = client.call("QueryAssignment", request, pb.QueryAssignmentResponse)
            return [a.message_queue.id for a in answer.assignments]

        lite_ids, orderly_ids = await in_thread(lambda: (assigned(GROUP), assigned("Orderly")))
    assert lite_ids == [-1]
    assert orderly_ids == [0, 1, 2, 3]
