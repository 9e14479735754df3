"""Message traces (``enableMsgTrace``) of the unmodified Java clients of both lines against our
broker AND the real Apache RocketMQ 5.3.3 broker, with identical assertions.

Both brokers run with ``traceTopicEnable=true``, so each creates ``RMQ_SYS_TRACE_TOPIC`` at start
(``TopicConfigManager``). A tracing producer (``new DefaultMQProducer(group, true)``) and a tracing
push consumer write their ``AsyncTraceDispatcher`` records (``TraceDataEncoder``) to that topic
keyed by message id; ``mqadmin queryMsgTraceById`` (``QueryMsgTraceByIdSubCommand``) finds them
through the broker's index (QUERY_MESSAGE). The tests compare what does not depend on timing:
record type, topic, tags, keys, message id, group and status, never costs or timestamps.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compat_tests.mqadmin_batch import mqadmin_batch
from compat_tests.scenario import CLIENT_LINES, Event, of, run_scenario
from compat_tests.targets import Target, start_target

pytestmark = [pytest.mark.compat, pytest.mark.slow]

TARGETS = ("gateway", "reference")
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"  # TopicValidator.RMQ_SYS_TRACE_TOPIC
CONTENT_SPLITOR, FIELD_SPLITOR = "\u0001", "\u0002"  # TraceConstants
READS = 3  # trace-topic reader runs at most, each 15 s
COUNT = 3
STEP_S = 90.0
ROW = re.compile(r"^(Pub|Sub)\s+(\S+)\s+\S+\s+\S+ \S+\s+\d+ms\s+(\S+)\s*$")


def short(line: str) -> str:
    return line.replace(".", "")


@dataclass
class Traced:
    """What one client line produced on one target."""

    sent: list[Event]
    records: list[tuple[str, ...]] = field(default_factory=list)
    admin: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    trace_messages: int = 0


def parse_records(body: str) -> list[tuple[str, ...]]:
    """The timing-free fields of each ``TraceDataEncoder`` record in one trace message body:
    Pub (type, group, topic, msgId, tags, keys, success), SubBefore (type, group, msgId, retries,
    keys), SubAfter (type, msgId, success, keys, group)."""
    records: list[tuple[str, ...]] = []
    for raw in body.split(FIELD_SPLITOR):
        f = raw.split(CONTENT_SPLITOR)
        if f[0] == "Pub":
            records.append(("Pub", f[3], f[4], f[5], f[6], f[7], f[13]))
        elif f[0] == "SubBefore":
            records.append(("SubBefore", f[3], f[5], f[6], f[7]))
        elif f[0] == "SubAfter":
            records.append(("SubAfter", f[2], f[4], f[5], f[8] if len(f) > 8 else ""))
    return records


def admin_rows(text: str) -> list[tuple[str, str, str]]:
    """(type, group, status) of each row ``queryMsgTraceById`` printed."""
    return [(m[1], m[2], m[3]) for m in map(ROW.match, text.splitlines()) if m]


def exercise(target: Target, home: Path, line: str) -> Traced:
    topic, tag = f"Traced{short(line)}", "TagT"
    pgroup, cgroup = f"tracePG{short(line)}", f"traceCG{short(line)}"
    naddr = target.namesrv_addr
    produced = run_scenario(
        line, "produce", naddr, home, STEP_S, topic=topic, count=COUNT, tags=tag, keys_prefix="tk",
        group=pgroup, trace=True,
    )  # fmt: skip
    traced = Traced(sent=of(produced, "sent"))
    assert len(traced.sent) == COUNT, produced[-3:]
    consumed = run_scenario(
        line, "consume", naddr, home, STEP_S, group=cgroup, topic=topic, expect=COUNT, trace=True
    )
    assert len(of(consumed, "received")) == COUNT, consumed[-3:]
    ids = {e["msgId"] for e in traced.sent}
    # Each message gives one Pub, one SubBefore and one SubAfter record; the dispatcher may pack
    # several into one trace message, so the reader waits for its deadline and counts records. A
    # reader that got none of them in its window (seen once on a busy machine with the real broker,
    # whose mqadmin still found every trace) is run again under a new group, at most READS times.
    for attempt in range(READS):
        reader = run_scenario(
            line, "consume", naddr, home, 30.0, group=f"traceReader{short(line)}x{attempt}",
            topic=TRACE_TOPIC, duration=15, expect=10_000,
        )  # fmt: skip
        traced.trace_messages = len(of(reader, "received"))
        traced.records = []
        for event in of(reader, "received"):
            assert "body" in event, f"trace message over the scenario's inline limit: {event}"
            traced.records += [r for r in parse_records(event["body"]) if ids & set(r)]
        if len(traced.records) >= 3 * len(ids):
            break
    queries = {msg_id: ["queryMsgTraceById", "-i", msg_id] for msg_id in sorted(ids)}
    outputs = mqadmin_batch(naddr, queries, home)
    traced.admin = {msg_id: admin_rows(outputs[msg_id]) for msg_id in sorted(ids)}
    return traced


@pytest.fixture(scope="module", params=TARGETS)
def runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Traced]]:
    name: str = request.param
    target = start_target(name, tmp_path_factory.mktemp(name), {"traceTopicEnable": "true"})
    try:
        homes = {line: tmp_path_factory.mktemp(f"{name}-{short(line)}") for line in CLIENT_LINES}
        yield {line: exercise(target, home, line) for line, home in homes.items()}
    finally:
        target.discard()


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_trace_records_of_producer_and_consumer(runs: dict[str, Traced], line: str) -> None:
    """Every sent message has its Pub record (group, topic, tag, keys, success) and its consumer
    records (SubBefore with no retries, SubAfter successful), with the group that wrote them."""
    run = runs[line]
    pgroup, cgroup, topic = f"tracePG{short(line)}", f"traceCG{short(line)}", f"Traced{short(line)}"
    want: list[tuple[str, ...]] = []
    for e in run.sent:
        want.append(("Pub", pgroup, topic, e["msgId"], "TagT", e["keys"], "true"))
        want.append(("SubBefore", cgroup, e["msgId"], "0", e["keys"]))
        want.append(("SubAfter", e["msgId"], "true", e["keys"], cgroup))
    assert sorted(run.records) == sorted(want), f"{run.trace_messages} trace messages read"


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_query_msg_trace_by_id(runs: dict[str, Traced], line: str) -> None:
    """``mqadmin queryMsgTraceById -i <msgId>`` shows one Pub row for the producer group and one
    Sub row for the consumer group, both successful."""
    run = runs[line]
    pgroup, cgroup = f"tracePG{short(line)}", f"traceCG{short(line)}"
    for msg_id, rows in run.admin.items():
        assert sorted(rows) == [("Pub", pgroup, "success"), ("Sub", cgroup, "success")], (msg_id, rows)
