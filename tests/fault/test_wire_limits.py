"""Regression tests for numbers from the wire (queue counts beyond Java's int, the largest topic's
stats, send header numbers out of Java's range): each is refused with the Java broker's code
before it reaches state, with no traceback in the log, and the broker keeps serving (its
NameServer route intact, a restart clean)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import trio

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from gateway.transport.client import connect
from tests.fault.helpers import LogCounter, create_topic_command, pull_command, running_gateway, send_command

INT64_BELOW_MIN = "-9223372036854775809"
INT32_ABOVE_MAX = "2147483648"


async def _wait_for_route(namesrv_addr: str, topic: str, seconds: float = 10.0) -> None:
    """Poll the NameServer until it has a route for ``topic``; fail after ``seconds``."""
    request = RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, ext_fields={"topic": topic})
    with trio.fail_after(seconds):
        async with connect(namesrv_addr) as conn:
            while (await conn.invoke(request, 5)).code != ResponseCode.SUCCESS:  # noqa: ASYNC110
                await trio.sleep(0.05)


@pytest.mark.parametrize(
    ("read", "write", "perm"),
    [
        (INT64_BELOW_MIN, "8", "6"),  # beyond int64: was accepted and persisted
        (INT32_ABOVE_MAX, "8", "6"),  # beyond Java's Integer.parseInt
        ("8", "9223372036854775808", "6"),
    ],
)
async def test_queue_count_beyond_java_int_is_system_error_and_nothing_changes(
    tmp_path: Path, read: str, write: str, perm: str
) -> None:
    async with running_gateway(tmp_path) as (_gw, ep):
        assert ep.broker_addr is not None
        assert ep.namesrv_addr is not None
        with LogCounter() as errors:
            async with connect(ep.broker_addr) as conn:
                resp = await conn.invoke(create_topic_command("Bad1", read, write, perm), 5)
                assert resp.code == ResponseCode.SYSTEM_ERROR  # Java: NumberFormatException → SYSTEM_ERROR
                assert "32-bit int" in (resp.remark or "")
                good = await conn.invoke(create_topic_command("Good1"), 5)
                assert good.code == ResponseCode.SUCCESS
        assert errors.records == []
        topics = json.loads((tmp_path / "store" / "config" / "topics.json").read_text())
        assert "Bad1" not in topics["topicConfigTable"]
        await _wait_for_route(ep.namesrv_addr, "Good1")


@pytest.mark.parametrize(
    ("read", "write", "perm"),
    [("100000000", "8", "6"), ("-1", "8", "6"), ("8", "1025", "6"), ("8", "8", "8"), ("8", "8", "-1")],
)
async def test_queue_count_or_perm_out_of_bounds_is_invalid_parameter(
    tmp_path: Path, read: str, write: str, perm: str
) -> None:
    async with running_gateway(tmp_path) as (gw, ep):
        assert ep.broker_addr is not None
        assert gw.broker is not None
        async with connect(ep.broker_addr) as conn:
            resp = await conn.invoke(create_topic_command("Bad2", read, write, perm), 5)
            assert resp.code == ResponseCode.INVALID_PARAMETER, resp.remark
            assert "Bad2" not in gw.broker.controller.topics.table
            stats = await conn.invoke(
                RemotingCommand(code=RequestCode.GET_TOPIC_STATS_INFO, ext_fields={"topic": "Bad2"}), 5
            )
            assert stats.code == ResponseCode.TOPIC_NOT_EXIST


async def test_largest_topic_stats_answer_quickly_and_other_clients_stay_served(tmp_path: Path) -> None:
    """A topic at the queue bound (stats work grows with its queues); its stats are answered in
    well under a second."""
    async with running_gateway(tmp_path) as (_gw, ep):
        assert ep.broker_addr is not None
        async with connect(ep.broker_addr) as conn:
            created = await conn.invoke(create_topic_command("Wide", "1024", "1024"), 5)
            assert created.code == ResponseCode.SUCCESS
            request = RemotingCommand(code=RequestCode.GET_TOPIC_STATS_INFO, ext_fields={"topic": "Wide"})
            started = trio.current_time()
            stats = await conn.invoke(request, 5)
            assert stats.code == ResponseCode.SUCCESS
            assert trio.current_time() - started < 2.0
            assert (stats.body or b"").count(b'"queueId"') == 1024
            consume = RemotingCommand(
                code=RequestCode.GET_CONSUME_STATS,
                ext_fields={"consumerGroup": "g", "topicList": ",".join(["Wide"] * 100_000)},
            )
            answer = await conn.invoke(consume, 5)
            assert answer.code == ResponseCode.SUCCESS
            assert (answer.body or b"").count(b'"queueId"') == 1024  # each topic once


async def test_poisoned_topics_json_is_skipped_with_an_error_and_the_broker_starts(tmp_path: Path) -> None:
    """A topics.json written before queue counts were bounded, holding an out-of-range entry, no
    longer stops start-up."""
    config = tmp_path / "store" / "config"
    config.mkdir(parents=True)
    entry = {"topicName": "Poison", "readQueueNums": -9223372036854775809, "writeQueueNums": 8, "perm": 6}
    ok = {"topicName": "Fine", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}
    doc = {"topicConfigTable": {"Poison": entry, "Fine": ok}, "dataVersion": {"counter": 1, "timestamp": 1}}
    (config / "topics.json").write_text(json.dumps(doc))
    with LogCounter() as errors:
        async with running_gateway(tmp_path) as (gw, ep):
            assert gw.broker is not None
            assert ep.namesrv_addr is not None
            assert "Poison" not in gw.broker.controller.topics.table
            assert "Fine" in gw.broker.controller.topics.table
            await _wait_for_route(ep.namesrv_addr, "Fine")
    assert any("Poison" in r.getMessage() for r in errors.records)


@pytest.mark.parametrize(
    "fields",
    [
        {"f": "99999999999"},
        {"g": "-9223372036854775809"},
        {"h": INT32_ABOVE_MAX},
        {"j": "-2147483649"},
        {"e": "1" * 400},
        {"d": "١٢"},  # non-ASCII digits: Java's parseInt refuses them
    ],
)
async def test_send_header_numbers_beyond_java_range_get_one_log_line_not_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, fields: dict[str, str]
) -> None:
    """A send header number out of Java's range: SYSTEM_ERROR (Java's answer to a
    NumberFormatException), one INFO line for 50 such requests, no ERROR and no traceback; the
    connection keeps working."""
    caplog.set_level(logging.DEBUG, logger="gateway.transport.dispatch")
    async with running_gateway(tmp_path) as (_gw, ep):
        assert ep.broker_addr is not None
        with LogCounter(logging.WARNING) as warnings:
            async with connect(ep.broker_addr) as conn:
                for _ in range(50):
                    resp = await conn.invoke(send_command("Range", b"x", **fields), 5)
                    assert resp.code == ResponseCode.SYSTEM_ERROR
                ok = await conn.invoke(send_command("Range", b"ok"), 5)
                assert ok.code == ResponseCode.SUCCESS, ok.remark
                pulled = await conn.invoke(pull_command("Range", int((ok.ext_fields or {})["queueId"]), 0), 5)
                assert pulled.code == ResponseCode.SUCCESS
        assert warnings.records == []
        refusals = [r for r in caplog.records if r.levelno == logging.INFO and "refused" in r.getMessage()]
        assert len(refusals) == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"f": "2147483647"},
        {"f": "-1"},
        {"g": "-9223372036854775808"},
        {"h": "-2147483648"},
        {"j": "2147483647"},
        {"d": "-2147483648"},
        {"e": "-1"},
    ],
)
async def test_send_header_extremes_within_java_range_never_raise(
    tmp_path: Path, fields: dict[str, str]
) -> None:
    """In-range extremes are answered (stored or refused with a code), never SYSTEM_ERROR with a
    traceback, and what was stored can be pulled back."""
    async with running_gateway(tmp_path) as (_gw, ep):
        assert ep.broker_addr is not None
        with LogCounter() as errors:
            async with connect(ep.broker_addr) as conn:
                resp = await conn.invoke(send_command("Extreme", b"x", **fields), 5)
                assert resp.code != ResponseCode.SYSTEM_ERROR or "Error" not in (resp.remark or "")
                if resp.code == ResponseCode.SUCCESS:
                    queue = int((resp.ext_fields or {})["queueId"])
                    pulled = await conn.invoke(pull_command("Extreme", queue, 0), 5)
                    # a sysFlag with the transaction bits stores into the half topic: no queue here
                    assert pulled.code in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND)
                after = await conn.invoke(send_command("Extreme2", b"y"), 5)
                assert after.code == ResponseCode.SUCCESS
                pulled = await conn.invoke(
                    pull_command("Extreme2", int((after.ext_fields or {})["queueId"]), 0), 5
                )
                assert pulled.code == ResponseCode.SUCCESS, pulled.remark
        assert errors.records == []
