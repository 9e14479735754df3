"""Per topic and minute: message count, stored bytes and p50/p99 end-to-end latency, as Parquet.

Usage::

    python -m spark.examples.topic_latency STORE_DIR OUT_DIR [--master local[*]] [--topics A,B]

``STORE_DIR`` is a broker's store root (``rmq-gateway standalone`` writes ``./data`` by default; an
Apache RocketMQ broker's ``storePathRootDir``), or several joined by commas; it is only read, so the
broker may keep running (the reader stops at the last whole record). ``OUT_DIR`` is replaced.

Columns (:data:`COLUMNS`): ``topic``; ``minute``, the store time truncated to the minute (UTC
epoch arithmetic, so independent of the session time zone); ``messages``; ``bytes``, the sum of the
stored record sizes (``size``: what the messages occupy in the commit log, headers included);
``p50_latency_ms`` and ``p99_latency_ms``, exact percentiles (linear interpolation, Spark's
``percentile``) of ``store_timestamp - born_timestamp`` in milliseconds. Born time comes from the
producer's clock, so a skewed client shows up as a shifted (even negative) latency. Bodies are not
read (``includeBody=false``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import spark

logger = logging.getLogger(__name__)

COLUMNS = ("topic", "minute", "messages", "bytes", "p50_latency_ms", "p99_latency_ms")
MINUTE_MS = 60_000


def latency_frame(messages: DataFrame) -> DataFrame:
    """The statistics of a ``format("rocketmq")`` DataFrame (needs topic, size and both timestamps)."""
    timed = messages.selectExpr(
        "topic",
        "size",
        f"timestamp_millis(unix_millis(store_timestamp) div {MINUTE_MS} * {MINUTE_MS}) AS minute",
        "unix_millis(store_timestamp) - unix_millis(born_timestamp) AS latency_ms",
    )
    return (
        timed.groupBy("topic", "minute")
        .agg(
            F.count("*").alias("messages"),
            F.sum("size").alias("bytes"),
            F.percentile("latency_ms", F.lit(0.5)).alias("p50_latency_ms"),
            F.percentile("latency_ms", F.lit(0.99)).alias("p99_latency_ms"),
        )
        .select(*COLUMNS)
        .orderBy("topic", "minute")
    )


def run_job(session: SparkSession, store_dirs: str, out_dir: str, topics: str | None = None) -> int:
    """Read ``store_dirs`` (comma-separated), write the statistics to ``out_dir`` as Parquet
    (replacing it) and return the number of rows written."""
    spark.register(session)
    reader = session.read.format("rocketmq").option("includeBody", "false")
    if topics:
        reader = reader.option("topics", topics)
    paths = [p for p in store_dirs.split(",") if p]
    messages = reader.load(paths[0] if len(paths) == 1 else paths)
    table = latency_frame(messages).cache()
    table.write.mode("overwrite").parquet(out_dir)
    rows = table.count()
    table.unpersist()
    logger.info("wrote %d rows to %s", rows, out_dir)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spark.examples.topic_latency", description=__doc__.split("\n")[0]
    )
    parser.add_argument("store_dir", help="store root directory (several: comma-separated)")
    parser.add_argument("out_dir", help="Parquet output directory (replaced)")
    parser.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    parser.add_argument("--topics", default=None, help="only these topics (comma-separated)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # Executors' Python workers must import this environment's packages (spark/, codec/, store/).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = SparkSession.builder.master(args.master).appName("rocketmq-topic-latency").getOrCreate()
    try:
        rows = run_job(session, args.store_dir, args.out_dir, args.topics)
    finally:
        session.stop()
    print(f"{rows} rows (topic x minute) written to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
