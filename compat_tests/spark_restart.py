"""A network-mode stream (:mod:`spark.netstream`) reading a two-broker cluster while one broker is
stopped and restarted on its store, for ``test_spark_network_compat.py`` (ours and the real 5.3.3).

The unmodified 5.3.3 producer sends FIRST messages over both brokers; a query with
``maxMessagesPerTrigger`` PER_TRIGGER copies their keys into Parquet (an exactly-once sink) and
keeps running. broker-b is then stopped (SIGTERM: it unregisters and flushes); DURING messages are
sent, to broker-a only, and the running query must put them in the sink while broker-b is down:
a trigger planned while the route still names broker-b retries planning within its bound
(``PLAN_ATTEMPTS`` x ``PLAN_PAUSE_S``), then reads broker-a alone, and broker-b's queues keep
their offsets in the source offset. broker-b is started again on its store, AFTER more messages
are sent over both brokers, and at the end the sink holds every sent message exactly once:
broker-b is read on from where the query left it, nothing of it read twice.

broker-b is stopped once the query has read what was sent before, so that no micro-batch is
pulling from it at that moment. A micro-batch already planned with a range of the stopped broker
retries its pulls ``PULL_ATTEMPTS`` times ``PULL_PAUSE_S`` apart (:mod:`spark.pulling`), about
4 s, far shorter than a restart of the real broker (20-60 s on a loaded machine): that batch, and
so the query, fails with ``rocketmq: cannot connect to <broker-b>`` and must be restarted from its
checkpoint once the broker is back (seen against the real broker when the stop fell in the
middle of a batch).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from compat_tests.clusters import BROKERS, READY_S, Cluster, create_topic, wait_routed_on
from compat_tests.scenario import Event, of, run_scenario
from gateway.testing.probe import wait_ready

logger = logging.getLogger(__name__)

LINE = "5.3.3"
TOPIC = "SparkNetRestart"
QUEUES = 2  # per broker
PER_TRIGGER = 4
FIRST, DURING, AFTER = 24, 8, 8
STEP_S = 120.0
# The first send to a real broker just restarted took over the client's 5 s default on a loaded
# 2-core machine (its JVM still warming up); a timed-out send is an error, not a retry.
SEND_TIMEOUT_MS = 20000
PROGRESS_S = 180.0  # a few micro-batches on a loaded 2-core machine with three servers running
# A query whose Python worker did not connect back within Spark's fixed 10 s on the loaded machine
# dies while INITIALIZING, before reading anything; it is started again from its checkpoint.
START_ATTEMPTS = 3
CONNECT_BACK_FAILURE = "Python worker failed to connect back"


class KeysStream:
    """The query copying ``uniq_key`` of TOPIC into Parquet under ``out``."""

    def __init__(self, session: SparkSession, namesrv: str, out: Path, checkpoint: Path) -> None:
        self.session, self.namesrv, self.out, self.checkpoint = session, namesrv, out, checkpoint
        self.query = self._start()
        self.rows_per_batch: dict[int, int] = {}

    def _start(self) -> StreamingQuery:
        return (
            self.session.readStream.format("rocketmq")
            .option("namesrvAddr", self.namesrv)
            .option("topics", TOPIC)
            .option("maxMessagesPerTrigger", str(PER_TRIGGER))
            .option("timeoutMs", "3000")
            .load()
            .select("uniq_key")
            .writeStream.format("parquet")
            .option("path", str(self.out))
            .option("checkpointLocation", str(self.checkpoint))
            .start()
        )

    def _restart_if_never_ran(self, attempt: int) -> None:
        """Start again a query that died initializing; raise anything else it died of."""
        err = self.query.exception()
        if err is None:
            return
        if (
            attempt >= START_ATTEMPTS
            or self.query.lastProgress is not None
            or CONNECT_BACK_FAILURE not in str(err)
        ):
            raise AssertionError(f"the query failed: {err}")
        logger.warning("query died initializing (attempt %d)", attempt)
        self.query = self._start()

    def rows_read(self) -> int:
        """Rows of every micro-batch so far (``recentProgress`` keeps the last 100 batches)."""
        for p in self.query.recentProgress:
            self.rows_per_batch[p["batchId"]] = p["numInputRows"]
        return sum(self.rows_per_batch.values())

    def written(self) -> list[str]:
        """The keys in the sink: the files of committed micro-batches (its ``_spark_metadata`` log)."""
        if not (self.out / "_spark_metadata").is_dir():
            return []
        return [r.uniq_key for r in self.session.read.parquet(str(self.out)).collect()]

    def wait_until(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + PROGRESS_S
        attempt = 1
        while not done():
            if not self.query.isActive:
                self._restart_if_never_ran(attempt)
                attempt += 1
            assert time.monotonic() < deadline, f"not within {PROGRESS_S} s: {what}"
            time.sleep(0.5)

    def finish(self) -> None:
        """Until the query has read everything sent so far."""
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self.query.processAllAvailable()
                break
            except StreamingQueryException:
                self._restart_if_never_ran(attempt)
        self.rows_read()

    def stop(self) -> None:
        self.query.stop()


def _produce(cluster: Cluster, home: Path, count: int, prefix: str) -> list[Event]:
    events = run_scenario(
        LINE, "produce", cluster.namesrv_addr, home, STEP_S, topic=TOPIC, count=count, mode="sync",
        keys_prefix=prefix, group="sparkRestartProducer", send_timeout_ms=SEND_TIMEOUT_MS,
    )  # fmt: skip
    assert not of(events, "send_error"), of(events, "send_error")[:3]
    sent = of(events, "sent")
    assert len(sent) == count
    return sent


def stream_across_a_broker_restart(session: SparkSession, cluster: Cluster, home: Path, work: Path) -> None:
    """The scenario of the module docstring; fails with what went wrong."""
    create_topic(cluster, TOPIC, home, QUEUES)
    first = _produce(cluster, home, FIRST, "first-")
    assert {e["brokerName"] for e in first} == set(BROKERS)
    stream = KeysStream(session, cluster.namesrv_addr, work / "out", work / "checkpoint")
    try:
        stream.finish()  # what was sent so far, in micro-batches of PER_TRIGGER
        assert sorted(stream.written()) == sorted(e["msgId"] for e in first)
        cluster.stop_broker("broker-b")
        began = time.monotonic()
        wait_routed_on(cluster, TOPIC, ("broker-a",))
        during = _produce(cluster, home, DURING, "during-")
        assert {e["brokerName"] for e in during} == {"broker-a"}
        keys = {e["msgId"] for e in during}
        stream.wait_until(lambda: keys <= set(stream.written()), "the messages sent while broker-b was down")
        down_s = time.monotonic() - began
        cluster.start_broker("broker-b")
        wait_ready(cluster.namesrv_addr, READY_S, broker_name="broker-b")
        wait_routed_on(cluster, TOPIC, BROKERS)
        after = _produce(cluster, home, AFTER, "after-")
        assert {e["brokerName"] for e in after} == set(BROKERS)
        stream.finish()
    finally:
        stream.stop()
    sent = sorted(e["msgId"] for e in [*first, *during, *after])
    assert sorted(stream.written()) == sent  # every message once: none lost, none repeated
    assert max(stream.rows_per_batch.values()) <= PER_TRIGGER
    print(
        f"{len(sent)} messages in {len(stream.rows_per_batch)} micro-batches; the messages sent while "
        f"broker-b was down were in the sink {down_s:.1f} s after it stopped"
    )
