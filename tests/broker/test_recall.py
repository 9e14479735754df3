"""Recalling a delayed message (RECALL_MESSAGE, 5.3.x): the handle a timer send answers, the
broker's refusals in Java's order, and a recalled message never delivered, across a restart too,
against an in-process broker over the wire."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio

from broker.timer.service import TIMER_DEL_UNIQKEY, TIMER_DELAY_MS, TIMER_DELIVER_MS, TIMER_OUT_MS
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import CodecError
from codec.headers.recall import RecallMessageRequestHeader
from codec.message import decode_record
from codec.properties import UNIQ_KEY, decode_properties
from codec.recall_handle import RecallHandle
from gateway.transport.client import Connection
from tests.broker.helpers import pulled, running, send_request

TOPIC = "RecallT"


def test_handle_round_trip_and_what_does_not_decode() -> None:
    handle = RecallHandle("T", "broker-a", "1700000000001", "ABC")
    text = handle.encode()
    assert (
        text == "djEgVCBicm9rZXItYSAxNzAwMDAwMDAwMDAxIEFCQw=="
    )  # base64url of "v1 T broker-a 1700000000001 ABC"
    assert RecallHandle.decode(text) == handle
    assert RecallHandle.decode(text.rstrip("=")) == handle  # Java's decoder takes it unpadded too
    for bad in ("", "x", "!!!!", "djEgVCBi", "djI=", "djEgVCBiIDEg"):  # empty, junk, short, v2, "v1 T b 1 "
        with pytest.raises(CodecError, match="recall handle is invalid"):
            RecallHandle.decode(bad)


async def send_delayed(conn: Connection, body: bytes, delay_ms: int) -> tuple[str, str]:
    """Send a timer message; its unique key and the recall handle the broker answered."""
    resp = await conn.invoke(send_request(TOPIC, body, {TIMER_DELAY_MS: str(delay_ms)}, queue_id=0), 5)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    fields = resp.ext_fields or {}
    return fields["transactionId"], fields["recallHandle"]


async def recall(conn: Connection, handle: str, topic: str = TOPIC) -> RemotingCommand:
    header = RecallMessageRequestHeader(topic=topic, recall_handle=handle, producer_group="pg")
    return await conn.invoke(RemotingCommand.request(RequestCode.RECALL_MESSAGE, header), 5)


async def bodies_once(conn: Connection, body: bytes, timeout_s: float) -> list[bytes]:
    """Poll queue 0 until ``body`` arrived; everything there by then."""
    with trio.fail_after(timeout_s):
        while body not in (found := [m.body for m in await pulled(conn, TOPIC, 0)]):  # noqa: ASYNC110
            await trio.sleep(0.05)
    return found


async def test_recall_is_refused_unless_enabled_as_on_the_real_broker(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        uniq, handle = await send_delayed(conn, b"x", 5000)
        decoded = RecallHandle.decode(handle)
        assert (decoded.topic, decoded.broker_name, decoded.message_id) == (TOPIC, "broker-a", uniq)
        resp = await recall(conn, handle)
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden")


async def test_handle_time_is_the_timer_slot_plus_one(tmp_path: Path) -> None:
    async with running(tmp_path) as (_app, conn):
        _uniq, handle = await send_delayed(conn, b"x", 3000)
        resp = await conn.invoke(send_request(TOPIC, b"now", queue_id=0), 5)
    assert "recallHandle" not in (resp.ext_fields or {})  # not a timer message
    timestamp = int(RecallHandle.decode(handle).timestamp)
    assert timestamp % 1000 == 1  # the slot (a multiple of timerPrecisionMs) + 1
    assert timestamp - 1 <= time.time() * 1000 + 3000


async def test_a_recalled_message_is_never_delivered_and_the_next_one_is(tmp_path: Path) -> None:
    async with running(tmp_path, recall_message_enable=True) as (_app, conn):
        uniq, handle = await send_delayed(conn, b"recalled", 1500)
        await send_delayed(conn, b"kept", 3500)  # a later slot: once it is here, the first's has passed
        resp = await recall(conn, handle)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        assert (resp.ext_fields or {})["msgId"] == uniq
        assert (await recall(conn, handle)).code == ResponseCode.SUCCESS  # again: still success, as Java
        assert await bodies_once(conn, b"kept", 10) == [b"kept"]


async def test_a_recall_holds_across_a_restart(tmp_path: Path) -> None:
    async with running(tmp_path, recall_message_enable=True) as (_app, conn):
        _uniq, handle = await send_delayed(conn, b"recalled", 2000)
        assert (await recall(conn, handle)).code == ResponseCode.SUCCESS
        await send_delayed(conn, b"kept", 4000)
    async with running(tmp_path, recall_message_enable=True) as (_app, conn):
        assert await bodies_once(conn, b"kept", 12) == [b"kept"]


async def test_refusals_answer_javas_codes_and_remarks(tmp_path: Path) -> None:
    async with running(tmp_path, recall_message_enable=True) as (_app, conn):
        _uniq, handle = await send_delayed(conn, b"x", 5000)
        decoded = RecallHandle.decode(handle)
        other_broker = RecallHandle(TOPIC, "broker-z", decoded.timestamp, decoded.message_id).encode()
        past = RecallHandle(TOPIC, "broker-a", str(int(time.time() * 1000) - 1), decoded.message_id).encode()
        not_a_number = RecallHandle(TOPIC, "broker-a", "soon", decoded.message_id).encode()
        await conn.invoke(send_request("RecallOther", b"x", queue_id=0), 5)
        answers = {
            "unknown topic": await recall(conn, handle, "NoSuchRecallTopic"),
            "garbage": await recall(conn, "garbage!"),
            "topic mismatch": await recall(conn, handle, "RecallOther"),
            "other broker": await recall(conn, other_broker),
            "past": await recall(conn, past),
            "not a number": await recall(conn, not_a_number),
        }
    assert {k: (r.code, r.remark) for k, r in answers.items()} == {
        "unknown topic": (
            ResponseCode.TOPIC_NOT_EXIST,
            "recall failed, the topic[NoSuchRecallTopic] not exist",
        ),
        "garbage": (ResponseCode.ILLEGAL_OPERATION, "recall handle is invalid"),
        "topic mismatch": (ResponseCode.ILLEGAL_OPERATION, "recall failed, topic not match"),
        "other broker": (ResponseCode.ILLEGAL_OPERATION, "recall failed, broker service not available"),
        "past": (ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid"),
        "not a number": (ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid"),
    }
    assert all((r.ext_fields or {}).get("MSG_REGION") == "DefaultRegion" for r in answers.values())


async def test_the_delete_marker_carries_javas_properties(tmp_path: Path) -> None:
    async with running(tmp_path, recall_message_enable=True) as (app, conn):
        uniq, handle = await send_delayed(conn, b"x", 5000)
        assert (await recall(conn, handle)).code == ResponseCode.SUCCESS
        store = app.controller.store
        units = list(store.iter_queue_units("rmq_sys_wheel_timer", 0, 0))
        data = store.look_message_by_offset(units[-1].phy_offset)
    assert data is not None
    marker = decode_record(data)
    props = decode_properties(marker.properties)
    assert marker.body == b"0"
    assert props[TIMER_DEL_UNIQKEY] == f"{TOPIC}+{uniq}"
    assert props[UNIQ_KEY] == uniq
    assert props["TAGS"] == "_RECALL_TAG_"
    assert props[TIMER_DELIVER_MS] == RecallHandle.decode(handle).timestamp
    assert int(props[TIMER_OUT_MS]) == int(props[TIMER_DELIVER_MS]) - 1  # the message's own slot
