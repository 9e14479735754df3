"""Network mode of the Spark readers against a NameServer and TWO brokers (``broker-a``,
``broker-b``): ours (:class:`compat_tests.clusters.GatewayCluster`) and the real Apache RocketMQ
5.3.3 (:class:`compat_tests.clusters.ReferenceCluster`), with identical assertions.

The topic is created on both brokers (``mqadmin updateTopic -c DefaultCluster``, 4 queues each).
The unmodified 5.3.3 ``DefaultMQProducer`` sends COUNT messages (tags round-robin over
TagA/TagB/TagC, keys), spread by the client over the 8 queues of both brokers; a 5.3.3 push
consumer then consumes them all with GROUP. ``spark.read.format("rocketmq").option("namesrvAddr",
...)`` must return exactly the messages the push consumer received (uniq ``msgId``,
``offsetMsgId``, store host, queue, offset, body) and what the SendResults name (broker, tags,
keys), honour per-queue starting/ending offsets and a pushed-down tag, and
``format("rocketmq.offsets")`` must show the consumer's committed offsets on both brokers with no
lag. That the real brokers answer every pull proves they accept a group that never heartbeated
when the pull carries its subscription.

The last test streams (``maxMessagesPerTrigger`` 4) while broker-b is stopped and restarted on
its store: :mod:`compat_tests.spark_restart`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from compat_tests.clusters import BROKERS, Cluster, create_topic, running_cluster
from compat_tests.scenario import Event, done, of, run_scenario
from compat_tests.spark_restart import stream_across_a_broker_restart
from spark.testing import local_session

pytestmark = pytest.mark.compat

LINE = "5.3.3"
COUNT = 40
QUEUES = 4  # per broker
TOPIC = "SparkNetCompat"
GROUP = "sparkNetConsumer"
TAGS = ("TagA", "TagB", "TagC")
STEP_S = 120.0


@pytest.fixture(scope="module")
def session() -> Iterator[SparkSession]:
    already = SparkSession.getActiveSession()  # see test_spark_compat: stop only our own session
    s = local_session("local[2]", "rocketmq-spark-network-compat")
    yield s
    if already is None:
        s.stop()


@pytest.fixture(scope="module", params=["gateway", "reference"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(request.param, tmp_path_factory.mktemp(request.param) / "cluster") as started:
        yield started


@pytest.fixture(scope="module")
def home(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("clients")


@pytest.fixture(scope="module")
def traffic(cluster: Cluster, home: Path) -> tuple[list[Event], list[Event]]:
    """The producer's ``sent`` events and the push consumer's ``received`` events."""
    create_topic(cluster, TOPIC, home, QUEUES)
    events = run_scenario(
        LINE, "produce", cluster.namesrv_addr, home, STEP_S, topic=TOPIC, count=COUNT, mode="sync",
        tags=",".join(TAGS), keys_prefix="key-", group="sparkNetProducer",
    )  # fmt: skip
    assert not of(events, "send_error"), of(events, "send_error")[:3]
    assert done(events)["sent"] == COUNT
    sent = of(events, "sent")
    assert {e["brokerName"] for e in sent} == set(BROKERS)  # the client spread them over both
    consumed = run_scenario(
        LINE, "consume", cluster.namesrv_addr, home, STEP_S, group=GROUP, topic=TOPIC, subscription="*",
        expect=COUNT,
    )  # fmt: skip
    assert done(consumed)["distinct"] == COUNT
    return sent, of(consumed, "received")


@pytest.fixture(scope="module")
def sent(traffic: tuple[list[Event], list[Event]]) -> list[Event]:
    return traffic[0]


def _reader(session: SparkSession, cluster: Cluster, **options: str) -> object:
    reader = session.read.format("rocketmq").option("namesrvAddr", cluster.namesrv_addr)
    for k, v in {"topics": TOPIC, **options}.items():
        reader = reader.option(k, v)
    return reader


def _rows(session: SparkSession, cluster: Cluster, **options: str) -> list[tuple[object, ...]]:
    cols = ("broker", "uniq_key", "msg_id", "queue_id", "queue_offset", "tags", "keys", "body")
    df = _reader(session, cluster, **options).load().select(*cols)  # type: ignore[attr-defined]
    return sorted(
        (r.broker, r.uniq_key, r.msg_id, r.queue_id, r.queue_offset, r.tags, r.keys, bytes(r.body).decode())
        for r in df.collect()
    )


def _expected(events: list[Event]) -> list[tuple[object, ...]]:
    return sorted(
        (
            e["brokerName"], e["msgId"], e["offsetMsgId"], e["queueId"], e["queueOffset"], e["tags"],
            e["keys"], e["body"],
        )
        for e in events
    )  # fmt: skip


def test_dataframe_equals_what_the_push_consumer_received(
    session: SparkSession, cluster: Cluster, traffic: tuple[list[Event], list[Event]]
) -> None:
    sent, received = traffic
    df = _reader(session, cluster, maxRowsPerPartition="7").load()  # type: ignore[attr-defined]
    got = sorted(
        (r.uniq_key, r.msg_id, r.store_host, r.queue_id, r.queue_offset, bytes(r.body).decode())
        for r in df.select("uniq_key", "msg_id", "store_host", "queue_id", "queue_offset", "body").collect()
    )
    consumer = sorted(
        (e["msgId"], e["offsetMsgId"], e["storeHost"].lstrip("/"), e["queueId"], e["queueOffset"], e["body"])
        for e in received
    )
    assert got == consumer
    assert len({row[2] for row in got}) == 2  # rows from both brokers' store hosts
    assert _rows(session, cluster, maxRowsPerPartition="7") == _expected(sent)


def test_tag_pushdown_and_offsets(session: SparkSession, cluster: Cluster, sent: list[Event]) -> None:
    assert _rows(session, cluster, tags="TagB") == _expected([e for e in sent if e["tags"] == "TagB"])
    a, b = BROKERS
    start = json.dumps({TOPIC: {f"{a}:1": 2, f"{b}:2": 1}})
    end = {f"{name}:{q}": 0 for name in BROKERS for q in range(QUEUES)}
    end.update({f"{a}:1": 5, f"{b}:2": 3})
    got = _rows(session, cluster, startingOffsets=start, endingOffsets=json.dumps({TOPIC: end}))
    wanted = [
        e for e in sent
        if ((e["brokerName"], e["queueId"]) == (a, 1) and 2 <= e["queueOffset"] < 5)
        or ((e["brokerName"], e["queueId"]) == (b, 2) and 1 <= e["queueOffset"] < 3)
    ]  # fmt: skip
    assert got == _expected(wanted)


def test_offsets_show_the_consumer_caught_up(
    session: SparkSession, cluster: Cluster, sent: list[Event]
) -> None:
    reader = session.read.format("rocketmq.offsets").option("namesrvAddr", cluster.namesrv_addr)
    rows = reader.option("groups", GROUP).option("topics", TOPIC).load().collect()
    per_queue: dict[tuple[str, int], int] = {}
    for e in sent:
        per_queue[(e["brokerName"], e["queueId"])] = per_queue.get((e["brokerName"], e["queueId"]), 0) + 1
    got = {(r.broker, r.queue_id): (r.consumer_offset, r.max_offset, r.lag) for r in rows if r.max_offset}
    assert got == {key: (n, n, 0) for key, n in per_queue.items()}
    assert {r.broker for r in rows} == set(BROKERS)


def test_timestamps_resolved_by_the_brokers(
    session: SparkSession, cluster: Cluster, sent: list[Event]
) -> None:
    """SEARCH_OFFSET_BY_TIMESTAMP per queue: from the first message stored at or after T, and up to it."""
    base = _reader(session, cluster).load()  # type: ignore[attr-defined]
    stored = [(r.uniq_key, int(r.store_timestamp.timestamp() * 1000)) for r in base.collect()]
    assert len(stored) == len(sent)
    moment = sorted(ms for _, ms in stored)[len(stored) // 2]
    later = {k for k, ms in stored if ms >= moment}
    assert {row[1] for row in _rows(session, cluster, startingTimestamp=str(moment))} == later
    assert {row[1] for row in _rows(session, cluster, endingTimestamp=str(moment))} == {
        k for k, _ in stored
    } - later


def test_stream_across_a_broker_restart(
    session: SparkSession, cluster: Cluster, home: Path, tmp_path: Path, sent: list[Event]
) -> None:
    """Last of the module: it stops and restarts broker-b (on another topic)."""
    stream_across_a_broker_restart(session, cluster, home, tmp_path)
