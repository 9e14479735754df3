"""Spark reads the store a real broker wrote, and sees exactly what a real Java consumer received.

For each target (``rmq-gateway standalone``, then the real Apache RocketMQ 5.3.3 broker): real
Java producers (``rmqcompat.Scenario produce``, client lines 5.3.3 and 4.9.8) send messages with
tags, keys and user properties (one run with non-ASCII values), a run of 6,000-byte bodies (the
clients compress bodies over 4 KiB, ``compressMsgBodyOverHowmuch``) and a 5.x batch (whose
properties the broker appends to every inner message: a key stored twice). A real push consumer
(``Scenario consume``) receives them all; the target is then stopped cleanly (SIGTERM: both
brokers flush the store and persist ``config/consumerOffset.json`` on shutdown) and its store
directory is read with ``spark.read.format("rocketmq")`` in ``local[2]`` mode:

* :func:`test_dataframe_equals_what_the_consumer_received`: one row per received message, equal
  field by field (ids, topic, queue, offsets, tags, keys, properties, body bytes, hosts, times,
  flags, sizes);
* :func:`test_offsets_show_the_group_caught_up`: ``format("rocketmq.offsets")`` gives the group's
  committed offset == max offset (lag 0) on every queue that holds messages;
* :func:`test_topic_latency_job`: ``spark/examples/topic_latency.py`` on that store writes Parquet
  equal to the same statistics computed in plain Python from the consumer's events (and, for our
  target, the README's command line ``python -m spark.examples.topic_latency`` writes the same).

Store directories: ours is the ``--store`` given to the gateway (``GatewayTarget``: ``<workdir>/store``),
the real broker's is ``storePathRootDir`` of its ``broker.conf`` (``ReferenceServers.store``).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from compat_tests.helpers import consume, produce
from compat_tests.scenario import Event, done, of
from compat_tests.targets import GatewayTarget, ReferenceTarget, Target
from spark.examples.topic_latency import COLUMNS, run_job
from spark.testing import local_session

pytestmark = pytest.mark.compat

TOPIC = "SparkCompatTopic"
GROUP = "spark_compat_group"
TEXT_PROPS = {"color": "红", "region": "eu-west"}  # user properties of the text messages
# (client line, produce arguments): text bodies with tags/keys/props, compressed bodies, a 5.x batch.
RUNS: tuple[tuple[str, dict[str, object]], ...] = (
    (
        "5.3.3",
        {"count": 30, "tags": "TagA,TagB,TagC", "keys_prefix": "order-", "props": "color:红,region:eu-west"},
    ),
    (
        "4.9.8",
        {"count": 6, "tags": "Big", "keys_prefix": "big498-", "body_size": 6000, "body_kind": "pattern"},
    ),
    (
        "5.3.3",
        {"count": 4, "tags": "Big", "keys_prefix": "big533-", "body_size": 6000, "body_kind": "pattern"},
    ),
    ("5.3.3", {"count": 10, "tags": "Batch", "keys_prefix": "batch-", "batch": 5, "props": "n:1"}),
)
TOTAL = sum(int(str(args["count"])) for _, args in RUNS)
# "received" event key -> DataFrame column holding the same value.
SAME_FIELDS = {
    "msgId": "uniq_key", "topic": "topic", "queueId": "queue_id", "queueOffset": "queue_offset",
    "tags": "tags", "keys": "keys", "bornTimestamp": "born_ms", "storeTimestamp": "store_ms", "flag": "flag",
    "sysFlag": "sys_flag", "bornHost": "born_host", "storeHost": "store_host",
    "commitLogOffset": "commit_log_offset", "storeSize": "size", "reconsumeTimes": "reconsume_times",
}  # fmt: skip
COMPRESSED_FLAG = 0x1  # MessageSysFlag.COMPRESSED_FLAG
BIG_BODY_INLINE = 1000  # Run.BIG_BODY_INLINE: longer bodies are reported as bodyLen + bodySha1


REPO = Path(__file__).resolve().parent.parent
JOB_TIMEOUT_S = 420  # a second JVM and Python workers: ~200 s seen at load average 20 on 2 cores


@dataclass
class StoppedRun:
    """A target after the scenario: its store directory (the broker stopped) and the events."""

    target: str
    store: Path
    sent: list[Event]
    received: dict[str, Event]  # offsetMsgId -> first delivery


def store_dir(target: Target) -> Path:
    """Where ``target`` keeps its store (see the module docstring)."""
    if isinstance(target, ReferenceTarget):
        return target.servers.store
    if isinstance(target, GatewayTarget):
        return target.workdir / "store"
    store = getattr(target, "store", None)
    if isinstance(store, Path):
        return store  # InProcessTarget
    pytest.fail(f"{type(target).__name__}: its store directory is not on this machine")


@pytest.fixture(scope="module")
def session() -> Iterator[SparkSession]:
    # In a pytest worker that already ran tests/spark, getOrCreate() returns that suite's session:
    # stop only a session started here, or every later load() there fails (DATA_SOURCE_NOT_FOUND).
    already = SparkSession.getActiveSession()
    s = local_session("local[2]", "rocketmq-spark-compat")
    yield s
    if already is None:
        s.stop()


@pytest.fixture(scope="module")
def stopped(target: Target, home: Path) -> StoppedRun:
    """Produce every run, consume them all with one push consumer, then stop the target cleanly."""
    sent: list[Event] = []
    for line, args in RUNS:
        events = produce(target, home, line, topic=TOPIC, **args)
        assert done(events)["sent"] == args["count"], done(events)
        sent += of(events, "sent")
    events = consume(target, home, "5.3.3", group=GROUP, topic=TOPIC, expect=TOTAL)
    received: dict[str, Event] = {}
    for e in of(events, "received"):
        received.setdefault(e["offsetMsgId"], e)
    assert len(received) == TOTAL, f"{len(received)} of {TOTAL} received"
    assert {e["offsetMsgId"] for e in sent} == set(received)
    target.stop()
    return StoppedRun(target.name, store_dir(target), sent, received)


def _host(java: str) -> str:
    """``InetSocketAddress.toString()`` (``[hostname]/ip:port``) without the hostname part."""
    return java.rsplit("/", 1)[-1]


def _body_view(body: bytes) -> dict[str, Any]:
    """The body as Run.putBody reports it."""
    if len(body) > BIG_BODY_INLINE:
        return {"bodyLen": len(body), "bodySha1": hashlib.sha1(body).hexdigest()}
    return {"body": body.decode("utf-8")}


def test_dataframe_equals_what_the_consumer_received(session: SparkSession, stopped: StoppedRun) -> None:
    df = session.read.format("rocketmq").option("topics", TOPIC).load(str(stopped.store))
    rows = df.selectExpr(
        "*", "unix_millis(born_timestamp) AS born_ms", "unix_millis(store_timestamp) AS store_ms"
    ).collect()
    assert len(rows) == TOTAL
    by_id = {r["msg_id"]: r.asDict() for r in rows}
    assert set(by_id) == set(stopped.received), "msg_id (offset message ids) differ"
    compressed = 0
    for msg_id, e in stopped.received.items():
        r = by_id[msg_id]
        props: dict[str, str] = r["properties"]
        got = {key: r[column] for key, column in SAME_FIELDS.items()}
        got.update(_body_view(r["body"]))
        # The client clears COMPRESSED_FLAG when it inflates a body (MessageDecoder.decode); the
        # DataFrame keeps the stored sys_flag beside the inflated body.
        got["sysFlag"] = r["sys_flag"] & ~COMPRESSED_FLAG
        want = {k: e.get(k) for k in got}
        want["bornHost"], want["storeHost"] = _host(e["bornHost"]), _host(e["storeHost"])
        assert got == want, msg_id
        # Every stored property is one the consumer saw (as a user or a system property), and
        # every user property it saw is stored (the client adds system ones such as MIN_OFFSET).
        seen = {**e["sysProps"], **e["props"]}
        assert props.items() <= seen.items(), (msg_id, props, seen)
        assert e["props"].items() <= props.items(), (msg_id, props, e["props"])
        compressed += bool(r["sys_flag"] & COMPRESSED_FLAG)
    assert compressed == 10, "the 6,000-byte bodies of both client lines are stored compressed"
    assert sum(e.get("props") == TEXT_PROPS for e in stopped.received.values()) == 30


def test_offsets_show_the_group_caught_up(session: SparkSession, stopped: StoppedRun) -> None:
    offsets = session.read.format("rocketmq.offsets").load(str(stopped.store))
    rows = [r.asDict() for r in offsets.where(f"`group` = '{GROUP}' AND topic = '{TOPIC}'").collect()]
    per_queue: dict[int, int] = {}
    for e in stopped.received.values():
        per_queue[e["queueId"]] = max(per_queue.get(e["queueId"], 0), e["queueOffset"] + 1)
    committed = {r["queue_id"]: (r["consumer_offset"], r["max_offset"], r["lag"]) for r in rows}
    assert {q: committed.get(q) for q in per_queue} == {q: (n, n, 0) for q, n in per_queue.items()}
    assert all(lag == 0 for _, _, lag in committed.values()), committed


def _percentile(values: list[int], p: float) -> float:
    """Linear interpolation between closest ranks (Spark's exact ``percentile``, numpy's default)."""
    ordered = sorted(values)
    pos = p * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def latency_table(events: list[tuple[str, int, int, int]]) -> list[tuple[Any, ...]]:
    """``(topic, minute ms, messages, bytes, p50 ms, p99 ms)`` of ``(topic, store ms, latency ms,
    size)`` tuples, in plain Python: what the example job must write."""
    groups: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for topic, store_ms, latency, size in events:
        groups.setdefault((topic, store_ms - store_ms % 60_000), []).append((latency, size))
    return [
        (
            topic,
            minute,
            len(v),
            sum(s for _, s in v),
            _percentile([x for x, _ in v], 0.5),
            _percentile([x for x, _ in v], 0.99),
        )
        for (topic, minute), v in groups.items()
    ]


def test_topic_latency_job(session: SparkSession, stopped: StoppedRun, tmp_path: Path) -> None:
    out = tmp_path / "latency"
    run_job(session, str(stopped.store), str(out))
    table = session.read.parquet(str(out)).where(f"topic = '{TOPIC}'")
    got = sorted(tuple(r) for r in table.selectExpr("topic", "unix_millis(minute)", *COLUMNS[2:]).collect())
    events = [
        (e["topic"], e["storeTimestamp"], e["storeTimestamp"] - e["bornTimestamp"], e["storeSize"])
        for e in stopped.received.values()
    ]
    want = sorted(latency_table(events))
    assert len(got) == len(want) > 0
    for g, w in zip(got, want, strict=True):
        assert g[:4] == w[:4]  # topic, minute, messages, bytes
        assert g[4:] == pytest.approx(w[4:])  # p50, p99 latency (ms)
    if stopped.target == "gateway":
        # The README's command line, once: the same table from a separate process.
        cli_out = tmp_path / "latency-cli"
        argv = [sys.executable, "-m", "spark.examples.topic_latency", str(stopped.store), str(cli_out)]
        done = subprocess.run(
            [*argv, "--master", "local[1]"], cwd=REPO, capture_output=True, text=True, timeout=JOB_TIMEOUT_S
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"rows (topic x minute) written to {cli_out}" in done.stdout
        assert sorted(session.read.parquet(str(cli_out)).collect()) == sorted(
            session.read.parquet(str(out)).collect()
        )
