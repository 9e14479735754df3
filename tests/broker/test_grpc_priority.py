"""Priority messages over the gRPC endpoint, as the 5.5.0 Proxy serves them.

SendMessage turns ``system_properties.priority`` into the message property the broker places by,
ReceiveMessage hands a backlog back highest priority first with each message's priority and type
PRIORITY, QueryRoute answers PRIORITY as the type a priority topic's queues accept. (The same beside
the real 5.5.0 Proxy with the Python client: compat_tests/test_grpc55_compat.py.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker.grpc.send import NEGATIVE_PRIORITY
from broker.priority import PROPERTY_PRIORITY
from codec.bodies.register import TopicConfig
from codec.properties import decode_properties
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.helpers import pulled
from tests.broker.test_grpc_consume import receive, received
from tests.broker.test_grpc_service import Client, endpoint, in_thread, message, route_request

PRIORITY_TOPIC = "Urgent"
PRIORITIES = {b"a": 0, b"b": 3, b"c": 1, b"d": 7, b"e": 2, b"f": 0, b"g": 3, b"h": 1, b"i": 2}


def add_topics(app: Any) -> None:
    attributes = {"message.type": "PRIORITY"}
    app.controller.topics.update(TopicConfig(PRIORITY_TOPIC, 4, 4, 6, attributes=attributes))
    app.controller.topics.update(TopicConfig("Plain", 4, 4, 6))


def priority_message(topic: str, body: bytes, index: int, priority: int) -> pb.Message:
    sent = message(topic, body, f"ID{index:04d}", priority=priority)
    sent.system_properties.message_type = pb.PRIORITY
    return sent


def send_one(client: Client, sent: pb.Message) -> pb.SendMessageResponse:
    request = pb.SendMessageRequest(messages=[sent])
    return client.call("SendMessage", request, pb.SendMessageResponse)


async def test_route_of_a_priority_topic_accepts_priority_messages(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        add_topics(app)
        client = Client(port)
        route = await in_thread(
            lambda: client.call("QueryRoute", route_request(PRIORITY_TOPIC, port), pb.QueryRouteResponse)
        )
    assert route.status.code == pb.OK
    assert [list(q.accept_message_types) for q in route.message_queues] == [[pb.PRIORITY]] * 4


async def test_a_priority_is_stored_as_the_property_in_its_queue(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, conn, port):
        add_topics(app)
        client = Client(port)
        answers = await in_thread(
            lambda: [
                send_one(client, priority_message(PRIORITY_TOPIC, b"x", i, p))
                for i, p in enumerate((0, 2, 9))
            ]
        )
        stored = {q: await pulled(conn, PRIORITY_TOPIC, q) for q in range(4)}
    assert [a.status.code for a in answers] == [pb.OK] * 3
    by_queue = {
        q: [decode_properties(r.properties)[PROPERTY_PRIORITY] for r in rs] for q, rs in stored.items()
    }
    assert by_queue == {0: ["0"], 1: [], 2: ["2"], 3: ["9"]}


async def test_the_message_type_must_match_the_topic_and_a_priority_be_non_negative(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        add_topics(app)
        client = Client(port)
        plain_priority, plain_on_priority, negative = await in_thread(
            lambda: [
                send_one(client, priority_message("Plain", b"x", 1, 2)),
                send_one(client, message(PRIORITY_TOPIC, b"x", "ID0002")),
                send_one(client, priority_message(PRIORITY_TOPIC, b"x", 3, -1)),
            ]
        )
        user_property = message(PRIORITY_TOPIC, b"x", "ID0004")
        user_property.user_properties[PROPERTY_PRIORITY] = "1"
        reserved = await in_thread(lambda: send_one(client, user_property))
    conflict = (
        "org.apache.rocketmq.proxy.common.ProxyException:"
        " TopicMessageType validate failed, the expected type is {}, but actual type is {}"
    )
    assert (plain_priority.status.code, plain_priority.status.message) == (
        pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
        conflict.format("NORMAL", "PRIORITY"),
    )
    assert (plain_on_priority.status.code, plain_on_priority.status.message) == (
        pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
        conflict.format("PRIORITY", "NORMAL"),
    )
    assert (negative.status.code, negative.status.message) == (pb.INTERNAL_SERVER_ERROR, NEGATIVE_PRIORITY)
    assert (reserved.status.code, reserved.status.message) == (
        pb.ILLEGAL_MESSAGE_PROPERTY_KEY,
        f"property is used by system: {PROPERTY_PRIORITY}",
    )


async def test_a_backlog_is_received_highest_priority_first_with_its_priorities(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        add_topics(app)
        client = Client(port)

        def send_all() -> None:
            for i, (body, priority) in enumerate(PRIORITIES.items()):
                assert (
                    send_one(client, priority_message(PRIORITY_TOPIC, body, i, priority)).status.code == pb.OK
                )

        await in_thread(send_all)
        first = received(await in_thread(lambda: receive(client, PRIORITY_TOPIC, batch=4)))
        rest = received(await in_thread(lambda: receive(client, PRIORITY_TOPIC)))
    assert [m.body for m in first] == [b"b", b"d", b"g", b"e"]
    assert [m.body for m in rest] == [b"i", b"c", b"h", b"a", b"f"]
    for got in first + rest:
        assert got.system_properties.message_type == pb.PRIORITY
        assert got.system_properties.HasField("priority")
        assert got.system_properties.priority == PRIORITIES[got.body]
        assert dict(got.user_properties) == {"k": "v"}


async def test_a_mixed_topic_takes_a_priority_message_and_places_it(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, conn, port):
        app.controller.topics.update(TopicConfig("Mixed", 4, 4, 6, attributes={"message.type": "MIXED"}))
        client = Client(port)
        answer = await in_thread(lambda: send_one(client, priority_message("Mixed", b"x", 1, 2)))
        stored = await pulled(conn, "Mixed", 2)
    assert answer.status.code == pb.OK
    assert [decode_properties(r.properties)[PROPERTY_PRIORITY] for r in stored] == ["2"]
