"""Fault rules on the gRPC endpoint (target grpc), driven by a real gRPC client: a busy answer in
the response's status, a call ended UNAVAILABLE, a call never answered, a late answer, matching
by topic; and what rules for gRPC methods look like in the table."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import pytest
import trio

from codec.bodies.register import TopicConfig
from gateway.transport.faults import BUSY_REMARK, FaultRuleError, FaultTable
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.test_grpc_service import Client, endpoint, in_thread, message

SEND = "/apache.rocketmq.v2.MessagingService/SendMessage"


def test_a_grpc_method_makes_a_grpc_rule() -> None:
    table = FaultTable(trio.sleep)
    by_name = table.add(request="SendMessage", respond="TOO_MANY_REQUESTS", times=2)
    by_path = table.add(request=SEND, respond=42900, topic="T")
    listed = table.list()
    assert [f["request"] for f in listed] == ["SendMessage", "SendMessage"]
    assert [f["target"] for f in listed] == ["grpc", "grpc"]
    assert [f["respond"] for f in listed] == [42900, 42900]
    assert [f["id"] for f in listed] == [by_name, by_path]
    assert table.point("grpc").rules
    assert not table.point("broker").rules


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"request": "SendMessage", "respond": "NO_SUCH_CODE"}, "unknown apache.rocketmq.v2.Code"),
        ({"request": "SendMessage", "respond": 2}, "2 is not an apache.rocketmq.v2.Code"),
        ({"request": "SendMessage", "target": "broker", "drop": True}, "go with target grpc"),
        ({"request": "SEND_MESSAGE_V2", "target": "grpc", "drop": True}, "go with target grpc"),
    ],
)
def test_bad_grpc_rules_say_why(spec: dict[str, object], error: str) -> None:
    with pytest.raises(FaultRuleError, match=error):
        FaultTable(trio.sleep).add(spec)


def _send(client: Client, topic: str, body: bytes = b"x") -> pb.SendMessageResponse:
    request = pb.SendMessageRequest(messages=[message(topic, body, "01AB" + body.hex())])
    return client.call("SendMessage", request, pb.SendMessageResponse)


async def test_send_answered_too_many_requests_then_stored(tmp_path: Path) -> None:
    table = FaultTable(trio.sleep)
    async with endpoint(tmp_path) as (app, _conn, port):
        app.faults = table.point("broker")
        app.controller.topics.update(TopicConfig("Busy", 1, 1, 6))
        app.controller.topics.update(TopicConfig("Calm", 1, 1, 6))
        table.add(request="SendMessage", topic="Busy", respond="TOO_MANY_REQUESTS", times=2)
        client = Client(port)
        answers = [await in_thread(lambda: _send(client, "Busy")) for _ in range(3)]
        calm = await in_thread(lambda: _send(client, "Calm"))
    assert [(a.status.code, a.status.message) for a in answers[:2]] == [
        (pb.TOO_MANY_REQUESTS, BUSY_REMARK)
    ] * 2
    assert not answers[0].entries
    assert answers[2].status.code == pb.OK
    assert answers[2].entries[0].offset == 0
    assert calm.status.code == pb.OK
    assert table.list()[0]["fired"] == 2


async def test_close_ends_the_call_unavailable(tmp_path: Path) -> None:
    table = FaultTable(trio.sleep)
    async with endpoint(tmp_path) as (app, _conn, port):
        app.faults = table.point("broker")
        app.controller.topics.update(TopicConfig("T", 1, 1, 6))
        table.add(request="SendMessage", close=True, times=1)
        client = Client(port)

        def closed() -> grpc.StatusCode:
            with pytest.raises(grpc.RpcError) as raised:
                _send(client, "T")
            return raised.value.code()

        code = await in_thread(closed)
        after = await in_thread(lambda: _send(client, "T"))
    assert code == grpc.StatusCode.UNAVAILABLE
    assert after.status.code == pb.OK


async def test_drop_lets_the_deadline_expire_and_delay_answers_late(tmp_path: Path) -> None:
    table = FaultTable(trio.sleep)
    async with endpoint(tmp_path) as (app, _conn, port):
        app.faults = table.point("broker")
        app.controller.topics.update(TopicConfig("T", 1, 1, 6))
        table.add(request="SendMessage", drop=True, times=1)
        table.add(request="SendMessage", delay_ms=400, times=1)

        def dropped() -> grpc.StatusCode:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                rpc = channel.unary_unary(
                    SEND,
                    request_serializer=lambda m: m.SerializeToString(),
                    response_deserializer=pb.SendMessageResponse.FromString,
                )
                request = pb.SendMessageRequest(messages=[message("T", b"d", "01D0")])
                with pytest.raises(grpc.RpcError) as raised:
                    rpc(request, metadata=Client(port).metadata, timeout=1)
                return raised.value.code()

        code = await in_thread(dropped)
        client = Client(port)

        def timed() -> tuple[float, pb.SendMessageResponse]:
            start = time.monotonic()
            answer = _send(client, "T")
            return time.monotonic() - start, answer

        took, late = await in_thread(timed)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert took >= 0.4
    assert late.status.code == pb.OK
