"""Network mode of the Spark readers against our gateway AND the real Apache RocketMQ 5.3.3
NameServer + broker, with identical assertions.

The unmodified 5.3.3 ``DefaultMQProducer`` sends COUNT messages (tags round-robin over
TagA/TagB/TagC, keys) to a topic it auto-creates with 4 queues; a 5.3.3 push consumer then
consumes them all with GROUP. ``spark.read.format("rocketmq").option("namesrvAddr", ...)`` must
return exactly what the SendResults name (uniq ``msgId``, ``offsetMsgId``, queue, offset, tags,
keys, body), honour per-queue starting/ending offsets and a pushed-down tag, and
``format("rocketmq.offsets")`` must show the consumer's committed offsets with no lag. That the
real broker answers every pull proves it accepts a group that never heartbeated when the pull
carries its subscription.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from compat_tests.helpers import consume, produce
from compat_tests.scenario import Event, done, of
from compat_tests.targets import Target
from spark.testing import local_session

pytestmark = pytest.mark.compat

LINE = "5.3.3"
COUNT = 40
TOPIC = "SparkNetCompat"
GROUP = "sparkNetConsumer"
TAGS = ("TagA", "TagB", "TagC")


@pytest.fixture(scope="module")
def session() -> Iterator[SparkSession]:
    already = SparkSession.getActiveSession()  # see test_spark_compat: stop only our own session
    s = local_session("local[2]", "rocketmq-spark-network-compat")
    yield s
    if already is None:
        s.stop()


@pytest.fixture(scope="module")
def sent(target: Target, home: Path) -> list[Event]:
    events = produce(
        target, home, LINE, topic=TOPIC, count=COUNT, mode="sync", tags=",".join(TAGS), keys_prefix="key-",
        group="sparkNetProducer",
    )  # fmt: skip
    assert done(events)["sent"] == COUNT
    consumed = consume(target, home, LINE, group=GROUP, topic=TOPIC, subscription="*", expect=COUNT)
    assert done(consumed)["distinct"] == COUNT
    return of(events, "sent")


def _rows(session: SparkSession, target: Target, **options: str) -> list[tuple[object, ...]]:
    reader = (
        session.read.format("rocketmq").option("namesrvAddr", target.namesrv_addr).option("topics", TOPIC)
    )
    for k, v in options.items():
        reader = reader.option(k, v)
    cols = ("uniq_key", "msg_id", "queue_id", "queue_offset", "tags", "keys", "body")
    return sorted(
        (r.uniq_key, r.msg_id, r.queue_id, r.queue_offset, r.tags, r.keys, bytes(r.body).decode())
        for r in reader.load().select(*cols).collect()
    )


def _expected(events: list[Event]) -> list[tuple[object, ...]]:
    return sorted(
        (e["msgId"], e["offsetMsgId"], e["queueId"], e["queueOffset"], e["tags"], e["keys"], e["body"])
        for e in events
    )


def test_dataframe_equals_the_send_results(session: SparkSession, target: Target, sent: list[Event]) -> None:
    assert _rows(session, target, maxRowsPerPartition="7") == _expected(sent)


def test_tag_pushdown_and_offsets(session: SparkSession, target: Target, sent: list[Event]) -> None:
    assert _rows(session, target, tags="TagB") == _expected([e for e in sent if e["tags"] == "TagB"])
    broker = (
        session.read.format("rocketmq").option("namesrvAddr", target.namesrv_addr).option("topics", TOPIC)
    )
    name = broker.load().select("broker").first()[0]  # type: ignore[index]
    start = json.dumps({TOPIC: {f"{name}:1": 2}})
    end = json.dumps({TOPIC: {f"{name}:1": 5, f"{name}:0": 0, f"{name}:2": 0, f"{name}:3": 0}})
    got = _rows(session, target, startingOffsets=start, endingOffsets=end)
    assert got == _expected([e for e in sent if e["queueId"] == 1 and 2 <= e["queueOffset"] < 5])


def test_offsets_show_the_consumer_caught_up(
    session: SparkSession, target: Target, sent: list[Event]
) -> None:
    reader = session.read.format("rocketmq.offsets").option("namesrvAddr", target.namesrv_addr)
    rows = reader.option("groups", GROUP).option("topics", TOPIC).load().collect()
    per_queue = {q: sum(1 for e in sent if e["queueId"] == q) for q in {e["queueId"] for e in sent}}
    got = {r.queue_id: (r.consumer_offset, r.max_offset, r.lag) for r in rows}
    assert got == {q: (n, n, 0) for q, n in per_queue.items()}


def test_timestamps_resolved_by_the_broker(session: SparkSession, target: Target, sent: list[Event]) -> None:
    """SEARCH_OFFSET_BY_TIMESTAMP per queue: from the first message stored at or after T, and up to it."""
    base = session.read.format("rocketmq").option("namesrvAddr", target.namesrv_addr).option("topics", TOPIC)
    stored = [(r.uniq_key, int(r.store_timestamp.timestamp() * 1000)) for r in base.load().collect()]
    moment = sorted(ms for _, ms in stored)[len(stored) // 2]
    later = {k for k, ms in stored if ms >= moment}
    assert {row[0] for row in _rows(session, target, startingTimestamp=str(moment))} == later
    assert {row[0] for row in _rows(session, target, endingTimestamp=str(moment))} == {
        k for k, _ in stored
    } - later
