"""The driver of the standalone-cluster test, run as its own process (one SparkContext per process):
``python -m tests.spark.cluster_job MASTER_URL STORE...`` (file mode) or
``python -m tests.spark.cluster_job MASTER_URL --namesrv ADDR TOPIC`` (network mode: the
executors pull from the brokers) prints one JSON line of results.

The read is planned once: the partition count comes from ``spark_partition_id()`` in the same query
(``df.rdd.getNumPartitions()`` would plan it a second time, in another Python process).
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import functions as F

import spark
from spark.testing import loopback_builder

EXECUTOR_MEMORY = "512m"  # each worker offers 1g; the driver JVM stays outside it
CORES = 2  # one executor of one core on each of the two workers
ROWS_PER_PARTITION = "5"  # network mode: several partitions per queue, spread over both executors
FAST_START_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def main() -> None:
    master, args = sys.argv[1], sys.argv[2:]
    session = (
        loopback_builder(master, "rocketmq-gateway-cluster-test")
        .config("spark.executor.memory", EXECUTOR_MEMORY)
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", str(CORES))
        # Start the job once both executors registered, not on the first one (standalone's default).
        .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
        .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "150s")
        .config("spark.executor.extraJavaOptions", FAST_START_JVM)
        .config("spark.driver.extraJavaOptions", FAST_START_JVM)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    spark.register(session)
    if args[0] == "--namesrv":
        reader = session.read.format("rocketmq").option("namesrvAddr", args[1]).option("topics", args[2])
        df = reader.option("maxRowsPerPartition", ROWS_PER_PARTITION).load()
    else:
        df = session.read.format("rocketmq").option("maxBytesPerPartition", "16384").load(args)
    rows = df.select(
        "broker", "uniq_key", F.sha2("body", 256).alias("digest"), F.spark_partition_id().alias("part")
    ).collect()
    jsc = session.sparkContext._jsc  # executors have no Python API
    infos = jsc.sc().statusTracker().getExecutorInfos()
    managers = [f"{info.host()}:{info.port()}" for info in infos]  # the driver's and the executors'
    result = {
        "partitions": len({r["part"] for r in rows}),
        "rows": sorted([r["broker"], r["uniq_key"], r["digest"]] for r in rows),
        "executors": len(managers) - 1,  # every block manager but the driver's
        "executor_hosts": sorted({m.rsplit(":", 1)[0] for m in managers}),
        "master": session.sparkContext.master,
    }
    print(json.dumps(result))
    session.stop()


if __name__ == "__main__":
    main()
