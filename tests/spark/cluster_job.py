"""The driver of the standalone-cluster test, run as its own process (one SparkContext per process):
``python -m tests.spark.cluster_job MASTER_URL STORE...`` prints one JSON line of results."""

from __future__ import annotations

import json
import sys

from pyspark.sql import functions as F

import spark
from tests.spark.conftest import session_builder


def main() -> None:
    master, stores = sys.argv[1], sys.argv[2:]
    session = (
        session_builder(master)
        .config("spark.executor.memory", "512m")
        .config("spark.cores.max", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    spark.register(session)
    df = session.read.format("rocketmq").option("maxBytesPerPartition", "16384").load(stores)
    rows = df.select("broker", "uniq_key", F.sha2("body", 256).alias("digest")).collect()
    executors = session.sparkContext._jsc.sc().getExecutorMemoryStatus().size()  # noqa: SLF001 - no public API
    print(json.dumps({
        "partitions": df.rdd.getNumPartitions(),
        "rows": sorted([r["broker"], r["uniq_key"], r["digest"]] for r in rows),
        "executors": executors,
        "master": session.sparkContext.master,
    }))  # fmt: skip
    session.stop()


if __name__ == "__main__":
    main()
