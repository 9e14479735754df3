"""Transactional messages against an in-process broker over the wire: half messages, END_TRANSACTION,
the check-back to a live producer, the check limit, and a restart between send and check
(the Java and Go clients do the same in compat_tests/test_transaction_compat.py)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

from broker.transaction.bridge import CHECK_MAX_TIME_TOPIC, HALF_TOPIC, OP_TOPIC, SYS_TRANS_GROUP
from codec.bodies.heartbeat import HeartbeatData, ProducerData
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from codec.headers.send import SendMessageRequestHeaderV2
from codec.headers.transaction import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from codec.message import MessageRecord, MessageSysFlag, decode_record
from codec.message_id import decode_offset_msg_id
from codec.properties import PGROUP, TAGS, TRAN_MSG, decode_properties, encode_properties
from gateway.transport.connection import Connection
from gateway.transport.dispatch import Dispatcher, RequestContext
from tests.broker.helpers import pulled, running

GROUP = "tx-pg"
FAST = {"transaction_timeout": 300, "transaction_check_interval": 200}


class Producer:
    """A transaction producer on one connection: answers checks with ``answers[body]``."""

    def __init__(self, answers: dict[bytes, int] | None = None) -> None:
        self.answers = answers or {}
        self.checks: list[tuple[CheckTransactionStateRequestHeader, MessageRecord]] = []
        self.dispatcher = Dispatcher("producer")
        self.dispatcher.register(
            RequestCode.CHECK_TRANSACTION_STATE, self.on_check, CheckTransactionStateRequestHeader
        )

    async def on_check(
        self, ctx: RequestContext, request: RemotingCommand, header: CheckTransactionStateRequestHeader
    ) -> None:
        message = decode_record(request.body)
        self.checks.append((header, message))
        answer = self.answers.get(message.body, TRANSACTION_NOT_TYPE)
        end = end_request(header.tran_state_table_offset, header.commit_log_offset, answer, from_check=True)
        assert ctx.connection.peer is not None
        await ctx.connection.peer.invoke_oneway(end)


def end_request(
    queue_offset: int, commit_log_offset: int, kind: int, *, from_check: bool = False, group: str = GROUP
) -> RemotingCommand:
    header = EndTransactionRequestHeader(
        producer_group=group,
        tran_state_table_offset=queue_offset,
        commit_log_offset=commit_log_offset,
        commit_or_rollback=kind,
        msg_id="m",
        from_transaction_check=from_check,
    )
    return RemotingCommand.request(RequestCode.END_TRANSACTION, header)


def half_request(topic: str, body: bytes, extra: dict[str, str] | None = None) -> RemotingCommand:
    props = {TRAN_MSG: "true", PGROUP: GROUP, TAGS: "TagA", **(extra or {})}
    header = SendMessageRequestHeaderV2(
        producer_group=GROUP,
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=1,
        sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties(props),
        reconsume_times=0,
        unit_mode=False,
        batch=False,
    )
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header, body=body)


async def send_half(conn: Connection, topic: str, body: bytes, **extra: str) -> tuple[int, int]:
    """Send a half message; returns (half queue offset, commit-log offset) as the client reads them."""
    resp = await conn.invoke(half_request(topic, body, extra), 5)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    fields = resp.ext_fields or {}
    assert fields["queueId"] == "1"  # the real queue, not the half queue
    return int(fields["queueOffset"]), decode_offset_msg_id(fields["msgId"])[2]


async def heartbeat(conn: Connection) -> None:
    data = HeartbeatData(client_id="tx-client@1", producer_data_set=[ProducerData(GROUP)])
    resp = await conn.invoke(
        RemotingCommand.request(RequestCode.HEART_BEAT, EmptyHeader(), body=data.encode()), 5
    )
    assert resp.code == ResponseCode.SUCCESS


async def wait_for(predicate: Callable[[], Awaitable[bool]], seconds: float = 8.0) -> None:
    """Poll ``predicate`` (which asks the broker over the wire) until true, failing after ``seconds``."""
    with trio.fail_after(seconds):
        while not await predicate():  # noqa: ASYNC110 - polling the broker over the wire
            await trio.sleep(0.05)


async def test_commit_shows_the_message_rollback_never_does(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        q1, c1 = await send_half(conn, "TxT", b"commit-me")
        q2, c2 = await send_half(conn, "TxT", b"roll-me-back")
        assert (q1, q2) == (0, 1)  # offsets in the half queue
        assert await pulled(conn, "TxT") == []  # nothing visible before the end
        half = await pulled(conn, HALF_TOPIC, 0)
        props = decode_properties(half[0].properties)
        assert (props["REAL_TOPIC"], props["REAL_QID"]) == ("TxT", "1")
        assert props["__transactionId__"] == props["UNIQ_KEY"]
        assert MessageSysFlag.transaction_type(half[0].sys_flag) == MessageSysFlag.TRANSACTION_NOT_TYPE

        resp = await conn.invoke(end_request(q1, c1, TRANSACTION_COMMIT_TYPE), 5)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        resp = await conn.invoke(end_request(q2, c2, TRANSACTION_ROLLBACK_TYPE), 5)
        assert resp.code == ResponseCode.SUCCESS, resp.remark

        [visible] = await pulled(conn, "TxT")
        assert visible.body == b"commit-me"
        assert MessageSysFlag.transaction_type(visible.sys_flag) == MessageSysFlag.TRANSACTION_COMMIT_TYPE
        assert visible.prepared_transaction_offset == c1
        kept = decode_properties(visible.properties)
        assert (kept[TRAN_MSG], kept[PGROUP], kept["REAL_TOPIC"]) == ("true", GROUP, "TxT")
        ops = await pulled(conn, OP_TOPIC, 0)
        assert [(op.body, decode_properties(op.properties)[TAGS]) for op in ops] == [
            (b"0,", "d"),
            (b"1,", "d"),
        ]


async def test_end_transaction_checks_group_and_offsets(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        q, c = await send_half(conn, "TxT", b"x")
        wrong_group = await conn.invoke(end_request(q, c, TRANSACTION_COMMIT_TYPE, group="other"), 5)
        assert (wrong_group.code, wrong_group.remark) == (
            ResponseCode.SYSTEM_ERROR,
            "The producer group wrong",
        )
        wrong_offset = await conn.invoke(end_request(q + 5, c, TRANSACTION_COMMIT_TYPE), 5)
        assert wrong_offset.remark == "The transaction state table offset wrong"
        missing = await conn.invoke(end_request(q, c + 999_999, TRANSACTION_COMMIT_TYPE), 5)
        assert (missing.code, missing.remark) == (
            ResponseCode.SYSTEM_ERROR,
            "Find prepared transaction message failed",
        )
        assert await pulled(conn, "TxT") == []


async def test_check_back_resolves_unknown_transactions(tmp_path: Path) -> None:
    producer = Producer(
        {b"commit-on-check": TRANSACTION_COMMIT_TYPE, b"rollback-on-check": TRANSACTION_ROLLBACK_TYPE}
    )
    async with running(tmp_path, producer, **FAST) as (app, conn):
        await heartbeat(conn)
        await send_half(conn, "TxC", b"commit-on-check")
        await send_half(conn, "TxC", b"rollback-on-check")

        async def both_checked() -> bool:
            return len(producer.checks) >= 2 and len(await pulled(conn, "TxC")) == 1

        await wait_for(both_checked)
        await trio.sleep(1.0)  # further rounds must not check ended transactions again
        assert sorted(m.body for _, m in producer.checks) == [b"commit-on-check", b"rollback-on-check"]
        header, message = producer.checks[0]
        assert header.topic == HALF_TOPIC
        assert header.transaction_id == header.msg_id
        assert (message.topic, message.queue_id) == ("TxC", 1)
        assert decode_properties(message.properties)["TRANSACTION_CHECK_TIMES"] == "1"
        [visible] = await pulled(conn, "TxC")
        assert visible.body == b"commit-on-check"
        assert app.controller.offsets.query(SYS_TRANS_GROUP, HALF_TOPIC, 0) >= 4


async def test_unknown_after_check_max_goes_to_the_check_max_topic(tmp_path: Path) -> None:
    producer = Producer()  # answers every check with UNKNOW
    async with running(tmp_path, producer, transaction_check_max=2, **FAST) as (_app, conn):
        await heartbeat(conn)
        await send_half(conn, "TxU", b"never-decided")

        async def moved() -> bool:
            return len(await pulled(conn, CHECK_MAX_TIME_TOPIC, 0)) == 1

        await wait_for(moved)
        assert [m.body for _, m in producer.checks] == [b"never-decided"] * 2
        assert await pulled(conn, "TxU") == []


async def test_half_messages_are_checked_after_a_restart(tmp_path: Path) -> None:
    async with running(tmp_path, transaction_check_interval=60_000) as (_app, conn):
        await send_half(conn, "TxR", b"survives")
    producer = Producer({b"survives": TRANSACTION_COMMIT_TYPE})
    async with running(tmp_path, producer, **FAST) as (_app, conn):
        await heartbeat(conn)

        async def visible() -> bool:
            return [m.body for m in await pulled(conn, "TxR")] == [b"survives"]

        await wait_for(visible)
        assert len(producer.checks) == 1


async def test_end_after_the_immunity_time_is_left_to_the_check(tmp_path: Path) -> None:
    async with running(tmp_path, transaction_timeout=100, transaction_check_interval=60_000) as (_app, conn):
        q, c = await send_half(conn, "TxI", b"late", CHECK_IMMUNITY_TIME_IN_SECONDS="0")
        await trio.sleep(0.3)
        late = await conn.invoke(end_request(q, c, TRANSACTION_COMMIT_TYPE), 5)
        assert late.code == ResponseCode.ILLEGAL_OPERATION
        from_check = await conn.invoke(end_request(q, c, TRANSACTION_COMMIT_TYPE, from_check=True), 5)
        assert from_check.code == ResponseCode.SUCCESS
        assert [m.body for m in await pulled(conn, "TxI")] == [b"late"]


async def test_a_committed_timer_message_waits_for_its_due_time(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        q, c = await send_half(conn, "TxTimer", b"due-later", TIMER_DELAY_MS="1500")
        committed_at = trio.current_time()
        resp = await conn.invoke(end_request(q, c, TRANSACTION_COMMIT_TYPE), 5)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        assert await pulled(conn, "TxTimer") == []

        async def arrived() -> bool:
            return [m.body for m in await pulled(conn, "TxTimer")] == [b"due-later"]

        await wait_for(arrived)
        assert trio.current_time() - committed_at >= 1.4  # due 1.5 s after the commit reached the broker
