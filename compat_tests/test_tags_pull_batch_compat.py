"""Tag filters, batch sends and the pull-style consumers: the unmodified Java clients of both lines
against our broker AND against the real Apache RocketMQ 5.3.3 broker, with identical assertions.

Per target and client line, COUNT messages are sent once (tags round-robin over TagA/TagB/TagC,
keys, user properties with a Chinese value) to ``Tags<line>``; then a push consumer subscribed to
``TagA || TagB``, a ``DefaultLitePullConsumer`` (subscribe) and a ``DefaultMQPullConsumer``
(``TagC``, every queue from offset 0) must see exactly what was stored, at the positions the
SendResults named. The batch scenario sends one batch of 10 and consumes it.

Each target (the ``target`` fixture of ``conftest.py``) serves the whole module; every client line
uses its own topics and groups.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from compat_tests.helpers import STEP_S, consume, produce, short
from compat_tests.scenario import CLIENT_LINES, Event, done, of, run_scenario
from compat_tests.targets import Target

pytestmark = pytest.mark.compat

COUNT = 200
TAGS = ("TagA", "TagB", "TagC")
PROPS = {"color": "蓝", "n": "1"}
AUTO_CREATED_QUEUES = {0, 1, 2, 3}  # DefaultMQProducer.defaultTopicQueueNums (4): the send creates them

Produced = Callable[[str], list[Event]]


@pytest.fixture(scope="module")
def produced(target: Target, home: Path) -> Produced:
    """``produced(line)``: the ``sent`` events of COUNT sync sends to ``Tags<line>`` on this
    target, made on first use per client line."""
    cache: dict[str, list[Event]] = {}

    def sent(line: str) -> list[Event]:
        if line not in cache:
            events = produce(
                target,
                home,
                line,
                topic=f"Tags{short(line)}",
                count=COUNT,
                mode="sync",
                tags=",".join(TAGS),
                keys_prefix="key-",
                props=",".join(f"{k}:{v}" for k, v in PROPS.items()),
                group=f"producer{short(line)}",
            )
            assert done(events) == {"event": "done", "sent": COUNT, "errors": 0, "complete": True}, of(
                events, "send_error"
            )[:3]
            cache[line] = of(events, "sent")
        return cache[line]

    return sent


def assert_same_messages(received: list[Event], sent: list[Event], topic: str) -> None:
    """Each received message is one of ``sent`` with identical content and position."""
    by_id = {e["offsetMsgId"]: e for e in sent}
    for r in received:
        s = by_id[r["offsetMsgId"]]
        assert r["uid"] == r["offsetMsgId"]
        assert r["topic"] == topic
        assert (r["queueId"], r["queueOffset"]) == (s["queueId"], s["queueOffset"])
        assert (r["tags"], r["keys"], r["body"]) == (s["tags"], s["keys"], s["body"])
        assert r["reconsumeTimes"] == 0
        assert r["delay"] is None
        assert r["storeTimestamp"] >= r["bornTimestamp"] > 0


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_sync_send_reports_every_message(produced: Produced, line: str) -> None:
    sent = produced(line)
    assert sorted(e["i"] for e in sent) == list(range(COUNT))
    assert {e["status"] for e in sent} == {"SEND_OK"}
    assert len({e["msgId"] for e in sent}) == COUNT
    assert len({e["offsetMsgId"] for e in sent}) == COUNT
    assert all(e["tags"] == TAGS[e["i"] % 3] and e["keys"] == f"key-{e['i']}" for e in sent)
    assert all("消息" in e["body"] for e in sent)
    positions = {(e["queueId"], e["queueOffset"]) for e in sent}
    assert len(positions) == COUNT
    queues = {e["queueId"] for e in sent}
    assert queues == AUTO_CREATED_QUEUES  # sends round-robin over the auto-created topic's queues
    for q in queues:  # each queue's offsets are 0..n-1
        offsets = sorted(e["queueOffset"] for e in sent if e["queueId"] == q)
        assert offsets == list(range(len(offsets)))


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_push_consumer_gets_exactly_the_subscribed_tags(
    target: Target, home: Path, produced: Produced, line: str
) -> None:
    sent = produced(line)
    wanted = [e for e in sent if e["tags"] in ("TagA", "TagB")]
    by_offset = {e["offsetMsgId"]: e for e in sent}
    events = consume(
        target,
        home,
        line,
        group=f"tagConsumer{short(line)}",
        topic=f"Tags{short(line)}",
        subscription="TagA || TagB",
        expect=len(wanted),
        instance=f"tags{short(line)}",
    )
    received = of(events, "received")
    assert {r["tags"] for r in received} == {"TagA", "TagB"}
    assert {r["msgId"] for r in received} == {e["msgId"] for e in wanted}
    assert len(received) == len(wanted)  # no redelivery
    assert all(r["msgId"] == by_offset[r["offsetMsgId"]]["msgId"] for r in received)
    assert all(r["props"] == PROPS and r["status"] == "success" for r in received)
    assert_same_messages(received, sent, f"Tags{short(line)}")
    assert done(events)["distinct"] == len(wanted)


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_lite_pull_subscribe_gets_everything(
    target: Target, home: Path, produced: Produced, line: str
) -> None:
    sent = produced(line)
    events = run_scenario(
        line,
        "litepull",
        target.namesrv_addr,
        home,
        STEP_S,
        group=f"litePull{short(line)}",
        topic=f"Tags{short(line)}",
        mode="subscribe",
        expect=COUNT,
    )
    received = of(events, "received")
    assert {r["msgId"] for r in received} == {e["msgId"] for e in sent}
    assert all(r["props"] == PROPS for r in received)
    assert_same_messages(received, sent, f"Tags{short(line)}")


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_pull_consumer_reads_every_queue_from_zero(
    target: Target, home: Path, produced: Produced, line: str
) -> None:
    sent = produced(line)
    events = run_scenario(
        line,
        "pull",
        target.namesrv_addr,
        home,
        STEP_S,
        group=f"pull{short(line)}",
        topic=f"Tags{short(line)}",
        subscription="TagC",
        expect=COUNT // 3,
    )
    received = of(events, "received")
    assert {r["tags"] for r in received} == {"TagC"}
    assert {r["msgId"] for r in received} == {e["msgId"] for e in sent if e["tags"] == "TagC"}
    assert_same_messages(received, sent, f"Tags{short(line)}")
    assert {p["status"] for p in of(events, "pulled")} <= {"FOUND", "NO_MATCHED_MSG"}


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_batch_send_is_received(target: Target, home: Path, line: str) -> None:
    topic = f"Batch{short(line)}"
    events = produce(
        target,
        home,
        line,
        topic=topic,
        count=10,
        batch=10,
        tags="TagB",
        keys_prefix="batch-",
        props="kind:batch",
    )
    sent = of(events, "sent")
    assert done(events)["sent"] == 10
    assert len({e["msgId"] for e in sent}) == 10
    assert len({e["queueId"] for e in sent}) == 1  # one batch, one queue, consecutive offsets
    assert [e["queueOffset"] for e in sorted(sent, key=lambda e: e["i"])] == list(range(10))

    events = consume(target, home, line, group=f"batchConsumer{short(line)}", topic=topic, expect=10)
    received = of(events, "received")
    assert sorted(r["offsetMsgId"] for r in received) == sorted(e["offsetMsgId"] for e in sent)
    assert all(r["props"] == {"kind": "batch"} for r in received)
    assert_same_messages(received, sent, topic)
    if line.startswith("4."):
        assert {r["msgId"] for r in received} == {e["msgId"] for e in sent}
    else:
        # The 5.x client gives the batch its own UNIQ_KEY; the broker appends the batch's
        # properties to each message's, so every message is delivered with that one msgId.
        assert len({r["msgId"] for r in received}) == 1
        assert not {r["msgId"] for r in received} & {e["msgId"] for e in sent}
