"""The core broker scenarios against the gateway's container image, with both real client lines:
a sync send consumed by a push consumer, and two push consumers splitting a topic's queues (the
survivor taking over). The same assertions as ``test_broker_compat.py``'s scenarios 1 and 3,
which pass against the real Apache RocketMQ broker; here the target is
:class:`compat_tests.container_target.ContainerTarget`, driven through testcontainers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.container_target import ContainerTarget
from compat_tests.scenario import (
    CLIENT_LINES,
    ArgValue,
    Event,
    ScenarioProcess,
    done,
    of,
    run_scenario,
    start_scenario,
)

pytestmark = [pytest.mark.compat, pytest.mark.slow]

STEP_S = 90.0
REBALANCE_S = 20.0  # both consumers joined (NOTIFY_CONSUMER_IDS_CHANGED, or the client's 20 s timer)
DELIVERY_S = 60.0


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContainerTarget]:
    started = ContainerTarget(tmp_path_factory.mktemp("container"))
    try:
        yield started
    finally:
        started.discard()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("clients-container")


def short(line: str) -> str:
    return line.replace(".", "")


def produce(target: ContainerTarget, home: Path, line: str, **args: str | int) -> list[Event]:
    events = run_scenario(line, "produce", target.namesrv_addr, home, STEP_S, **args)
    assert not of(events, "send_error"), of(events, "send_error")[:3]
    return of(events, "sent")


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_sync_send_and_push_consume(target: ContainerTarget, home: Path, line: str) -> None:
    topic = f"CtSync{short(line)}"
    sent = produce(target, home, line, topic=topic, count=500, mode="sync", keys_prefix="k-", tags="TagA")
    assert len(sent) == 500
    assert {s["status"] for s in sent} == {"SEND_OK"}
    group = f"ctSync{short(line)}"
    namesrv = target.namesrv_addr
    events = run_scenario(line, "consume", namesrv, home, STEP_S, group=group, topic=topic, expect=500)
    received = of(events, "received")
    assert {(r["keys"], r["body"]) for r in received} == {(s["keys"], s["body"]) for s in sent}
    assert {r["topic"] for r in received} == {topic}
    assert done(events)["distinct"] == 500


def received_ids(*consumers: ScenarioProcess) -> set[str]:
    return {r["msgId"] for c in consumers for r in of(c.events(), "received")}


def wait_received(wanted: set[str], *consumers: ScenarioProcess) -> None:
    deadline = time.monotonic() + DELIVERY_S
    while time.monotonic() < deadline and not wanted <= received_ids(*consumers):
        time.sleep(0.5)


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_two_consumers_split_queues_and_one_takes_over(
    target: ContainerTarget, home: Path, line: str
) -> None:
    topic, group = f"CtSplit{short(line)}", f"ctSplit{short(line)}"
    produce(target, home, line, topic=topic, count=1, keys_prefix="warmup-")  # creates the topic
    options: dict[str, ArgValue] = {"group": group, "topic": topic, "duration": 100}
    a, b = (
        start_scenario(line, "consume", target.namesrv_addr, home, 120, instance=name, **options)
        for name in ("a", "b")
    )
    try:
        time.sleep(REBALANCE_S)
        first = {s["msgId"] for s in produce(target, home, line, topic=topic, count=200, keys_prefix="p1-")}
        wait_received(first, a, b)
        a_ids, b_ids = received_ids(a), received_ids(b)
        assert first <= a_ids | b_ids
        a_queues = {r["queueId"] for r in of(a.events(), "received") if r["msgId"] in a_ids - b_ids}
        b_queues = {r["queueId"] for r in of(b.events(), "received") if r["msgId"] in b_ids - a_ids}
        assert a_queues, "consumer a got no queue of its own"
        assert b_queues, "consumer b got no queue of its own"
        b.stop()
        second = {s["msgId"] for s in produce(target, home, line, topic=topic, count=100, keys_prefix="p2-")}
        wait_received(second, a)
        assert second <= received_ids(a), "the survivor did not take over"
    finally:
        a.stop()
        b.stop()


def test_restart_keeps_the_store(target: ContainerTarget, home: Path) -> None:
    """restart_broker (the target protocol's restart) keeps the volume: messages sent before a
    graceful restart are consumed after it."""
    line = CLIENT_LINES[-1]
    sent = {s["msgId"] for s in produce(target, home, line, topic="CtRestart", count=50)}
    target.restart_broker()
    events = run_scenario(
        line, "consume", target.namesrv_addr, home, STEP_S, group="ctRestart", topic="CtRestart", expect=50
    )
    assert sent <= {r["msgId"] for r in of(events, "received")}
