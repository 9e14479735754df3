"""The scenario runner (``compat_tests/scenario.py`` + ``rmqcompat.Scenario``) against the real
Apache RocketMQ 5.3.3 NameServer and Broker, with both real client lines.

This proves the runner itself: what it reports for the real broker is what the same scenarios
must report for ours. One reference NameServer + Broker serve the whole module; every client line
uses its own topics and groups.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.reference import REFERENCE_LIB
from compat_tests.scenario import CLIENT_LINES, Event, done, of, run_scenario
from compat_tests.targets import ReferenceTarget

pytestmark = pytest.mark.compat

COUNT = 200
TAGS = ("TagA", "TagB", "TagC")
PROPS = {"color": "蓝", "n": "1"}
STEP_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceTarget]:
    if shutil.which("java") is None or not REFERENCE_LIB.is_dir():
        pytest.fail("java or the reference jars are missing: run scripts/setup-java.sh")
    target = ReferenceTarget(tmp_path_factory.mktemp("reference"))
    try:
        yield target
    finally:
        target.stop()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("clients")


def short(line: str) -> str:
    return line.replace(".", "")


_produced: dict[str, list[Event]] = {}


def produced(reference: ReferenceTarget, home: Path, line: str) -> list[Event]:
    """The ``sent`` events of COUNT sync sends (tags round-robin, keys, user properties) on
    ``Tags<line>``, produced once per client line."""
    if line not in _produced:
        events = run_scenario(
            line,
            "produce",
            reference.namesrv_addr,
            home,
            STEP_TIMEOUT_S,
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
        _produced[line] = of(events, "sent")
    return _produced[line]


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
def test_sync_send_reports_every_message(reference: ReferenceTarget, home: Path, line: str) -> None:
    sent = produced(reference, home, line)
    assert sorted(e["i"] for e in sent) == list(range(COUNT))
    assert {e["status"] for e in sent} == {"SEND_OK"}
    assert len({e["msgId"] for e in sent}) == COUNT
    assert len({e["offsetMsgId"] for e in sent}) == COUNT
    assert all(e["tags"] == TAGS[e["i"] % 3] and e["keys"] == f"key-{e['i']}" for e in sent)
    assert all("消息" in e["body"] for e in sent)
    positions = {(e["queueId"], e["queueOffset"]) for e in sent}
    assert len(positions) == COUNT
    queues = {e["queueId"] for e in sent}
    assert queues == {0, 1, 2, 3}  # the auto-created topic has 4 queues; sends round-robin
    for q in queues:  # each queue's offsets are 0..n-1
        offsets = sorted(e["queueOffset"] for e in sent if e["queueId"] == q)
        assert offsets == list(range(len(offsets)))


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_push_consumer_gets_exactly_the_subscribed_tags(
    reference: ReferenceTarget, home: Path, line: str
) -> None:
    sent = produced(reference, home, line)
    wanted = [e for e in sent if e["tags"] in ("TagA", "TagB")]
    by_offset = {e["offsetMsgId"]: e for e in sent}
    events = run_scenario(
        line,
        "consume",
        reference.namesrv_addr,
        home,
        STEP_TIMEOUT_S,
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
def test_lite_pull_subscribe_gets_everything(reference: ReferenceTarget, home: Path, line: str) -> None:
    sent = produced(reference, home, line)
    events = run_scenario(
        line,
        "litepull",
        reference.namesrv_addr,
        home,
        STEP_TIMEOUT_S,
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
def test_pull_consumer_reads_every_queue_from_zero(reference: ReferenceTarget, home: Path, line: str) -> None:
    sent = produced(reference, home, line)
    events = run_scenario(
        line,
        "pull",
        reference.namesrv_addr,
        home,
        STEP_TIMEOUT_S,
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
def test_batch_send_is_received(reference: ReferenceTarget, home: Path, line: str) -> None:
    topic = f"Batch{short(line)}"
    events = run_scenario(
        line,
        "produce",
        reference.namesrv_addr,
        home,
        STEP_TIMEOUT_S,
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

    events = run_scenario(
        line,
        "consume",
        reference.namesrv_addr,
        home,
        STEP_TIMEOUT_S,
        group=f"batchConsumer{short(line)}",
        topic=topic,
        expect=10,
    )
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
