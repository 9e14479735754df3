"""SQL92 subscriptions end to end in an in-process broker, through the wire protocol: the client
config check, pulls that carry their expression, pulls that rely on the heartbeat's subscription,
long-poll wake-ups, and retry topics (the Java clients are in compat_tests/test_filter_compat.py).
"""

from __future__ import annotations

import time
from collections.abc import Collection
from pathlib import Path

import trio

from broker.filter import ConsumerFilterManager, ExpressionForRetryMessageFilter, ExpressionMessageFilter
from broker.filter.pull_filter import get_message
from codec.bodies.heartbeat import CheckClientRequestBody, ConsumerData, HeartbeatData, SubscriptionData
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from codec.headers.pull import PullMessageRequestHeader, PullSysFlag
from codec.message import MessageRecord, encode_record
from codec.properties import RETRY_TOPIC, TAGS, encode_properties
from gateway.transport.connection import Connection
from store.results import GetMessageResult, GetMessageStatus
from tests.broker.helpers import records, running_broker, send_request

SQL92 = "SQL92"


def sql_pull(
    topic: str, offset: int, expression: str, *, flags: int, suspend_ms: int = 0, version: int = 1
) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group="cg",
        topic=topic,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=int(flags),
        commit_offset=0,
        suspend_timeout_millis=suspend_ms,
        subscription=expression,
        sub_version=version,
        expression_type=SQL92,
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header)


def check_request(expression: str, expression_type: str = SQL92) -> RemotingCommand:
    sub = SubscriptionData(topic="T", sub_string=expression, expression_type=expression_type, sub_version=1)
    body = CheckClientRequestBody(client_id="c1", group="cg", subscription_data=sub)
    return RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, EmptyHeader(), body=body.encode())


async def heartbeat(conn: Connection, topic: str, expression: str, version: int) -> None:
    sub = SubscriptionData(topic=topic, sub_string=expression, expression_type=SQL92, sub_version=version)
    consumer = ConsumerData(group_name="cg", subscription_data_set=[sub])
    body = HeartbeatData(client_id="c1", consumer_data_set=[consumer]).encode()
    resp = await conn.invoke(RemotingCommand.request(RequestCode.HEART_BEAT, EmptyHeader(), body=body), 3)
    assert resp.code == ResponseCode.SUCCESS


async def send_all(conn: Connection, topic: str, props: list[dict[str, str]]) -> None:
    for i, p in enumerate(props):
        resp = await conn.invoke(send_request(topic, b"m%d" % i, p), 3)
        assert resp.code == ResponseCode.SUCCESS


async def test_check_client_config_refuses_sql92_when_property_filter_is_off(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (_app, conn):
        resp = await conn.invoke(check_request("a > 1"), 3)
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert resp.remark == "The broker does not support consumer to filter message by SQL92"
        tag = await conn.invoke(check_request("TagA", "TAG"), 3)
        assert tag.code == ResponseCode.SUCCESS


async def test_check_client_config_compiles_the_expression(tmp_path: Path) -> None:
    async with running_broker(tmp_path, enable_property_filter=True) as (_app, conn):
        good = await conn.invoke(check_request("a BETWEEN 1 AND 5"), 3)
        assert good.code == ResponseCode.SUCCESS
        bad = await conn.invoke(check_request("a = "), 3)
        assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        assert bad.remark is not None
        assert bad.remark.startswith(
            'org.apache.rocketmq.filter.parser.ParseException: Encountered "<EOF>" at line 1, column 4.'
        )
        unknown_type = await conn.invoke(check_request("a = 1", "GROOVY"), 3)
        assert unknown_type.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_pull_with_its_own_expression_gets_only_matching_messages(tmp_path: Path) -> None:
    props = [{"a": "1"}, {"a": "9"}, {}, {"a": "x"}, {"a": "3", TAGS: "TagA"}]
    async with running_broker(tmp_path, enable_property_filter=True) as (_app, conn):
        await send_all(conn, "TS", props)
        resp = await conn.invoke(sql_pull("TS", 0, "a BETWEEN 1 AND 5", flags=PullSysFlag.SUBSCRIPTION), 3)
        assert resp.code == ResponseCode.SUCCESS
        assert [r.body for r in records(resp)] == [b"m0", b"m4"]
        tags = await conn.invoke(sql_pull("TS", 0, "TAGS = 'TagA'", flags=PullSysFlag.SUBSCRIPTION), 3)
        assert [r.body for r in records(tags)] == [b"m4"]
        none = await conn.invoke(sql_pull("TS", 0, "a > 100", flags=PullSysFlag.SUBSCRIPTION), 3)
        assert none.code == ResponseCode.PULL_RETRY_IMMEDIATELY  # NO_MATCHED_MESSAGE, as Java
        assert none.ext_fields is not None
        assert none.ext_fields["nextBeginOffset"] == "5"


async def test_pull_with_sql92_is_refused_when_property_filter_is_off(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (_app, conn):
        await send_all(conn, "TO", [{"a": "1"}])
        resp = await conn.invoke(sql_pull("TO", 0, "a = 1", flags=PullSysFlag.SUBSCRIPTION), 3)
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert resp.remark == "The broker does not support consumer to filter message by SQL92"


async def test_registered_subscription_compiled_once_per_version(tmp_path: Path) -> None:
    async with running_broker(tmp_path, enable_property_filter=True) as (app, conn):
        await send_all(conn, "TR", [{"n": "1"}, {"n": "5"}, {"n": "7"}])
        await heartbeat(conn, "TR", "n > 3", version=1)
        handler = app.dispatcher._routes[RequestCode.PULL_MESSAGE][0]
        filters: ConsumerFilterManager = handler.__self__.filters  # type: ignore[attr-defined]
        for _ in range(3):
            resp = await conn.invoke(sql_pull("TR", 0, "", flags=0), 3)
            assert [r.body for r in records(resp)] == [b"m1", b"m2"]
        assert filters.compiles == 1
        await heartbeat(conn, "TR", "n > 6", version=2)
        resp = await conn.invoke(sql_pull("TR", 0, "", flags=0, version=2), 3)
        assert [r.body for r in records(resp)] == [b"m2"]
        assert filters.compiles == 2
        newer = await conn.invoke(sql_pull("TR", 0, "", flags=0, version=3), 3)
        assert newer.code == ResponseCode.SUBSCRIPTION_NOT_LATEST


async def test_registered_expression_that_does_not_compile(tmp_path: Path) -> None:
    async with running_broker(tmp_path, enable_property_filter=True) as (_app, conn):
        await send_all(conn, "TB", [{"n": "1"}])
        await heartbeat(conn, "TB", "n >", version=1)
        resp = await conn.invoke(sql_pull("TB", 0, "", flags=0), 3)
        assert resp.code == ResponseCode.FILTER_DATA_NOT_EXIST
        assert resp.remark == "The broker's consumer filter data is not exist!Your expression may be wrong!"


async def test_long_poll_wakes_only_for_a_matching_message(tmp_path: Path) -> None:
    async with running_broker(tmp_path, enable_property_filter=True) as (app, conn):
        await send_all(conn, "TL", [{"k": "old"}])
        answered: list[tuple[RemotingCommand, float]] = []
        flags = PullSysFlag.SUBSCRIPTION | PullSysFlag.SUSPEND

        async def held_pull() -> None:
            start = time.monotonic()
            resp = await conn.invoke(sql_pull("TL", 1, "k = 'wanted'", flags=flags, suspend_ms=15000), 20)
            answered.append((resp, time.monotonic() - start))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(held_pull)
            with trio.fail_after(3):
                while app.controller.hold.held_count == 0:  # noqa: ASYNC110 - waiting for server state
                    await trio.sleep(0.01)
            await conn.invoke(send_request("TL", b"other", {"k": "other"}), 3)
            await conn.invoke(send_request("TL", b"no k", {}), 3)
            await trio.sleep(0.3)
            assert not answered  # messages the expression rejects do not wake the pull
            await conn.invoke(send_request("TL", b"wanted", {"k": "wanted"}), 3)
        resp, waited = answered[0]
        assert resp.code == ResponseCode.SUCCESS
        assert [r.body for r in records(resp)] == [b"wanted"]
        assert waited < 5


class ListStore:
    """A store double: records in one queue, read at most ``page`` at a time."""

    def __init__(self, props: list[dict[str, str]], page: int) -> None:
        self.records = [
            encode_record(
                MessageRecord(topic="T", queue_id=0, body=b"%d" % i, properties=encode_properties(p))
            )
            for i, p in enumerate(props)
        ]
        self.page = page
        self.calls = 0

    def get_message(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        max_total_msg_size: int = 0,
        tags_codes: Collection[int] | None = None,
    ) -> GetMessageResult:
        self.calls += 1
        end = len(self.records)
        if offset >= end:
            return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, 0, end)
        stop = min(end, offset + min(max_msg_nums, self.page))
        result = GetMessageResult(GetMessageStatus.FOUND, stop, 0, end)
        result.buffers = self.records[offset:stop]
        result.queue_offsets = list(range(offset, stop))
        return result


def test_filtered_read_goes_on_past_pages_without_matches() -> None:
    """Java scans up to maxFilterMessageSize of consume-queue units for matches, not one page."""
    props = [{"n": "0"}] * 50 + [{"n": "1"}] * 3
    store = ListStore(props, page=8)
    sub = SubscriptionData(topic="T", sub_string="n = 1", expression_type=SQL92, sub_version=1)
    manager = ConsumerFilterManager()
    flt = ExpressionMessageFilter(sub, manager.get("G", "T", sub), manager)
    result = get_message(store, "T", 0, 0, 32, 1 << 20, flt)
    assert result.queue_offsets == [50, 51, 52]
    assert result.next_begin_offset == 53
    assert store.calls > 1


def test_retry_filter_uses_the_original_topics_expression() -> None:
    manager = ConsumerFilterManager()
    original = SubscriptionData(topic="T", sub_string="n > 3", expression_type=SQL92, sub_version=1)
    assert manager.get("G", "T", original) is not None
    retry = SubscriptionData(topic="%RETRY%G", sub_string="n > 100", expression_type=SQL92, sub_version=1)
    flt = ExpressionForRetryMessageFilter(retry, manager.get("G", "%RETRY%G", retry), manager)
    assert flt.is_matched_by_commit_log({"n": "5", RETRY_TOPIC: "T"})
    assert not flt.is_matched_by_commit_log({"n": "1", RETRY_TOPIC: "T"})
    plain = ExpressionMessageFilter(retry, manager.get("G", "%RETRY%G", retry), manager)
    assert not plain.is_matched_by_commit_log({"n": "5", RETRY_TOPIC: "T"})  # filterSupportRetry=false
    assert flt.is_matched_by_consume_queue(12345)
