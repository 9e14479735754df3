"""Recall of delayed messages over the remoting protocol, as raw frames, against our broker AND the
real Apache RocketMQ 5.3.3 broker, with identical assertions (both with ``recallMessageEnable``).

A timer send answers a recall handle; RECALL_MESSAGE (370) with it answers the message's unique
key, and the message never reaches its topic while one due later does; refusals (garbage handle,
unknown topic, topic mismatch, another broker's handle, a time already passed) answer the same code
and remark on both. The 5.x gRPC side is in ``test_grpc_compat.py``.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import pytest

from compat_tests.pop_raw import RawSession, pop, popped, send, wait_route
from compat_tests.reference import run_mqadmin
from compat_tests.targets import Target, start_target

pytestmark = pytest.mark.compat

TOPIC, OTHER, GROUP = "RawRecallT", "RawRecallOther", "rawRecallG"
RECALL_MESSAGE = 370
SUCCESS, TOPIC_NOT_EXIST, ILLEGAL_OPERATION = 0, 17, 604


@pytest.fixture(scope="module", params=("gateway", "reference"))
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    started = start_target(
        request.param, tmp_path_factory.mktemp(request.param), {"recallMessageEnable": "true"}
    )
    try:
        yield started
    finally:
        started.discard()


def handle_of(text: str) -> list[str]:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode().split(" ")


def make_handle(*items: str) -> str:
    return base64.urlsafe_b64encode(" ".join(items).encode()).decode()


def delayed(s: RawSession, body: bytes, uniq: str, due_ms: int) -> dict[str, Any]:
    resp = send(s, TOPIC, body, 0, {"UNIQ_KEY": uniq, "TIMER_DELIVER_MS": str(due_ms), "KEYS": body.decode()})
    assert resp["code"] == SUCCESS, resp["remark"]
    return dict(resp["ext_fields"])


def recall(s: RawSession, topic: str, handle: str) -> tuple[int, str | None]:
    resp = s.call(RECALL_MESSAGE, {"topic": topic, "recallHandle": handle, "producerGroup": "rawRecallP"})
    return resp["code"], resp["remark"] if resp["code"] else resp["ext_fields"]["msgId"]


def test_recall_by_raw_frames(target: Target, tmp_path_factory: pytest.TempPathFactory) -> None:
    home = tmp_path_factory.mktemp(f"recall-{target.name}")
    for topic in (TOPIC, OTHER):
        args = ("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "1", "-w", "1")
        assert "success" in run_mqadmin(target.namesrv_addr, *args, home=home)
    with RawSession(wait_route(target.namesrv_addr, TOPIC)) as s:
        now = int(time.time() * 1000)
        uniq = f"RECALL{now:020d}"
        fields = delayed(s, b"recalled", uniq, now + 5000)
        delayed(s, b"kept", f"KEPT{now:022d}", now + 7000)
        version, topic, broker, stamp, key = handle_of(fields["recallHandle"])
        assert (version, topic, key) == ("v1", TOPIC, uniq)
        assert int(stamp) % 1000 == 1  # the timer slot + 1
        refusals = {
            "garbage": recall(s, TOPIC, "not-a-handle!"),
            "unknown topic": recall(s, "NoSuchRawRecallT", fields["recallHandle"]),
            "topic mismatch": recall(s, OTHER, fields["recallHandle"]),
            "other broker": recall(s, TOPIC, make_handle("v1", TOPIC, "broker-z", stamp, uniq)),
            "past": recall(s, TOPIC, make_handle("v1", TOPIC, broker, str(now - 1000), uniq)),
        }
        assert refusals == {
            "garbage": (ILLEGAL_OPERATION, "recall handle is invalid"),
            "unknown topic": (TOPIC_NOT_EXIST, "recall failed, the topic[NoSuchRawRecallT] not exist"),
            "topic mismatch": (ILLEGAL_OPERATION, "recall failed, topic not match"),
            "other broker": (ILLEGAL_OPERATION, "recall failed, broker service not available"),
            "past": (ILLEGAL_OPERATION, "recall failed, timestamp invalid"),
        }
        assert recall(s, TOPIC, fields["recallHandle"]) == (SUCCESS, uniq)
        keys: list[str] = []
        deadline = time.monotonic() + 60
        while "kept" not in keys:  # due 2 s after the recalled one: once here, that one's time passed
            assert time.monotonic() < deadline, "the kept message was never delivered"
            resp = pop(s, TOPIC, GROUP, -1, 60_000)
            keys += [m["properties_map"]["KEYS"] for m in popped(resp)] if resp["code"] == SUCCESS else []
            time.sleep(0.5)
        assert keys == ["kept"]
