"""The measurements: a raw sequential read of the commit-log files, and Spark scans of the store.

Every case reads the same bytes: the commit log up to the end of the last record
(:attr:`bench.spark.store.BuiltStore.data_bytes`). MB/s is those bytes (10^6) per second of wall
time; rows/s is messages per second. Page cache: with ``cold=True`` (root only) the kernel's clean
pages are dropped first (``echo 1 > /proc/sys/vm/drop_caches``), so the read comes from the disk;
otherwise the files are in the page cache (the build just wrote them, 24 GiB of RAM hold them).

Spark cases (``local[N]``, one Python worker per core, Arrow batches):

* ``count``: ``df.count()``;
* ``scan``: ``df.write.format("noop")``: every column of every row produced and handed to the JVM;
* ``reader``: no Spark at all, the reader's partitions decoded one after the other in this
  process: what one Python worker can do, the bound of each Spark task.

each with ``includeBody`` false and true.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

RAW_BUFFER_BYTES = 8 * 1024 * 1024  # one readinto per 8 MiB: large enough that syscalls do not count
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


@dataclass
class Measure:
    case: str
    include_body: bool | None
    cache: str  # "cold" (page cache dropped before) or "warm"
    seconds: float
    rows: int

    def row(self, data_bytes: int) -> dict[str, Any]:
        return {
            "case": self.case,
            "include_body": self.include_body,
            "cache": self.cache,
            "seconds": self.seconds,
            "rows": self.rows,
            "rows_per_s": self.rows / self.seconds,
            "mb_per_s": data_bytes / 1e6 / self.seconds,
        }


def can_drop_caches() -> bool:
    return os.geteuid() == 0 and os.access(DROP_CACHES, os.W_OK)


def drop_caches() -> None:
    """Write back dirty pages, then drop the clean page cache (the whole machine's: costs others
    a re-read, nothing more)."""
    os.sync()
    DROP_CACHES.write_text("1\n")


def raw_read(segments: list[Path], data_bytes: int, cold: bool) -> Measure:
    """Read the commit-log files in order up to ``data_bytes`` with 8 MiB ``readinto`` calls."""
    if cold:
        drop_caches()
    buf = bytearray(RAW_BUFFER_BYTES)
    view = memoryview(buf)
    left = data_bytes
    start = time.perf_counter()
    for seg in segments:
        if left <= 0:
            break
        with seg.open("rb", buffering=0) as f:
            while left > 0:
                n = f.readinto(view[: min(RAW_BUFFER_BYTES, left)])
                if not n:
                    break
                left -= n
    seconds = time.perf_counter() - start
    if left > 0:
        raise RuntimeError(f"commit log shorter than expected by {left} bytes")
    return Measure("raw read", None, "cold" if cold else "warm", seconds, 0)


def spark_session(cores: int) -> Any:
    """A ``local[cores]`` session with the readers registered (imports PySpark lazily)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers import this environment's packages
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    import spark

    session = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("rocketmq-spark-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    spark.register(session)
    return session


def spark_case(session: Any, root: Path, case: str, include_body: bool, cold: bool) -> Measure:
    """``count`` or ``scan`` (noop write) of the whole store through Spark."""
    df = session.read.format("rocketmq").option("includeBody", str(include_body).lower()).load(str(root))
    if cold:
        drop_caches()
    start = time.perf_counter()
    if case == "count":
        rows = df.count()
    elif case == "scan":
        df.write.format("noop").mode("overwrite").save()
        rows = -1  # the noop sink does not count; filled in from the count case by the caller
    else:
        raise ValueError(case)
    return Measure(case, include_body, "cold" if cold else "warm", time.perf_counter() - start, rows)


def warm_up_reader(root: Path) -> None:
    """Import the reader and decode the first batch of the first partition (not timed)."""
    from spark.options import parse_options
    from spark.source import MESSAGE_SCHEMA, StoreReader

    reader = StoreReader([str(root)], parse_options({}), MESSAGE_SCHEMA)
    next(iter(reader.read(reader.partitions()[0])), None)


def reader_case(root: Path, include_body: bool, cold: bool) -> Measure:
    """The reader's partitions decoded in this process, one after the other (no Spark, one core)."""
    from spark.options import parse_options
    from spark.source import MESSAGE_SCHEMA, StoreReader

    options = parse_options({"includeBody": str(include_body).lower()})
    reader = StoreReader([str(root)], options, MESSAGE_SCHEMA)
    if cold:
        drop_caches()
    start = time.perf_counter()
    rows = 0
    for part in reader.partitions():
        for batch in reader.read(part):
            rows += batch.num_rows
    return Measure("reader", include_body, "cold" if cold else "warm", time.perf_counter() - start, rows)
