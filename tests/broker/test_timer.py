"""5.x timer messages: routing at send time (``HookUtils.transformTimerMessage``) and delivery no
earlier than due, across a restart, against an in-process broker over the wire."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio

from broker.timer.service import (
    TIMER_DELAY_MS,
    TIMER_DELAY_SEC,
    TIMER_DELIVER_MS,
    TIMER_OUT_MS,
    TIMER_TOPIC,
    TimerMessageError,
    route_timer_message,
)
from codec.codes import ResponseCode
from codec.message import MessageRecord
from codec.properties import DELAY, REAL_QID, REAL_TOPIC, decode_properties
from tests.broker.helpers import pulled, running, send_request

NOW = 1_700_000_000_500  # ms, not a multiple of the precision
LIMITS = {"max_delay_sec": 3600, "precision_ms": 1000, "wheel_enable": True}


def routed(props: dict[str, str]) -> tuple[bool, MessageRecord, dict[str, str]]:
    record = MessageRecord(topic="T", queue_id=2, body=b"x")
    done = route_timer_message(record, props, NOW, **LIMITS)  # type: ignore[arg-type]
    return done, record, props


def test_due_time_is_rounded_down_to_the_precision_and_routed() -> None:
    done, record, props = routed({TIMER_DELAY_SEC: "3"})
    assert done
    assert (record.topic, record.queue_id) == (TIMER_TOPIC, 0)
    assert props[TIMER_OUT_MS] == str(1_700_000_003_000)
    assert (props[REAL_TOPIC], props[REAL_QID]) == ("T", "2")
    # A due time on a precision boundary moves one step earlier, as in Java.
    _, _, props = routed({TIMER_DELIVER_MS: str(1_700_000_010_000)})
    assert props[TIMER_OUT_MS] == str(1_700_000_009_000)
    _, _, props = routed({TIMER_DELAY_MS: "1700"})
    assert props[TIMER_OUT_MS] == str(1_700_000_002_000)


def test_past_due_delay_level_and_plain_messages_are_not_routed() -> None:
    assert routed({TIMER_DELIVER_MS: str(NOW - 1)})[0] is False
    done, record, props = routed({DELAY: "2", TIMER_DELAY_SEC: "3"})
    assert not done
    assert record.topic == "T"
    assert TIMER_DELAY_SEC not in props
    assert routed({"k": "v"})[0] is False


def test_too_far_or_malformed_due_times_are_refused_as_java_does() -> None:
    with pytest.raises(TimerMessageError) as err:
        routed({TIMER_DELAY_SEC: "3601"})
    assert err.value.response_code == ResponseCode.MESSAGE_ILLEGAL
    assert "should not be bigger than the max delay 3600000ms" in str(err.value)
    with pytest.raises(TimerMessageError):
        routed({TIMER_DELIVER_MS: "soon"})
    record = MessageRecord(topic="T", queue_id=0, body=b"x")
    with pytest.raises(TimerMessageError) as err:
        route_timer_message(
            record, {TIMER_DELAY_SEC: "1"}, NOW, max_delay_sec=60, precision_ms=1000, wheel_enable=False
        )
    assert err.value.response_code == ResponseCode.SYSTEM_ERROR
    assert str(err.value) == "accurate timer message is not enabled, timerWheelEnable is false"


async def test_timer_message_arrives_no_earlier_than_due(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        sent = time.time() * 1000
        resp = await conn.invoke(send_request("TmT", b"later", {TIMER_DELAY_MS: "1500"}, queue_id=1), 5)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        assert (resp.ext_fields or {})["queueId"] == "1"
        with trio.fail_after(6):
            while not await pulled(conn, "TmT"):  # noqa: ASYNC110 - polling the broker over the wire
                await trio.sleep(0.01)
        arrived = time.time() * 1000
        assert arrived - sent >= 1500
        [message] = await pulled(conn, "TmT")
        props = decode_properties(message.properties)
        assert (message.body, props[REAL_TOPIC]) == (b"later", "TmT")
        assert {TIMER_OUT_MS, "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS"} <= set(props)


async def test_too_far_timer_is_refused_on_the_wire(tmp_path: Path) -> None:
    async with running(tmp_path, timer_max_delay_sec=10) as (_app, conn):
        resp = await conn.invoke(send_request("TmT", b"x", {TIMER_DELAY_SEC: "11"}), 5)
        assert resp.code == ResponseCode.MESSAGE_ILLEGAL
        assert "max delay 10000ms" in (resp.remark or "")


async def test_timer_messages_survive_a_restart_and_arrive_once(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        for body, delay in ((b"early", "300"), (b"late", "2500")):
            resp = await conn.invoke(send_request("TmR", body, {TIMER_DELAY_MS: delay}), 5)
            assert resp.code == ResponseCode.SUCCESS
        with trio.fail_after(5):
            while not await pulled(conn, "TmR", 0):  # noqa: ASYNC110 - polling the broker over the wire
                await trio.sleep(0.05)
    async with running(tmp_path) as (_app, conn):
        with trio.fail_after(8):
            while len(await pulled(conn, "TmR", 0)) < 2:  # noqa: ASYNC110 - polling the broker over the wire
                await trio.sleep(0.05)
        await trio.sleep(0.5)
        assert [m.body for m in await pulled(conn, "TmR", 0)] == [b"early", b"late"]
