"""Fault rules on the gRPC endpoint's streaming calls, driven by a real gRPC client (grpcio):
ReceiveMessage (server streaming) refused with a status, ended UNAVAILABLE, never answered, answered
late, matched by group and topic; Telemetry (bidirectional) commands refused, the stream ended
UNAVAILABLE, a late answer (:mod:`broker.grpc.stream_faults`)."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
import trio

from codec.bodies.register import TopicConfig
from gateway.transport.faults import BUSY_REMARK, FaultTable
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.test_grpc_consume import GROUP, receive, received, send
from tests.broker.test_grpc_service import SERVICE, Client, endpoint, in_thread

SETTINGS = pb.Settings(
    client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(group=pb.Resource(name=GROUP))
)


def test_streaming_methods_make_grpc_rules() -> None:
    table = FaultTable(trio.sleep)
    table.add(request="ReceiveMessage", respond="TOO_MANY_REQUESTS", group=GROUP)
    table.add(request=SERVICE + "Telemetry", close=True, times=1)
    listed = table.list()
    assert [(f["request"], f["target"]) for f in listed] == [
        ("ReceiveMessage", "grpc"),
        ("Telemetry", "grpc"),
    ]
    assert listed[0]["respond"] == pb.TOO_MANY_REQUESTS


def _code_of(fn: Callable[[], object]) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as raised:
        fn()
    code: grpc.StatusCode = raised.value.code()
    return code


async def test_receive_refused_closed_dropped_and_delayed(tmp_path: Path) -> None:
    table = FaultTable(trio.sleep)
    async with endpoint(tmp_path) as (app, _conn, port):
        app.faults = table.point("broker")
        app.controller.topics.update(TopicConfig("RecvT", 1, 1, 6))
        client = Client(port)
        await in_thread(lambda: send(client, "RecvT", b"a", b"b"))
        other = table.add(request="ReceiveMessage", topic="Elsewhere", respond="TOO_MANY_REQUESTS")
        busy = table.add(request="ReceiveMessage", group=GROUP, respond="TOO_MANY_REQUESTS", times=1)
        refused = await in_thread(lambda: receive(client, "RecvT"))
        table.add(request="ReceiveMessage", close=True, times=1)
        closed = await in_thread(lambda: _code_of(lambda: receive(client, "RecvT")))
        table.add(request="ReceiveMessage", drop=True, times=1)
        dropped = await in_thread(lambda: _code_of(lambda: _receive_within(client, "RecvT", 1.0)))
        table.add(request="ReceiveMessage", delay_ms=400, times=1)
        start = time.monotonic()
        late = await in_thread(lambda: receive(client, "RecvT"))
        took = time.monotonic() - start
    assert [(a.WhichOneof("content"), a.status.code, a.status.message) for a in refused] == [
        ("status", pb.TOO_MANY_REQUESTS, BUSY_REMARK)
    ]
    assert closed == grpc.StatusCode.UNAVAILABLE
    assert dropped == grpc.StatusCode.DEADLINE_EXCEEDED
    assert took >= 0.4
    assert sorted(m.body for m in received(late)) == [b"a", b"b"]
    fired = {f["id"]: f["fired"] for f in table.list()}
    assert (fired[other], fired[busy]) == (0, 1)


def _receive_within(client: Client, topic: str, timeout_s: float) -> list[pb.ReceiveMessageResponse]:
    request = pb.ReceiveMessageRequest(
        group=pb.Resource(name=GROUP),
        message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
        batch_size=32,
    )
    request.invisible_duration.FromSeconds(15)
    with grpc.insecure_channel(f"127.0.0.1:{client.port}") as channel:
        rpc = channel.unary_stream(
            SERVICE + "ReceiveMessage",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.ReceiveMessageResponse.FromString,
        )
        return list(rpc(request, metadata=client.metadata, timeout=timeout_s))


def _telemetry_twice(client: Client) -> list[pb.TelemetryCommand]:
    """One Telemetry stream: the settings, its answer, the settings again, its answer."""
    with grpc.insecure_channel(f"127.0.0.1:{client.port}") as channel:
        rpc = channel.stream_stream(
            SERVICE + "Telemetry",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.TelemetryCommand.FromString,
        )
        outbox: queue.Queue[pb.TelemetryCommand | None] = queue.Queue()

        def commands() -> Iterator[pb.TelemetryCommand]:
            while (item := outbox.get()) is not None:
                yield item

        answers = rpc(commands(), metadata=client.metadata, timeout=10)
        got = []
        for _ in range(2):
            outbox.put(pb.TelemetryCommand(settings=SETTINGS))
            got.append(next(answers))
        outbox.put(None)
        assert list(answers) == []
        return got


async def test_telemetry_commands_refused_closed_and_delayed(tmp_path: Path) -> None:
    table = FaultTable(trio.sleep)
    async with endpoint(tmp_path) as (app, _conn, port):
        app.faults = table.point("broker")
        client = Client(port)
        table.add(
            request="Telemetry", group=GROUP, respond="INTERNAL_SERVER_ERROR", remark="try later", times=1
        )
        refused, answered = await in_thread(lambda: _telemetry_twice(client))
        table.add(request="Telemetry", close=True, times=1)
        closed = await in_thread(lambda: _code_of(lambda: client.telemetry(SETTINGS)))
        table.add(request="Telemetry", delay_ms=400, times=1)
        start = time.monotonic()
        late = await in_thread(lambda: client.telemetry(SETTINGS))
        took = time.monotonic() - start
    assert (refused.status.code, refused.status.message, refused.HasField("settings")) == (
        pb.INTERNAL_SERVER_ERROR,
        "try later",
        False,
    )
    assert (answered.status.code, answered.HasField("settings")) == (pb.OK, True)
    assert closed == grpc.StatusCode.UNAVAILABLE
    assert took >= 0.4
    assert (late.status.code, late.HasField("settings")) == (pb.OK, True)
