"""The gRPC MessagingService in front of an in-process broker, driven by a real gRPC client.

grpcio's blocking client runs in a worker thread, the broker and its endpoint in the test's Trio
loop; messages sent over gRPC are read back with a remoting pull, as a 4.x consumer would.
"""

from __future__ import annotations

import queue
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import grpc
import trio
from google.protobuf.message import Message as ProtoMessage

from broker.grpc.send import consistent_hash
from broker.timer.service import TIMER_TOPIC
from codec.bodies.register import TopicConfig
from codec.hashing import java_string_hash
from codec.properties import decode_properties
from gateway.launcher import start_grpc
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.helpers import pulled, running

SERVICE = "/apache.rocketmq.v2.MessagingService/"
R = TypeVar("R", bound=ProtoMessage)


@asynccontextmanager
async def endpoint(root: Path, **config: Any) -> AsyncIterator[tuple[Any, Any, int]]:
    """(broker app, remoting connection, gRPC port); ``config``: GrpcServerConfig fields."""
    async with running(root) as (app, conn), trio.open_nursery() as nursery:
        server = await start_grpc(nursery, app, GrpcServerConfig(grpc_server_port=0, **config))
        yield app, conn, server.port
        await server.shutdown()
        nursery.cancel_scope.cancel()


class Client:
    """Unary calls with the x-mq-* headers a 5.x client sends."""

    def __init__(self, port: int, client_id: str = "client-1") -> None:
        self.port = port
        self.metadata = [("x-mq-client-id", client_id), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v2")]

    def call(self, method: str, request: ProtoMessage, response_type: type[R]) -> R:
        with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
            rpc = channel.unary_unary(
                SERVICE + method,
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=response_type.FromString,
            )
            return rpc(request, metadata=self.metadata, timeout=10)  # type: ignore[no-any-return]

    def telemetry(self, settings: pb.Settings) -> pb.TelemetryCommand:
        """Open the stream, send the settings, return the first answer, then half-close."""
        with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
            rpc = channel.stream_stream(
                SERVICE + "Telemetry",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=pb.TelemetryCommand.FromString,
            )
            outbox: queue.Queue[pb.TelemetryCommand | None] = queue.Queue()

            def commands() -> Iterator[pb.TelemetryCommand]:
                while (item := outbox.get()) is not None:
                    yield item

            answers = rpc(commands(), metadata=self.metadata, timeout=10)
            outbox.put(pb.TelemetryCommand(settings=settings))
            first: pb.TelemetryCommand = next(answers)
            outbox.put(None)
            assert list(answers) == []
            return first


async def in_thread(fn: Callable[[], Any]) -> Any:
    return await trio.to_thread.run_sync(fn)


def producer_settings(*topics: str) -> pb.Settings:
    return pb.Settings(
        client_type=pb.PRODUCER,
        access_point=pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=1)]),
        publishing=pb.Publishing(topics=[pb.Resource(name=t) for t in topics]),
        user_agent=pb.UA(language=pb.JAVA, version="5.0.8"),
    )


def route_request(topic: str, port: int) -> pb.QueryRouteRequest:
    endpoints = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=port)])
    return pb.QueryRouteRequest(topic=pb.Resource(name=topic), endpoints=endpoints)


def message(topic: str, body: bytes, message_id: str, **system: Any) -> pb.Message:
    props = pb.SystemProperties(message_id=message_id, message_type=pb.NORMAL, born_host="10.0.0.9", **system)
    props.born_timestamp.FromMilliseconds(1_700_000_000_000)
    return pb.Message(
        topic=pb.Resource(name=topic), body=body, system_properties=props, user_properties={"k": "v"}
    )


async def test_query_route_lists_every_queue_at_this_endpoint(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        app.controller.topics.update(
            TopicConfig("Fifo", read_queue_nums=3, write_queue_nums=2, attributes={"message.type": "FIFO"})
        )
        client = Client(port)
        missing, fifo = await in_thread(
            lambda: [
                client.call("QueryRoute", route_request(t, port), pb.QueryRouteResponse)
                for t in ("Nope", "Fifo")
            ]
        )
    assert missing.status.code == pb.TOPIC_NOT_FOUND
    assert "Nope" in missing.status.message
    assert fifo.status.code == pb.OK
    # min(write 2, read 3) = 2 read-write queues after 1 read-only one, ids in that order.
    assert [(q.id, q.permission) for q in fifo.message_queues] == [
        (0, pb.READ),
        (1, pb.READ_WRITE),
        (2, pb.READ_WRITE),
    ]
    for queue_ in fifo.message_queues:
        assert list(queue_.accept_message_types) == [pb.FIFO]
        assert queue_.broker.name == app.controller.config.broker_name
        assert [(a.host, a.port) for a in queue_.broker.endpoints.addresses] == [("127.0.0.1", port)]


async def test_telemetry_answers_merged_settings_and_heartbeat_registers(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        app.controller.topics.update(TopicConfig("T1", 4, 4, 6))
        client = Client(port)
        stranger = await in_thread(
            lambda: Client(port, "other").call("Heartbeat", pb.HeartbeatRequest(), pb.HeartbeatResponse)
        )
        answer = await in_thread(lambda: client.telemetry(producer_settings("T1")))
        beat = await in_thread(
            lambda: client.call(
                "Heartbeat", pb.HeartbeatRequest(client_type=pb.PRODUCER), pb.HeartbeatResponse
            )
        )
        registered = dict(app.controller.clients.producers.get("T1", {}))
        bye = await in_thread(
            lambda: client.call(
                "NotifyClientTermination",
                pb.NotifyClientTerminationRequest(),
                pb.NotifyClientTerminationResponse,
            )
        )
        after = app.controller.clients.producers.get("T1", {})
    assert stranger.status.code == pb.UNRECOGNIZED_CLIENT_TYPE
    assert answer.status.code == pb.OK
    settings = answer.settings
    assert settings.backoff_policy.max_attempts == 3
    assert settings.backoff_policy.exponential_backoff.initial.ToMilliseconds() == 10
    assert settings.backoff_policy.exponential_backoff.max.ToMilliseconds() == 1000
    assert settings.publishing.max_body_size == 4 * 1024 * 1024
    assert settings.publishing.validate_message_type
    assert [t.name for t in settings.publishing.topics] == ["T1"]
    assert settings.user_agent.version == "5.0.8"
    assert not settings.metric.on
    assert beat.status.code == pb.OK
    assert [c.client_id for c in registered.values()] == ["client-1"]
    assert bye.status.code == pb.OK
    assert not after


async def test_send_message_is_stored_as_a_remoting_send(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, conn, port):
        app.controller.topics.update(TopicConfig("T2", 1, 1, 6))
        client = Client(port)
        request = pb.SendMessageRequest(
            messages=[message("T2", b"hello grpc", "01ABCDEF", tag="TagA", keys=["k1", "k2"])]
        )
        answer = await in_thread(lambda: client.call("SendMessage", request, pb.SendMessageResponse))
        stored = await pulled(conn, "T2", queue_id=0)
    assert answer.status.code == pb.OK
    assert [(e.status.code, e.message_id, e.offset) for e in answer.entries] == [(pb.OK, "01ABCDEF", 0)]
    assert [r.body for r in stored] == [b"hello grpc"]
    props = decode_properties(stored[0].properties)
    assert props["UNIQ_KEY"] == "01ABCDEF"
    assert props["TAGS"] == "TagA"
    assert props["KEYS"] == "k1 k2"
    assert props["k"] == "v"
    assert props["PGROUP"] == "T2"
    assert props["__BORNHOST"] == "10.0.0.9"
    assert props["BORN_TIMESTAMP"] == "1700000000000"


async def test_send_refusals_come_back_as_statuses(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        app.controller.topics.update(TopicConfig("Plain", 1, 1, 6))
        client = Client(port)

        def send(*messages: pb.Message) -> pb.SendMessageResponse:
            return client.call(
                "SendMessage", pb.SendMessageRequest(messages=messages), pb.SendMessageResponse
            )

        answers = await in_thread(
            lambda: [
                send(),
                send(message("Missing", b"x", "id1")),
                send(message("Plain", b"", "id2")),
                send(message("Plain", b"x", " ")),
                send(message("Plain", b"x", "id3", message_group="g1")),
            ]
        )
    codes = [a.status.code for a in answers]
    assert codes == [
        pb.MESSAGE_CORRUPTED,
        pb.TOPIC_NOT_FOUND,
        pb.MESSAGE_BODY_EMPTY,
        pb.ILLEGAL_MESSAGE_ID,
        pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
    ]
    assert "expected type is NORMAL, but actual type is FIFO" in answers[-1].status.message


async def test_fifo_message_group_always_lands_in_one_queue(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, conn, port):
        app.controller.topics.update(TopicConfig("Orders", 8, 8, 6, attributes={"message.type": "FIFO"}))
        client = Client(port)
        requests = [
            pb.SendMessageRequest(messages=[message("Orders", b"%d" % i, f"id{i}", message_group="order-42")])
            for i in range(5)
        ]
        answers = await in_thread(
            lambda: [client.call("SendMessage", r, pb.SendMessageResponse) for r in requests]
        )
        expected_queue = consistent_hash(java_string_hash("order-42"), 8)
        stored = await pulled(conn, "Orders", queue_id=expected_queue)
    assert [a.status.code for a in answers] == [pb.OK] * 5
    assert [r.body for r in stored] == [b"0", b"1", b"2", b"3", b"4"]
    assert decode_properties(stored[0].properties)["__SHARDINGKEY"] == "order-42"


def test_java_hashes() -> None:
    """String.hashCode values Java gives; Guava's consistentHash stays within its buckets and moves
    few keys when buckets grow (its defining property)."""
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert (
        java_string_hash("order-42-ü")
        == (sum(ord(c) * 31 ** (9 - i) for i, c in enumerate("order-42-ü")) + 2**31) % 2**32 - 2**31
    )
    keys = [java_string_hash(f"group-{i}") for i in range(500)]
    at8 = [consistent_hash(k, 8) for k in keys]
    at9 = [consistent_hash(k, 9) for k in keys]
    assert set(at8) == set(range(8))
    moved = sum(a != b for a, b in zip(at8, at9, strict=True))
    assert all(b == 8 for a, b in zip(at8, at9, strict=True) if a != b)
    assert moved < 500 // 4


async def test_query_assignment_one_pop_queue(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        app.controller.topics.update(TopicConfig("T3", 4, 4, 6))
        client = Client(port)
        request = pb.QueryAssignmentRequest(
            topic=pb.Resource(name="T3"),
            group=pb.Resource(name="G3"),
            endpoints=route_request("T3", port).endpoints,
        )
        answer = await in_thread(lambda: client.call("QueryAssignment", request, pb.QueryAssignmentResponse))
    assert answer.status.code == pb.OK
    assert [(a.message_queue.id, a.message_queue.permission) for a in answer.assignments] == [
        (-1, pb.READ_WRITE)
    ]


async def test_delayed_message_waits_for_its_delivery_time(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, conn, port):
        app.controller.topics.update(TopicConfig("Later", 1, 1, 6, attributes={"message.type": "DELAY"}))
        client = Client(port)
        due = message("Later", b"later", "id-delay")
        due.system_properties.message_type = pb.DELAY
        due.system_properties.delivery_timestamp.FromMilliseconds(app.controller.now_ms() + 60_000)
        request = pb.SendMessageRequest(messages=[due])
        answer = await in_thread(lambda: client.call("SendMessage", request, pb.SendMessageResponse))
        visible_now = await pulled(conn, "Later", queue_id=0)
        held_by_timer = app.controller.store.get_max_offset_in_queue(TIMER_TOPIC, 0)
    assert answer.status.code == pb.OK
    assert visible_now == []
    assert held_by_timer == 1


async def test_consumer_settings_register_the_group(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        client = Client(port, "consumer-1")
        settings = pb.Settings(
            client_type=pb.SIMPLE_CONSUMER,
            subscription=pb.Subscription(
                group=pb.Resource(name="G5"),
                subscriptions=[
                    pb.SubscriptionEntry(
                        topic=pb.Resource(name="T5"),
                        expression=pb.FilterExpression(type=pb.TAG, expression="TagA || TagB"),
                    )
                ],
            ),
        )
        answer = await in_thread(lambda: client.telemetry(settings))
        info = app.controller.clients.consumers.get("G5")
        members = info.client_ids() if info is not None else []
        tags = info.subscriptions["T5"].tags_set if info is not None else []
        bye = await in_thread(
            lambda: client.call(
                "NotifyClientTermination",
                pb.NotifyClientTerminationRequest(),
                pb.NotifyClientTerminationResponse,
            )
        )
        after = app.controller.clients.consumers.get("G5")
    assert answer.status.code == pb.OK
    assert answer.settings.subscription.receive_batch_size == 32
    assert answer.settings.subscription.long_polling_timeout.ToSeconds() == 20
    assert answer.settings.backoff_policy.max_attempts == 17  # retryMaxTimes 16 + 1
    assert len(answer.settings.backoff_policy.customized_backoff.next) == 18
    assert members == ["consumer-1"]
    assert tags == ["TagA", "TagB"]
    assert bye.status.code == pb.OK
    assert after is None
