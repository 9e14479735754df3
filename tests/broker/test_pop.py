"""POP over the wire against an in-process broker: pop, ack, change invisible time, revive, long
polling, restarts, and the codes of bad requests (``PopMessageProcessor``, ``AckMessageProcessor``,
``ChangeInvisibleTimeProcessor``, ``PopReviveService``)."""

from __future__ import annotations

import time
from pathlib import Path

import trio

from broker.pop.assignment import allocate_averagely, allocate_by_circle, allocate_for_pop
from codec.bodies.lock import MessageQueue
from codec.bodies.pop import (
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.extra_info import (
    build_extra_info,
    parse_extra_info,
    parse_msg_offset_info,
    parse_start_offset_info,
)
from codec.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    NotificationRequestHeader,
    PollingInfoRequestHeader,
    PopMessageRequestHeader,
)
from codec.message import MessageRecord, iter_records
from codec.properties import POP_CK, decode_properties
from gateway.transport.connection import Connection
from tests.broker.helpers import running, send_request

GROUP = "popg"
FAST_REVIVE = {"reviveInterval": "100"}


def pop_request(
    topic: str, invisible_ms: int, poll_ms: int = 0, queue_id: int = -1, max_nums: int = 32, exp: str = "*"
) -> RemotingCommand:
    header = PopMessageRequestHeader(
        consumer_group=GROUP,
        topic=topic,
        queue_id=queue_id,
        max_msg_nums=max_nums,
        invisible_time=invisible_ms,
        poll_time=poll_ms,
        born_time=int(time.time() * 1000),
        init_mode=0,
        exp_type="TAG",
        exp=exp,
        order=False,
    )
    return RemotingCommand.request(RequestCode.POP_MESSAGE, header)


class Popped:
    """A POP response as the Java client reads it: each message with its receipt handle."""

    def __init__(self, resp: RemotingCommand, topic: str) -> None:
        self.code = resp.code
        self.ext = resp.ext_fields or {}
        self.messages: list[tuple[MessageRecord, str]] = []
        if resp.code != ResponseCode.SUCCESS:
            return
        starts = parse_start_offset_info(self.ext.get("startOffsetInfo")) or {}
        for record in iter_records(resp.body):
            props = decode_properties(record.properties)
            handle = props.get(POP_CK)
            if handle is None:
                start = starts[f"0@{record.queue_id}"]
                handle = build_extra_info(
                    start,
                    int(self.ext["popTime"]),
                    int(self.ext["invisibleTime"]),
                    int(self.ext["reviveQid"]),
                    record.topic,
                    "broker-a",
                    record.queue_id,
                    record.queue_offset,
                )
            self.messages.append((record, handle))

    def bodies(self) -> list[bytes]:
        return sorted(record.body for record, _ in self.messages)


def ack_request(topic: str, handle: str) -> RemotingCommand:
    info = parse_extra_info(handle)
    assert info.queue_id is not None
    assert info.queue_offset is not None
    header = AckMessageRequestHeader(
        GROUP, info.real_topic(topic, GROUP), info.queue_id, handle, info.queue_offset
    )
    return RemotingCommand.request(RequestCode.ACK_MESSAGE, header)


async def send_all(conn: Connection, topic: str, bodies: list[bytes]) -> None:
    for i, body in enumerate(bodies):
        resp = await conn.invoke(send_request(topic, body, queue_id=i % 2), 5)
        assert resp.code == ResponseCode.SUCCESS, resp.remark


async def pop_until(conn: Connection, topic: str, invisible_ms: int, deadline_s: float) -> Popped:
    with trio.fail_after(deadline_s):
        while True:
            popped = Popped(await conn.invoke(pop_request(topic, invisible_ms), 5), topic)
            if popped.messages:
                return popped
            await trio.sleep(0.1)


async def test_pop_ack_and_revive_of_what_was_not_acked(tmp_path: Path) -> None:
    async with running(tmp_path, extra=dict(FAST_REVIVE)) as (_app, conn):
        await send_all(conn, "PopT", [b"m0", b"m1", b"m2"])
        first = Popped(await conn.invoke(pop_request("PopT", 2000), 5), "PopT")
        assert first.code == ResponseCode.SUCCESS
        assert first.bodies() == [b"m0", b"m1", b"m2"]
        assert parse_msg_offset_info(first.ext["msgOffsetInfo"]) == {"0@0": [0, 1], "0@1": [0]}
        popped_at = time.monotonic()
        # Invisible: nothing more to pop now.
        again = await conn.invoke(pop_request("PopT", 2000), 5)
        assert again.code == ResponseCode.POLLING_TIMEOUT
        for record, handle in first.messages:
            if record.body != b"m1":
                assert (await conn.invoke(ack_request("PopT", handle), 5)).code == ResponseCode.SUCCESS
        back = await pop_until(conn, "PopT", 60_000, 8)
        waited = time.monotonic() - popped_at
        assert back.bodies() == [b"m1"]
        assert waited >= 1.9, waited
        ((record, handle),) = back.messages
        assert record.topic == "PopT"
        assert record.reconsume_times == 1
        assert parse_extra_info(handle).retry_flag == "1"
        assert (await conn.invoke(ack_request("PopT", handle), 5)).code == ResponseCode.SUCCESS
        # Acked ones never come back (two more revive periods).
        await trio.sleep(2.5)
        late = await conn.invoke(pop_request("PopT", 2000), 5)
        assert late.code == ResponseCode.POLLING_TIMEOUT


async def test_change_invisible_time_gives_a_new_handle(tmp_path: Path) -> None:
    async with running(tmp_path, extra=dict(FAST_REVIVE)) as (_app, conn):
        await send_all(conn, "PopC", [b"c0"])
        ((record, handle),) = Popped(await conn.invoke(pop_request("PopC", 2000), 5), "PopC").messages
        info = parse_extra_info(handle)
        header = ChangeInvisibleTimeRequestHeader(
            GROUP, "PopC", record.queue_id, handle, record.queue_offset, 4000
        )
        resp = await conn.invoke(RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header), 5)
        assert resp.code == ResponseCode.SUCCESS
        ext = resp.ext_fields or {}
        assert (ext["invisibleTime"], ext["reviveQid"]) == ("4000", str(info.revive_qid))
        assert int(ext["popTime"]) >= info.pop_time
        # Not back at the old invisible time, back after the new one.
        await trio.sleep(3.5)
        assert (await conn.invoke(pop_request("PopC", 60_000), 5)).code == ResponseCode.POLLING_TIMEOUT
        back = await pop_until(conn, "PopC", 60_000, 5)
        assert back.bodies() == [b"c0"]


async def test_long_polling_pop_is_woken_by_an_arrival(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        await send_all(conn, "PopL", [b"first"])
        await pop_until(conn, "PopL", 60_000, 5)
        result: list[RemotingCommand] = []

        async def waiting_pop() -> None:
            result.append(await conn.invoke(pop_request("PopL", 60_000, poll_ms=10_000), 15))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiting_pop)
            await trio.sleep(0.5)
            assert not result
            started = time.monotonic()
            await send_all(conn, "PopL", [b"second"])
        assert time.monotonic() - started < 5
        assert Popped(result[0], "PopL").bodies() == [b"second"]


async def test_revive_survives_a_restart(tmp_path: Path) -> None:
    async with running(tmp_path, extra=dict(FAST_REVIVE)) as (_app, conn):
        await send_all(conn, "PopR", [b"r0", b"r1"])
        first = Popped(await conn.invoke(pop_request("PopR", 3000), 5), "PopR")
        assert first.bodies() == [b"r0", b"r1"]
        acked = [h for r, h in first.messages if r.body == b"r0"]
        assert (await conn.invoke(ack_request("PopR", acked[0]), 5)).code == ResponseCode.SUCCESS
    async with running(tmp_path, extra=dict(FAST_REVIVE)) as (_app, conn):
        back = await pop_until(conn, "PopR", 60_000, 10)
        assert back.bodies() == [b"r1"]
        await trio.sleep(1.5)
        assert (await conn.invoke(pop_request("PopR", 60_000), 5)).code == ResponseCode.POLLING_TIMEOUT


async def test_bad_requests_get_java_codes(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        await send_all(conn, "PopB", [b"b0"])
        assert (await conn.invoke(pop_request("NoSuchTopic", 1000), 5)).code == ResponseCode.TOPIC_NOT_EXIST
        assert (
            await conn.invoke(pop_request("PopB", 1000, max_nums=33), 5)
        ).code == ResponseCode.INVALID_PARAMETER
        assert (
            await conn.invoke(pop_request("PopB", 1000, queue_id=99), 5)
        ).code == ResponseCode.INVALID_PARAMETER

        def ack(queue_id: int, offset: int, extra: str) -> RemotingCommand:
            header = AckMessageRequestHeader(GROUP, "PopB", queue_id, extra, offset)
            return RemotingCommand.request(RequestCode.ACK_MESSAGE, header)

        assert (await conn.invoke(ack(0, 0, "garbage"), 5)).code == ResponseCode.SYSTEM_ERROR
        assert (await conn.invoke(ack(0, 0, "1 2 x 4 0 b 0 0"), 5)).code == ResponseCode.SYSTEM_ERROR
        assert (await conn.invoke(ack(0, 5, "0 1 2 3 0 b 0 5"), 5)).code == ResponseCode.NO_MESSAGE
        assert (await conn.invoke(ack(77, 0, "0 1 2 3 0 b 0 0"), 5)).code == ResponseCode.MESSAGE_ILLEGAL
        # A foreign but well-formed handle is accepted and ignored, as on the Java broker.
        assert (await conn.invoke(ack(0, 0, "0 1 2 3 0 other 0 0"), 5)).code == ResponseCode.SUCCESS
        empty = RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, {}, body=b'{"acks":[]}')
        assert (await conn.invoke(empty, 5)).code == ResponseCode.NO_MESSAGE
        junk = RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, {}, body=b"{not json")
        assert (await conn.invoke(junk, 5)).code == ResponseCode.SYSTEM_ERROR
        # The broker still serves.
        assert Popped(await conn.invoke(pop_request("PopB", 1000), 5), "PopB").bodies() == [b"b0"]


def test_allocation_strategies_as_java_allocates() -> None:
    queues = [MessageQueue("T", "b", q) for q in range(5)]
    clients = ["c0", "c1"]
    assert [q.queue_id for q in allocate_averagely("c0", queues, clients)] == [0, 1, 2]
    assert [q.queue_id for q in allocate_averagely("c1", queues, clients)] == [3, 4]
    assert [q.queue_id for q in allocate_by_circle("c1", queues, clients)] == [1, 3]
    assert allocate_averagely("nobody", queues, clients) == []
    every = allocate_for_pop(allocate_averagely, "c0", queues, clients, -1)
    assert {q.queue_id for q in every} == {-1}
    three = ["c0", "c1", "c2"]
    shared = allocate_for_pop(allocate_averagely, "c0", queues, three, 1)
    assert [q.queue_id for q in shared] == [0, 1, 2, 3]


async def test_message_request_modes_persist_and_shape_assignments(tmp_path: Path) -> None:
    mode = SetMessageRequestModeRequestBody(
        topic="PopM", consumer_group=GROUP, mode="POP", pop_share_queue_num=0
    )
    async with running(tmp_path) as (_app, conn):
        await send_all(conn, "PopM", [b"x"])
        retry = SetMessageRequestModeRequestBody(topic="%RETRY%g", consumer_group=GROUP, mode="POP")
        for body, code in (
            (retry, ResponseCode.NO_PERMISSION),
            (
                SetMessageRequestModeRequestBody(topic="Nope", consumer_group=GROUP),
                ResponseCode.TOPIC_NOT_EXIST,
            ),
            (mode, ResponseCode.SUCCESS),
        ):
            request = RemotingCommand.request(RequestCode.SET_MESSAGE_REQUEST_MODE, {}, body=body.encode())
            assert (await conn.invoke(request, 5)).code == code
        query = QueryAssignmentRequestBody(
            topic="PopM",
            consumer_group=GROUP,
            client_id="c1",
            strategy_name="AVG",
            message_model="CLUSTERING",
        )
        resp = await conn.invoke(
            RemotingCommand.request(RequestCode.QUERY_ASSIGNMENT, {}, body=query.encode()), 5
        )
        # No heartbeat from the group: Java answers no assignment (null), not an empty set.
        assert resp.code == ResponseCode.SUCCESS
        assert QueryAssignmentResponseBody.decode(resp.body).message_queue_assignments is None
    async with running(tmp_path) as (_app, conn):
        resp = await conn.invoke(RemotingCommand.request(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE, {}), 5)
        assert resp.body == b'{"messageRequestModeMap":{"PopM":{"popg":' + mode.encode() + b"}}}"


def notification_request(topic: str, poll_ms: int, queue_id: int = -1) -> RemotingCommand:
    header = NotificationRequestHeader(
        consumer_group=GROUP, topic=topic, queue_id=queue_id, poll_time=poll_ms, born_time=0, order=False
    )
    return RemotingCommand.request(RequestCode.NOTIFICATION, header)


async def test_notification_says_whether_there_is_something_to_pop(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        await send_all(conn, "PopN", [b"n0"])
        resp = await conn.invoke(notification_request("PopN", 0), 5)
        assert (resp.code, (resp.ext_fields or {})["hasMsg"]) == (ResponseCode.SUCCESS, "true")
        await pop_until(conn, "PopN", 60_000, 5)
        resp = await conn.invoke(notification_request("PopN", 0), 5)
        assert (resp.ext_fields or {})["hasMsg"] == "false"
        answers: list[RemotingCommand] = []

        async def waiting() -> None:
            answers.append(await conn.invoke(notification_request("PopN", 10_000), 15))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiting)
            await trio.sleep(0.5)
            info = await conn.invoke(
                RemotingCommand.request(
                    RequestCode.POLLING_INFO, PollingInfoRequestHeader(GROUP, "PopN", -1)
                ),
                5,
            )
            assert (info.ext_fields or {})["pollingNum"] == "1"
            assert not answers
            await send_all(conn, "PopN", [b"n1"])
        assert (answers[0].ext_fields or {})["hasMsg"] == "true"
        missing = await conn.invoke(notification_request("NoSuchTopic", 0), 5)
        assert missing.code == ResponseCode.TOPIC_NOT_EXIST


async def test_orderly_pop_blocks_the_queue_until_acked_or_invisible_time_passes(tmp_path: Path) -> None:
    async with running(tmp_path) as (app, conn):
        for body in (b"o0", b"o1", b"o2"):
            assert (await conn.invoke(send_request("PopO", body, queue_id=0), 5)).code == ResponseCode.SUCCESS

        async def orderly_pop() -> Popped:
            request = pop_request("PopO", 2000, queue_id=0)
            request.ext_fields = {**(request.ext_fields or {}), "order": "true"}
            return Popped(await conn.invoke(request, 5), "PopO")

        first = await orderly_pop()
        assert first.bodies() == [b"o0", b"o1", b"o2"]
        assert (first.ext["reviveQid"], first.ext["orderCountInfo"]) == ("999", "0 0 0")
        assert (await orderly_pop()).code == ResponseCode.POLLING_TIMEOUT  # blocked
        handles = {record.queue_offset: handle for record, handle in first.messages}
        offsets = app.controller.offsets
        assert (await conn.invoke(ack_request("PopO", handles[0]), 5)).code == ResponseCode.SUCCESS
        assert offsets.query(GROUP, "PopO", 0) == 1
        stale = handles[1].replace(f" {first.ext['popTime']} ", " 1 ", 1)
        assert (await conn.invoke(ack_request("PopO", stale), 5)).code == ResponseCode.SUCCESS
        assert offsets.query(GROUP, "PopO", 0) == 1
        await trio.sleep(2.2)
        again = await orderly_pop()
        assert again.bodies() == [b"o1", b"o2"]
        assert again.ext["orderCountInfo"] == "0 qo0%1 1;0 qo0%2 1;0 0 1"
        for _record, handle in again.messages:
            assert (await conn.invoke(ack_request("PopO", handle), 5)).code == ResponseCode.SUCCESS
        assert offsets.query(GROUP, "PopO", 0) == 3
        assert (await orderly_pop()).code == ResponseCode.POLLING_TIMEOUT
    saved = (tmp_path / "store" / "config" / "consumerOrderInfo.json").read_text()
    assert '"PopO@popg"' in saved


async def test_pop_filters_by_tag_and_sql92(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        for i, (tag, a) in enumerate([("TagA", "1"), ("TagB", "5"), ("TagA", "7")]):
            request = send_request("PopF", f"f{i}".encode(), {"TAGS": tag, "a": a}, queue_id=0)
            assert (await conn.invoke(request, 5)).code == ResponseCode.SUCCESS

        def filtered(exp: str, exp_type: str, group: str) -> RemotingCommand:
            request = pop_request("PopF", 60_000, queue_id=0, exp=exp)
            request.ext_fields = {**(request.ext_fields or {}), "expType": exp_type, "consumerGroup": group}
            return request

        tags = Popped(await conn.invoke(filtered("TagA", "TAG", "gTag"), 5), "PopF")
        assert tags.bodies() == [b"f0", b"f2"]
        sql = Popped(await conn.invoke(filtered("a > 1 AND TAGS = 'TagA'", "SQL92", "gSql"), 5), "PopF")
        assert sql.bodies() == [b"f2"]
        bad = await conn.invoke(filtered("a >>> 1", "SQL92", "gBad"), 5)
        assert (bad.code, bad.remark) == (
            ResponseCode.SUBSCRIPTION_PARSE_FAILED,
            "parse the consumer's subscription failed",
        )


async def test_hostile_numbers_get_answers_not_crashes(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        await send_all(conn, "PopH", [b"h0"])
        huge = await conn.invoke(pop_request("PopH", 2**63 - 1), 5)
        # The checkpoint cannot be written (its revive time is beyond a Java long): nothing leaves.
        assert huge.code == ResponseCode.POLLING_TIMEOUT
        negative = Popped(await conn.invoke(pop_request("PopH", -5), 5), "PopH")
        assert negative.bodies() == [b"h0"]
        zero = await conn.invoke(pop_request("PopH", 1000, max_nums=-3), 5)
        assert zero.code == ResponseCode.POLLING_TIMEOUT
        ((record, handle),) = negative.messages
        header = ChangeInvisibleTimeRequestHeader(
            GROUP, "PopH", record.queue_id, handle, record.queue_offset, 2**63 - 1
        )
        resp = await conn.invoke(RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header), 5)
        assert resp.code == ResponseCode.SYSTEM_ERROR


async def test_in_flight_threshold_and_foreign_revive_queues(tmp_path: Path) -> None:
    extra = {"enablePopMessageThreshold": "true", "popInflightMessageThreshold": "1"}
    async with running(tmp_path, extra=extra) as (app, conn):
        for body in (b"t0", b"t1", b"t2", b"t3"):
            assert (await conn.invoke(send_request("PopI", body, queue_id=0), 5)).code == ResponseCode.SUCCESS
        first = Popped(await conn.invoke(pop_request("PopI", 60_000, queue_id=0, max_nums=2), 5), "PopI")
        assert first.bodies() == [b"t0", b"t1"]
        # Two in flight, more than the threshold of 1: the queue is skipped until acks come in.
        assert (
            await conn.invoke(pop_request("PopI", 60_000, queue_id=0), 5)
        ).code == ResponseCode.POLLING_TIMEOUT
        for _record, handle in first.messages:
            assert (await conn.invoke(ack_request("PopI", handle), 5)).code == ResponseCode.SUCCESS
        assert Popped(await conn.invoke(pop_request("PopI", 60_000, queue_id=0), 5), "PopI").bodies() == [
            b"t2",
            b"t3",
        ]
        revive_topic = "rmq_sys_REVIVE_LOG_DefaultCluster"
        before = app.controller.store.get_max_offset_in_queue(revive_topic, 0)
        foreign = AckMessageRequestHeader(GROUP, "PopI", 0, "0 1 1000 2147483647 0 broker-a 0 0", 0)
        resp = await conn.invoke(RemotingCommand.request(RequestCode.ACK_MESSAGE, foreign), 5)
        assert resp.code == ResponseCode.SUCCESS
        assert not (tmp_path / "store" / "consumequeue" / revive_topic / "2147483647").exists()
        assert app.controller.store.get_max_offset_in_queue(revive_topic, 0) == before


async def test_notification_of_an_orderly_group_counts_a_blocked_queue_as_empty(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        for body in (b"b0", b"b1"):
            assert (
                await conn.invoke(send_request("PopNO", body, queue_id=0), 5)
            ).code == ResponseCode.SUCCESS
        request = pop_request("PopNO", 60_000, queue_id=0, max_nums=1)
        request.ext_fields = {**(request.ext_fields or {}), "order": "true"}
        assert Popped(await conn.invoke(request, 5), "PopNO").bodies() == [b"b0"]

        async def has_msg(order: bool) -> str:
            req = notification_request("PopNO", 0, queue_id=0)
            req.ext_fields = {**(req.ext_fields or {}), "order": "true" if order else "false"}
            return (await conn.invoke(req, 5)).ext_fields["hasMsg"]  # type: ignore[index]

        assert await has_msg(order=True) == "false"  # b1 waits behind the unacked b0
        assert await has_msg(order=False) == "true"
