"""5.x timer messages and request/reply: unmodified Java clients against our broker AND
the real Apache RocketMQ 5.3.3 broker, with identical assertions.

* Timer: ``Message.setDeliverTimeMs`` exists in the 5.3.3 client only (4.9.8 has no timer API), so
  that line alone runs it: a message due in 3 s reaches the consumer no earlier than its due time.
* Request/reply: ``DefaultMQProducer.request`` and a responder that answers with
  ``MessageUtil.createReplyMessage`` (SEND_REPLY_MESSAGE_V2 -> PUSH_REPLY_MESSAGE_TO_CLIENT), both
  client lines.

Driven by ``rmqcompat.RequestReplyScenario``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.scenario import ArgValue, Event, of, run_program
from compat_tests.targets import Target, start_target

pytestmark = pytest.mark.compat

TARGETS = ("gateway", "reference")
MAIN_CLASS = "rmqcompat.RequestReplyScenario"
STEP_S = 90.0
DELAY_MS = 3000
TIMER_LINE = "5.3.3"  # the client line with Message.setDeliverTimeMs (4.9.8 has no timer API)


def short(line: str) -> str:
    return line.replace(".", "")


def run(line: str, command: str, target: Target, home: Path, **args: ArgValue) -> list[Event]:
    """One RequestReplyScenario JVM run; its events (raises :class:`ScenarioError` on a non-zero exit).
    Its consumers subscribe before their topic exists: they get its queues at their next rebalance
    (every second, :data:`compat_tests.scenario.CLIENT_PROPERTIES`)."""
    return run_program(MAIN_CLASS, line, command, target.namesrv_addr, home, STEP_S, args)


@pytest.fixture(scope="module", params=TARGETS)
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    if shutil.which("java") is None:
        pytest.fail("java is missing: run scripts/setup-java.sh")
    name: str = request.param
    started = start_target(name, tmp_path_factory.mktemp(f"tr-{name}"))
    try:
        yield started
    finally:
        started.discard()


def test_timer_message_arrives_no_earlier_than_due(
    target: Target, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home = tmp_path_factory.mktemp(f"timer-{target.name}")
    events = run(
        TIMER_LINE,
        "timer",
        target,
        home,
        topic="TimerT",
        group="timerPG",
        cgroup="timerCG",
        delay_ms=DELAY_MS,
    )
    [sent] = of(events, "sent")
    assert sent["status"] == "SEND_OK"
    timed = [e for e in of(events, "received") if e["body"] == "timed"]
    assert len(timed) == 1, of(events, "received")
    [message] = timed
    assert message["arrivedMs"] >= sent["deliverMs"]
    assert message["arrivedMs"] - sent["sentMs"] < DELAY_MS + 10_000  # delivered, not lost in the wheel
    props = message["props"]
    assert props["TIMER_DELIVER_MS"] == str(sent["deliverMs"])
    assert int(props["TIMER_OUT_MS"]) <= sent["deliverMs"]
    assert props["REAL_TOPIC"] == "TimerT"
    assert message["topic"] == "TimerT"


@pytest.mark.parametrize(
    ("line", "mode"),
    # The 5.3.3 client's synchronous request() returns as soon as the request is sent, with a
    # RequestTimeoutException, on any broker (fixed after 5.3.3, apache/rocketmq#9608); that line
    # is judged with the callback form, which gets the reply.
    [("4.9.8", "sync"), ("4.9.8", "callback"), ("5.3.3", "callback")],
)
def test_request_reply_round_trip(
    target: Target, tmp_path_factory: pytest.TempPathFactory, line: str, mode: str
) -> None:
    home = tmp_path_factory.mktemp(f"reply-{target.name}-{short(line)}-{mode}")
    tag = f"{short(line)}{mode}"
    events = run(
        line, "reply", target, home, topic=f"ReqT{tag}", group=f"reqPG{tag}", cgroup=f"reqCG{tag}",
        count=3, mode=mode,
    )  # fmt: skip
    assert not of(events, "reply_error"), of(events, "reply_error")
    replies = of(events, "reply")
    assert [(e["i"], e["body"]) for e in replies] == [(i, f"reply-to-req-{i}") for i in range(3)]
    assert {e["topic"] for e in replies} == {"DefaultCluster_REPLY_TOPIC"}
    assert [e["status"] for e in of(events, "replied")] == ["SEND_OK"] * 3
