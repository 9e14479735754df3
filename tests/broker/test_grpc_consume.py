"""The consuming half of the gRPC MessagingService, driven by a real gRPC client (grpcio).

Messages sent over gRPC are received over the ReceiveMessage server stream, acked, made visible
again with ChangeInvisibleDuration and forwarded to ``%DLQ%group``, which a remoting pull reads.
"""

from __future__ import annotations

from pathlib import Path

import grpc

from codec.bodies.register import TopicConfig
from codec.properties import decode_properties
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.helpers import pulled
from tests.broker.test_grpc_service import SERVICE, Client, endpoint, in_thread, message

GROUP = "G1"


def receive(
    client: Client,
    topic: str,
    invisible_s: int = 15,
    batch: int = 32,
    *,
    group: str = GROUP,
    auto_renew: bool = False,
) -> list[pb.ReceiveMessageResponse]:
    """One ReceiveMessage; with ``auto_renew`` no invisible duration is sent (a push consumer's)."""
    request = pb.ReceiveMessageRequest(
        group=pb.Resource(name=group),
        message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
        batch_size=batch,
        auto_renew=auto_renew,
    )
    if not auto_renew:
        request.invisible_duration.FromSeconds(invisible_s)
    request.long_polling_timeout.FromSeconds(5)
    with grpc.insecure_channel(f"127.0.0.1:{client.port}") as channel:
        rpc = channel.unary_stream(
            SERVICE + "ReceiveMessage",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.ReceiveMessageResponse.FromString,
        )
        return list(rpc(request, metadata=client.metadata, timeout=30))


def send(client: Client, topic: str, *bodies: bytes) -> None:
    for i, body in enumerate(bodies):
        request = pb.SendMessageRequest(messages=[message(topic, body, f"ID{i:04d}")])
        answer = client.call("SendMessage", request, pb.SendMessageResponse)
        assert answer.status.code == pb.OK


def received(answers: list[pb.ReceiveMessageResponse]) -> list[pb.Message]:
    return [a.message for a in answers if a.WhichOneof("content") == "message"]


async def test_receive_streams_status_messages_then_delivery_timestamp_and_ack(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        app.controller.topics.update(TopicConfig("T1", 1, 1, 6))
        client = Client(port)
        await in_thread(lambda: send(client, "T1", b"a", b"b"))
        answers = await in_thread(lambda: receive(client, "T1"))
        kinds = [a.WhichOneof("content") for a in answers]
        messages = received(answers)
        ack = pb.AckMessageRequest(
            group=pb.Resource(name=GROUP),
            topic=pb.Resource(name="T1"),
            entries=[
                pb.AckMessageEntry(
                    message_id=m.system_properties.message_id,
                    receipt_handle=m.system_properties.receipt_handle,
                )
                for m in messages
            ],
        )
        acked = await in_thread(lambda: client.call("AckMessage", ack, pb.AckMessageResponse))
        again = await in_thread(lambda: receive(client, "T1"))
    assert kinds == ["status", "message", "message", "delivery_timestamp"]
    assert answers[0].status.code == pb.OK
    assert sorted(m.body for m in messages) == [b"a", b"b"]
    handle = messages[0].system_properties.receipt_handle.split(" ")
    assert len(handle) == 9
    assert handle[4] == "0"
    assert handle[5] == app.controller.config.broker_name
    assert acked.status.code == pb.OK
    assert [e.status.code for e in acked.entries] == [pb.OK, pb.OK]
    assert [a.WhichOneof("content") for a in again] == ["status", "delivery_timestamp"]
    assert again[0].status.code == pb.MESSAGE_NOT_FOUND


async def test_change_invisible_duration_brings_the_message_back(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        app.controller.topics.update(TopicConfig("T1", 1, 1, 6))
        client = Client(port)
        await in_thread(lambda: send(client, "T1", b"again"))
        first = received(await in_thread(lambda: receive(client, "T1")))
        request = pb.ChangeInvisibleDurationRequest(
            group=pb.Resource(name=GROUP),
            topic=pb.Resource(name="T1"),
            receipt_handle=first[0].system_properties.receipt_handle,
            message_id=first[0].system_properties.message_id,
        )
        request.invisible_duration.FromMilliseconds(0)
        changed = await in_thread(
            lambda: client.call("ChangeInvisibleDuration", request, pb.ChangeInvisibleDurationResponse)
        )
        second: list[pb.Message] = []
        for _ in range(6):  # the revive service hands it back within a few revive rounds
            second = received(await in_thread(lambda: receive(client, "T1")))
            if second:
                break
    assert changed.status.code == pb.OK
    assert changed.receipt_handle
    assert changed.receipt_handle != request.receipt_handle
    assert [m.body for m in second] == [b"again"]
    assert second[0].system_properties.delivery_attempt == 2


async def test_forward_to_dead_letter_queue_then_nothing_left(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, conn, port):
        app.controller.topics.update(TopicConfig("T1", 1, 1, 6))
        client = Client(port)
        await in_thread(lambda: send(client, "T1", b"poison"))
        got = received(await in_thread(lambda: receive(client, "T1")))
        request = pb.ForwardMessageToDeadLetterQueueRequest(
            group=pb.Resource(name=GROUP),
            topic=pb.Resource(name="T1"),
            receipt_handle=got[0].system_properties.receipt_handle,
            message_id=got[0].system_properties.message_id,
            delivery_attempt=1,
            max_delivery_attempts=16,
        )
        answer = await in_thread(
            lambda: client.call(
                "ForwardMessageToDeadLetterQueue", request, pb.ForwardMessageToDeadLetterQueueResponse
            )
        )
        dlq = await pulled(conn, f"%DLQ%{GROUP}", queue_id=0)
    assert answer.status.code == pb.OK
    assert [r.body for r in dlq] == [b"poison"]
    assert decode_properties(dlq[0].properties)["UNIQ_KEY"] == "ID0000"


async def test_bad_receipt_handle_and_invisible_time_are_statuses(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        app.controller.topics.update(TopicConfig("T1", 1, 1, 6))
        client = Client(port)
        ack = pb.AckMessageRequest(
            group=pb.Resource(name=GROUP),
            topic=pb.Resource(name="T1"),
            entries=[pb.AckMessageEntry(message_id="x", receipt_handle="garbage")],
        )
        acked = await in_thread(lambda: client.call("AckMessage", ack, pb.AckMessageResponse))
        short = await in_thread(lambda: receive(client, "T1", invisible_s=1))
    assert [e.status.code for e in acked.entries] == [pb.INVALID_RECEIPT_HANDLE]
    assert [a.WhichOneof("content") for a in short] == ["status", "delivery_timestamp"]
    assert short[0].status.code == pb.ILLEGAL_INVISIBLE_TIME
