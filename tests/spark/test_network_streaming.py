"""Streaming in network mode (:mod:`spark.network` / ``spark.netstream``) against our gateway:
``maxMessagesPerTrigger``, exactly once across a restart from the checkpoint, a queue added while
the query was down, and a cluster that is gone failing the query with one clear line."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from gateway.testing.inprocess import InProcessGateway
from spark.netstream import budget
from spark.remote import Connection
from tests.spark.netdata import create_topic, send, wait_route
from tests.spark.test_streaming import CONNECT_BACK_FAILURE, START_ATTEMPTS, written

logger = logging.getLogger(__name__)
TOPIC = "SparkNetStream"


class NetStream:
    """A query copying the stream's keys into Parquet under ``out`` (an exactly-once sink)."""

    def __init__(self, session: SparkSession, namesrv: str, out: Path, checkpoint: Path) -> None:
        self.session, self.namesrv, self.out, self.checkpoint = session, namesrv, out, checkpoint
        self.query: StreamingQuery | None = None

    def start(self) -> None:
        self.query = (
            self.session.readStream.format("rocketmq")
            .option("namesrvAddr", self.namesrv)
            .option("topics", TOPIC)
            .option("maxMessagesPerTrigger", "4")
            .option("timeoutMs", "3000")
            .load()
            .select("uniq_key", "queue_id", "queue_offset")
            .writeStream.format("parquet")
            .option("path", str(self.out))
            .option("checkpointLocation", str(self.checkpoint))
            .start()
        )

    def run(self) -> None:
        """Start, process everything available (again after a worker that failed to start), stop."""
        self.start()
        try:
            for attempt in range(1, START_ATTEMPTS + 1):
                assert self.query is not None
                try:
                    self.query.processAllAvailable()
                    return
                except StreamingQueryException as err:
                    never_ran = self.query.lastProgress is None
                    if attempt == START_ATTEMPTS or not never_ran or CONNECT_BACK_FAILURE not in str(err):
                        raise
                logger.warning("query died initializing (attempt %d)", attempt)
                self.start()
        finally:
            assert self.query is not None
            self.rows_per_batch = [p["numInputRows"] for p in self.query.recentProgress]
            self.query.stop()


def test_stream_exactly_once_new_queue_and_cluster_gone(session: SparkSession, tmp_path: Path) -> None:
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    gateway = InProcessGateway(tmp_path / "store", grpc_port=None).start()
    try:
        create_topic(gateway.broker_addr, TOPIC, 1)
        wait_route(gateway.namesrv_addr, TOPIC, 1)
        with Connection(gateway.broker_addr) as conn:
            keys = [send(conn, "broker-a", TOPIC, 0, b"x", None, None).uniq_key for _ in range(6)]
        stream = NetStream(session, gateway.namesrv_addr, out, checkpoint)
        stream.run()
        assert written(session, out) == sorted(keys)
        assert max(stream.rows_per_batch) <= 4  # maxMessagesPerTrigger

        create_topic(gateway.broker_addr, TOPIC, 2)  # a second queue while the query is down
        wait_route(gateway.namesrv_addr, TOPIC, 2)
        with Connection(gateway.broker_addr) as conn:
            keys += [send(conn, "broker-a", TOPIC, i % 2, b"y", None, None).uniq_key for i in range(6)]
        stream.run()  # from the checkpoint
        assert written(session, out) == sorted(keys)  # every message once: none skipped, none repeated
    finally:
        gateway.stop()

    began = time.monotonic()
    with pytest.raises(StreamingQueryException, match=r"rocketmq: cannot connect to 127\.0\.0\.1:\d+"):
        stream.run()
    assert time.monotonic() - began < 60  # retried within a bound, then failed
    assert written(session, out) == sorted(keys)


def test_budget_spreads_the_limit_round_robin() -> None:
    got = budget([("T", "b:0", 10), ("T", "b:1", 1), ("T", "b:2", 0), ("T", "b:3", 10)], 7)
    assert got == {("T", "b:0"): 3, ("T", "b:1"): 1, ("T", "b:2"): 0, ("T", "b:3"): 3}
    assert sum(got.values()) <= 7
    assert budget([("T", "b:0", 2)], 100) == {("T", "b:0"): 2}
