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

For the Spark cases the CPU time of the JVM (``local`` mode: driver and executor) and of the
Python workers it forks is read from ``/proc`` (Linux) around the action: where each message's CPU
goes, and whether the run got the cores it asked for (a shared machine may not give them).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

RAW_BUFFER_BYTES = 8 * 1024 * 1024  # one readinto per 8 MiB: large enough that syscalls do not count
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc/PID/stat time unit


@dataclass
class Measure:
    case: str
    include_body: bool | None
    cache: str  # "cold" (page cache dropped before) or "warm"
    seconds: float
    rows: int
    jvm_cpu_s: float | None = None
    python_cpu_s: float | None = None

    def row(self, data_bytes: int) -> dict[str, Any]:
        return {
            "case": self.case,
            "include_body": self.include_body,
            "cache": self.cache,
            "seconds": self.seconds,
            "rows": self.rows,
            "rows_per_s": self.rows / self.seconds,
            "mb_per_s": data_bytes / 1e6 / self.seconds,
            "jvm_cpu_s": self.jvm_cpu_s,
            "python_cpu_s": self.python_cpu_s,
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
    from spark.testing import local_session

    return local_session(f"local[{cores}]", "rocketmq-spark-bench", driver_memory="2g")


def _cpu_s(pid: int) -> float:
    """utime + stime of ``pid`` and of its waited-for children (``/proc/PID/stat`` fields 14-17)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / CLOCK_TICKS


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def process_tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds of ``root`` and every descendant still alive (empty when ``/proc`` lacks them)."""
    cpu: dict[int, float] = {}
    stack = [root]
    while stack:
        pid = stack.pop()
        try:
            cpu[pid] = _cpu_s(pid)
            stack += _children(pid)
        except OSError:
            continue
    return cpu


def jvm_pid(session: Any) -> int:
    """The JVM PySpark launched (``spark-submit`` execs ``java``, so the gateway process is the JVM)."""
    return int(session.sparkContext._gateway.proc.pid)


def spark_case(session: Any, root: Path, case: str, include_body: bool, cold: bool) -> Measure:
    """``count`` or ``scan`` (noop write) of the whole store through Spark."""
    df = session.read.format("rocketmq").option("includeBody", str(include_body).lower()).load(str(root))
    if cold:
        drop_caches()
    jvm = jvm_pid(session)
    before = process_tree_cpu(jvm)
    start = time.perf_counter()
    if case == "count":
        rows = df.count()
    elif case == "scan":
        df.write.format("noop").mode("overwrite").save()
        rows = -1  # the noop sink does not count; the caller knows how many messages there are
    else:
        raise ValueError(case)
    seconds = time.perf_counter() - start
    measure = Measure(case, include_body, "cold" if cold else "warm", seconds, rows)
    add_cpu(measure, jvm, before, process_tree_cpu(jvm))
    return measure


def add_cpu(measure: Measure, jvm: int, before: dict[int, float], after: dict[int, float]) -> None:
    """Set the JVM's and its Python workers' CPU seconds between two :func:`process_tree_cpu`."""
    if jvm in before and jvm in after:
        # A worker that exited meanwhile moved its CPU into its parent's (waited-for) children time.
        measure.jvm_cpu_s = after[jvm] - before[jvm]
        measure.python_cpu_s = sum(v - before.get(pid, 0.0) for pid, v in after.items() if pid != jvm)


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
