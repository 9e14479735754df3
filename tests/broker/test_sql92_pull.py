"""SQL92 subscriptions end to end in an in-process broker, through the wire protocol: the client
config check, pulls that carry their expression, pulls that rely on the heartbeat's subscription,
long-poll wake-ups, and retry topics (the Java clients are in compat_tests/test_filter_compat.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import trio

from broker.filter import ConsumerFilterManager, ExpressionForRetryMessageFilter, ExpressionMessageFilter
from broker.long_polling import PullHoldService
from codec.bodies.heartbeat import CheckClientRequestBody, ConsumerData, HeartbeatData, SubscriptionData
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.hashing import tags_code
from codec.headers.base import EmptyHeader
from codec.headers.pull import PullMessageRequestHeader, PullSysFlag
from codec.message import MessageRecord, encode_record
from codec.properties import RETRY_TOPIC, TAGS, encode_properties
from gateway.transport.connection import Connection
from store.message_filter import TagsCodeFilter
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
        filters = app.controller.filters
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


async def test_a_match_past_the_scan_window_is_pulled_from_next_begin_offset(tmp_path: Path) -> None:
    """One pull scans Java's maxFilterMessageSize window (800 units for 32 messages): nothing
    matching in it answers PULL_RETRY_IMMEDIATELY with the offset after it, and the client's next
    pull from there finds the match. Each pull is one store read in the statistics."""
    async with running_broker(tmp_path, enable_property_filter=True) as (app, conn):
        await send_all(conn, "TW", [{"n": "0"}] * 820 + [{"n": "1"}])
        stats = app.broker.stats
        flags = PullSysFlag.SUBSCRIPTION
        first = await conn.invoke(sql_pull("TW", 0, "n = 1", flags=flags), 3)
        assert first.code == ResponseCode.PULL_RETRY_IMMEDIATELY
        assert first.ext_fields is not None
        assert first.ext_fields["nextBeginOffset"] == "800"
        assert (stats.get_found.value, stats.get_miss.value) == (0, 1)
        second = await conn.invoke(sql_pull("TW", 800, "n = 1", flags=flags), 3)
        assert second.code == ResponseCode.SUCCESS
        assert [r.body for r in records(second)] == [b"m820"]
        assert second.ext_fields is not None
        assert second.ext_fields["nextBeginOffset"] == "821"
        assert (stats.get_found.value, stats.get_miss.value, stats.transferred.value) == (1, 1, 1)


def sql_filter(expression: str, topic: str = "T") -> ExpressionMessageFilter:
    manager = ConsumerFilterManager()
    sub = SubscriptionData(topic=topic, sub_string=expression, expression_type=SQL92, sub_version=1)
    return ExpressionMessageFilter(sub, manager.get("G", topic, sub), manager)


def stored(props: dict[str, str]) -> bytes:
    return encode_record(MessageRecord(topic="T", queue_id=0, body=b"x", properties=encode_properties(props)))


def test_a_held_pull_asks_its_filter_about_each_arriving_message() -> None:
    hold = PullHoldService()
    sql = hold.hold("T", 0, 1, sql_filter("k = 'wanted'"), lambda: None)
    tag = hold.hold("T", 0, 1, TagsCodeFilter([tags_code("TagA")]), lambda: None)
    every = hold.hold("T", 0, 1, None, lambda: None)
    assert sql.matches(2, tags_code("TagB"), {"k": "wanted"})
    assert not sql.matches(2, tags_code("TagB"), {"k": "other"})
    assert not sql.matches(1, tags_code("TagB"), {"k": "wanted"})  # not past the pull's offset
    assert tag.matches(2, tags_code("TagA"), {})
    assert not tag.matches(2, tags_code("TagB"), {})
    assert every.matches(2, tags_code("TagB"), {})
    assert hold.held_count == 3


def test_retry_filter_uses_the_original_topics_expression() -> None:
    manager = ConsumerFilterManager()
    original = SubscriptionData(topic="T", sub_string="n > 3", expression_type=SQL92, sub_version=1)
    assert manager.get("G", "T", original) is not None
    retry = SubscriptionData(topic="%RETRY%G", sub_string="n > 100", expression_type=SQL92, sub_version=1)
    flt = ExpressionForRetryMessageFilter(retry, manager.get("G", "%RETRY%G", retry), manager)
    for props, matched in (({"n": "5", RETRY_TOPIC: "T"}, True), ({"n": "1", RETRY_TOPIC: "T"}, False)):
        assert flt.is_matched_by_properties(props) is matched  # an arriving message (long polling)
        assert flt.is_matched_by_commit_log(stored(props)) is matched  # a stored record (the store's read)
    plain = ExpressionMessageFilter(retry, manager.get("G", "%RETRY%G", retry), manager)
    assert not plain.is_matched_by_commit_log(
        stored({"n": "5", RETRY_TOPIC: "T"})
    )  # filterSupportRetry=false
    assert flt.is_matched_by_consume_queue(12345)
