"""What a group consumed, as a test reads it: offsets and lag per queue, retries (delayed and
ready), dead letters; through the in-process API and the control endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import trio

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.client import ConsumerSendMsgBackRequestHeader, UpdateConsumerOffsetRequestHeader
from gateway.control.client import ControlClient, ControlError
from gateway.testing.inprocess import InProcessGateway
from gateway.transport.client import connect
from gateway.transport.connection import Connection
from tests.broker.helpers import send_request


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    with InProcessGateway(tmp_path_factory.mktemp("store"), grpc_port=None, control_port=0) as gw:
        yield gw


async def commit(conn: Connection, group: str, topic: str, queue_id: int, offset: int) -> None:
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset
    )
    answer = await conn.invoke(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, header), 5)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


async def send(gateway: InProcessGateway, conn: Connection, topic: str, body: str, queue_id: int = 0) -> int:
    """Store one message; returns its commit-log offset."""
    answer = await conn.invoke(send_request(topic, body.encode(), queue_id=queue_id), 5)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    stored = await in_thread(lambda: gateway.stored_messages(topic))
    return int(next(m["commitLogOffset"] for m in stored if m["body"] == body))


async def in_thread(read: Any) -> Any:
    return await trio.to_thread.run_sync(read)


def lags(offsets: dict[str, Any]) -> list[tuple[str, int, int, int, int]]:
    return [
        (t["topic"], q["queueId"], q["brokerOffset"], q["consumerOffset"], q["lag"])
        for t in offsets["topics"]
        for q in t["queues"]
    ]


async def test_offsets_and_lag_per_queue(gateway: InProcessGateway) -> None:
    await in_thread(lambda: gateway.declare(groups=["ConsG1"]))  # as a consumer's heartbeat would
    async with connect(gateway.broker_addr) as conn:
        for i in range(3):
            await send(gateway, conn, "ConsT1", f"q0-{i}")
        await send(gateway, conn, "ConsT1", "q1-0", queue_id=1)
        await commit(conn, "ConsG1", "ConsT1", 0, 2)
        offsets = await in_thread(lambda: gateway.group_offsets("ConsG1"))
        assert lags(offsets) == [
            ("ConsT1", 0, 3, 2, 1),
            ("ConsT1", 1, 1, -1, 1),  # never committed: -1, all of it lagging
            ("ConsT1", 2, 0, -1, 0),
            ("ConsT1", 3, 0, -1, 0),
        ]
        assert offsets["lag"] == 2
        assert offsets["topics"][0]["queues"][0]["lastTimestamp"] > 0
        with pytest.raises(TimeoutError, match=r"lag of ConsG1 is 2, not at most 0, after 0\.2 s"):
            await in_thread(lambda: gateway.group_offsets("ConsG1", max_lag=0, timeout_s=0.2))
        await commit(conn, "ConsG1", "ConsT1", 0, 3)
        await commit(conn, "ConsG1", "ConsT1", 1, 1)
        done = await in_thread(lambda: gateway.group_offsets("ConsG1", "ConsT1", max_lag=0))
        assert done["lag"] == 0
        client = ControlClient(gateway.control_addr)
        over_http = await in_thread(lambda: client.group_offsets("ConsG1", topic="ConsT1", max_lag=0))
        assert over_http == done
        with pytest.raises(LookupError, match="no consumer group 'Nobody' on this broker"):
            await in_thread(lambda: gateway.group_offsets("Nobody"))
        with pytest.raises(ControlError, match="no consumer group 'Nobody'") as caught:
            await in_thread(lambda: client.group_offsets("Nobody"))
        assert caught.value.status == 404


async def test_retries_delayed_and_dead_letters(gateway: InProcessGateway) -> None:
    async with connect(gateway.broker_addr) as conn:
        offset = await send(gateway, conn, "ConsT2", "to-retry")
        dead = await send(gateway, conn, "ConsT2", "to-dlq")
        for phy, level in ((offset, 0), (dead, -1)):
            header = ConsumerSendMsgBackRequestHeader(offset=phy, group="ConsG2", delay_level=level)
            answer = await conn.invoke(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header), 5)
            assert answer.code == ResponseCode.SUCCESS, answer.remark
    retries = await in_thread(lambda: gateway.retry_messages("ConsG2", wait_for=1))
    assert [(m["topic"], m["body"], m["delayed"], m["reconsumeTimes"]) for m in retries] == [
        ("%RETRY%ConsG2", "to-retry", True, 1)
    ]
    letters = await in_thread(lambda: gateway.dlq_messages("ConsG2", wait_for=1))
    assert [(m["topic"], m["body"]) for m in letters] == [("%DLQ%ConsG2", "to-dlq")]
    client = ControlClient(gateway.control_addr)
    assert await in_thread(lambda: client.retry_messages("ConsG2", wait_for=1)) == retries
    assert await in_thread(lambda: client.dlq_messages("ConsG2", wait_for=1, limit=5)) == letters
    with pytest.raises(TimeoutError, match=r"0 of 1 dead letters of Other after 0\.1 s"):
        await in_thread(lambda: client.dlq_messages("Other", wait_for=1, timeout_s=0.1))
    status, body = await in_thread(lambda: client.request("GET", "/groups/ConsG2/dlq?limit=0"))
    assert (status, body) == (400, {"error": f"limit: '0' is not a number in 1..{100_000}"})
    status, _ = await in_thread(lambda: client.request("POST", "/groups/ConsG2/retry"))
    assert status == 405
