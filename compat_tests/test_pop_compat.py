"""POP consumption with the unmodified 5.3.3 remoting ``DefaultMQPushConsumer`` against our broker
AND the real Apache RocketMQ 5.3.3 broker, with identical assertions.

The group is switched to POP with ``mqadmin setConsumeMode -m POP`` and the consumer runs with
``setClientRebalance(false)``, as the 5.3.3 example ``simple/PopConsumer.java`` does: it asks the
broker for its assignment (QUERY_ASSIGNMENT, queue -1), pops, acks, and answers RECONSUME_LATER
with CHANGE_MESSAGE_INVISIBLETIME (10 s, the first of ``popDelayLevel``), after which the broker's
revive service delivers the message again through ``%RETRY%group_topic`` with reconsumeTimes 1.

Driven by ``rmqcompat.PopScenario`` (``compat_tests/java/src/rmqcompat/PopScenario.java``); only
the 5.3.3 client line pops.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.reference import run_mqadmin
from compat_tests.scenario import ArgValue, Event, of, run_program, run_scenario
from compat_tests.targets import Target, start_target

pytestmark = pytest.mark.compat

TARGETS = ("gateway", "reference")
LINE = "5.3.3"
STEP_S = 90.0
MAIN_CLASS = "rmqcompat.PopScenario"
FIRST_POP_DELAY_MS = 10_000  # DefaultMQPushConsumer popDelayLevel[0]


@pytest.fixture(scope="module", params=TARGETS)
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    name: str = request.param
    started = start_target(name, tmp_path_factory.mktemp(name))
    try:
        yield started
    finally:
        started.stop()


def produce(target: Target, home: Path, topic: str, count: int) -> list[Event]:
    events = run_scenario(LINE, "produce", target.namesrv_addr, home, STEP_S, topic=topic, count=count)
    sent = of(events, "sent")
    assert len(sent) == count
    return sent


def set_pop_mode(target: Target, home: Path, topic: str, group: str) -> None:
    out = run_mqadmin(
        target.namesrv_addr,
        "setConsumeMode",
        "-c",
        "DefaultCluster",
        "-t",
        topic,
        "-g",
        group,
        "-m",
        "POP",
        home=home,
    )
    assert "success" in out, out
    assert f"topic[{topic}] group[{group}] consume mode[POP] popShareQueueNum[0]" in out, out


def pop_consume(target: Target, home: Path, **args: ArgValue) -> list[Event]:
    return run_program(MAIN_CLASS, LINE, "consume", target.namesrv_addr, home, STEP_S, args)


def test_pop_push_consumer_gets_everything_and_retries_through_the_retry_topic(
    target: Target, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Six messages, each answered RECONSUME_LATER once: every one comes back once, no earlier
    than the 10 s the client asked for, with reconsumeTimes 1 under the normal topic, and is then
    acknowledged; nothing is delivered a third time within the settle time."""
    home = tmp_path_factory.mktemp(f"pop-{target.name}")
    topic, group = "PopPushT", "popPushG"
    sent = produce(target, home, topic, 6)
    set_pop_mode(target, home, topic, group)
    events = pop_consume(
        target, home, topic=topic, group=group, expect=6, settle_ms=4000, **{"reconsume-later": 1}
    )
    received = of(events, "received")
    by_id: dict[str, list[Event]] = {}
    for event in received:
        by_id.setdefault(event["msgId"], []).append(event)
    assert set(by_id) == {s["msgId"] for s in sent}
    for deliveries in by_id.values():
        assert [d["status"] for d in deliveries] == ["later", "success"], deliveries
        assert [d["reconsumeTimes"] for d in deliveries] == [0, 1]
        assert {d["topic"] for d in deliveries} == {topic}
        assert deliveries[1]["at"] - deliveries[0]["at"] >= FIRST_POP_DELAY_MS - 500
        assert deliveries[0]["body"] == deliveries[1]["body"]
    [done] = of(events, "done")
    assert (done["acked"], done["received"]) == (6, 12)
