"""The renewal of push consumers' receipt handles (``DefaultReceiptHandleManager``).

The table and the policies alone, then the endpoint in front of an in-process broker with short
times (a 2 s default invisible time, renewed when within 1.5 s of it, scanned every 0.2 s): a
message received with ``auto_renew`` stays invisible while its client holds it, the client acks
it with the handle it was given long after that handle's own invisible time, and a client that
terminates gets its messages back for others after ``invisibleTimeMillisWhenClear``, not a
renewal's minute later.
"""

from __future__ import annotations

import time
from pathlib import Path

from broker.grpc.renewal import (
    CUSTOMIZED_RETRY_MS,
    HandleTable,
    TrackedHandle,
    renew_delay_ms,
    retry_delay_ms,
)
from codec.bodies.register import TopicConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker import test_grpc_consume as consume
from tests.broker.test_grpc_service import Client, endpoint, in_thread, message

GROUP, TOPIC = "GRenew", "TRenew"
SHORT = {
    "default_invisible_time_mills": 2_000,
    "renew_ahead_time_millis": 1_500,
    "renew_schedule_period_millis": 200,
    "invisible_time_millis_when_clear": 1_000,
}


def handle(pop_time: int, invisible: int, offset: int = 7, queue: int = 1) -> str:
    """A receipt handle: extraInfo (ck offset, pop time, invisible, revive qid, retry flag, broker,
    queue, offset) and the commit-log offset."""
    return f"{offset} {pop_time} {invisible} 0 0 broker-a {queue} {offset} 1234"


def tracked(text: str, message_id: str = "M1") -> TrackedHandle:
    return TrackedHandle(GROUP, TOPIC, message_id, text, reconsume_times=0, consume_ms=1_000)


def test_table_finds_a_message_by_any_of_its_handles() -> None:
    table = HandleTable()
    first = tracked(handle(1_000, 60_000))
    table.add("c1", first)
    first.current = handle(50_000, 60_000)  # renewed: same broker, queue and offset
    other = table.remove("c1", GROUP, "M1", handle(50_000, 60_000))
    assert other is first
    assert len(table) == 0
    assert table.clients() == []
    assert table.remove("c1", GROUP, "M1", handle(1_000, 60_000)) is None
    assert table.remove("c1", GROUP, "M1", "garbage") is None


def test_table_due_clear_and_discard() -> None:
    table = HandleTable()
    soon, later = tracked(handle(0, 10_000), "M1"), tracked(handle(0, 60_000, offset=8), "M2")
    table.add("c1", soon)
    table.add("c1", later)
    table.add("c2", tracked(handle(0, 10_000, offset=9), "M3"))
    due = table.due(now_ms=5_000, ahead_ms=5_000)
    soon.renewing = True
    while_renewing = table.due(now_ms=5_000, ahead_ms=5_000)
    table.discard("c1", later)
    cleared = table.clear(("c2", GROUP))
    assert sorted(h.message_id for _, h in due) == ["M1", "M3"]
    assert [h.message_id for _, h in while_renewing] == ["M3"]
    assert [h.message_id for h in cleared] == ["M3"]
    assert len(table) == 1
    assert table.clients() == [("c1", GROUP)]


def test_renew_and_retry_delays_follow_the_proxy_policies() -> None:
    assert [renew_delay_ms(n) for n in (-1, 0, 1, 5, 9)] == [60_000, 60_000, 180_000, 3_600_000, 3_600_000]
    # CustomizedRetryPolicy: reconsumeTimes + 2 into its schedule, the last step beyond it.
    assert retry_delay_ms(None, 0) == CUSTOMIZED_RETRY_MS[2] == 10_000
    assert retry_delay_ms({"type": "CUSTOMIZED"}, 100) == CUSTOMIZED_RETRY_MS[-1]
    exponential = {
        "type": "EXPONENTIAL",
        "exponentialRetryPolicy": {"initial": 1000, "max": 60000, "multiplier": 3},
    }
    assert [retry_delay_ms(exponential, n) for n in (0, 2, 10)] == [1_000, 9_000, 60_000]


def register(client: Client) -> None:
    settings = pb.Settings(
        client_type=pb.PUSH_CONSUMER,
        subscription=pb.Subscription(
            group=pb.Resource(name=GROUP),
            subscriptions=[
                pb.SubscriptionEntry(
                    topic=pb.Resource(name=TOPIC), expression=pb.FilterExpression(type=pb.TAG, expression="*")
                )
            ],
        ),
    )
    assert client.telemetry(settings).status.code == pb.OK


def receive(client: Client, *, auto_renew: bool) -> list[pb.Message]:
    return consume.received(consume.receive(client, TOPIC, 20, group=GROUP, auto_renew=auto_renew))


def ack(client: Client, got: pb.Message) -> pb.AckMessageResponse:
    request = pb.AckMessageRequest(
        group=pb.Resource(name=GROUP),
        topic=pb.Resource(name=TOPIC),
        entries=[
            pb.AckMessageEntry(
                message_id=got.system_properties.message_id,
                receipt_handle=got.system_properties.receipt_handle,
            )
        ],
    )
    return client.call("AckMessage", request, pb.AckMessageResponse)


def held(client: Client, body: bytes) -> list[pb.Message]:
    """``client`` registered as a push consumer receives ``body`` (sent first) with auto_renew."""
    register(client)
    request = pb.SendMessageRequest(messages=[message(TOPIC, body, "ID-" + body.decode())])
    assert client.call("SendMessage", request, pb.SendMessageResponse).status.code == pb.OK
    return receive(client, auto_renew=True)


async def test_a_held_message_stays_invisible_and_its_first_handle_acks_it(tmp_path: Path) -> None:
    async with endpoint(tmp_path, **SHORT) as (app, _conn, port):
        app.controller.topics.update(TopicConfig(TOPIC, 1, 1, 6))
        holder, other = Client(port, "holder"), Client(port, "other")
        got = await in_thread(lambda: held(holder, b"slow"))
        received_at = time.monotonic()
        first_invisible_ms = int(got[0].system_properties.receipt_handle.split(" ")[2])
        # Well past the 2 s invisible time of the handle the client holds, while others poll.
        meanwhile: list[pb.Message] = []
        while time.monotonic() - received_at < 6:
            meanwhile += await in_thread(lambda: receive(other, auto_renew=False))
        held_for = time.monotonic() - received_at
        acked = await in_thread(lambda: ack(holder, got[0]))
        afterwards = await in_thread(lambda: receive(other, auto_renew=False))
    assert [m.body for m in got] == [b"slow"]
    assert first_invisible_ms == 2_000
    assert held_for >= 6
    assert meanwhile == []
    assert acked.status.code == pb.OK, acked
    assert [e.status.code for e in acked.entries] == [pb.OK]
    assert afterwards == []


async def test_a_terminated_client_gives_its_messages_back(tmp_path: Path) -> None:
    async with endpoint(tmp_path, **SHORT) as (app, _conn, port):
        app.controller.topics.update(TopicConfig(TOPIC, 1, 1, 6))
        leaver, other = Client(port, "leaver"), Client(port, "other")
        got = await in_thread(lambda: held(leaver, b"orphan"))
        # One long poll (5 s) of another client: past the first 2 s, so renewed to 1 min by now.
        meanwhile = await in_thread(lambda: receive(other, auto_renew=False))
        await in_thread(
            lambda: leaver.call(
                "NotifyClientTermination",
                pb.NotifyClientTerminationRequest(),
                pb.NotifyClientTerminationResponse,
            )
        )
        left_at = time.monotonic()
        deadline = left_at + 30
        again: list[pb.Message] = []
        while not again and time.monotonic() < deadline:
            again = await in_thread(lambda: receive(other, auto_renew=False))
        back_after = time.monotonic() - left_at
    assert [m.body for m in got] == [b"orphan"]
    assert meanwhile == []
    assert back_after < 30  # not the minute its last renewal made it invisible for
    assert [m.body for m in again] == [b"orphan"]
    assert again[0].system_properties.delivery_attempt == 2
