"""What :mod:`bench.container` reads of the machine and its own leftovers (Linux ``/proc``)."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import statistics
import time
from pathlib import Path
from typing import Any

STOP_WAIT_S = 10.0


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far (the ``cpu`` line of /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def machine() -> dict[str, Any]:
    """Cores, load average and the CPU counters now."""
    busy, total = cpu_jiffies()
    return {
        "cores": os.cpu_count() or 1,
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
        "cpu_busy": busy,
        "cpu_total": total,
    }


def busy_cores(before: dict[str, Any], after: dict[str, Any]) -> float:
    """Cores kept busy on average between two :func:`machine` snapshots (every process)."""
    total = after["cpu_total"] - before["cpu_total"]
    if total <= 0:
        return 0.0
    return float(before["cores"] * (after["cpu_busy"] - before["cpu_busy"]) / total)


def summary(times: list[float]) -> dict[str, Any]:
    """Median, p95 (nearest rank), min, max and count of ``times`` (seconds)."""
    ordered = sorted(times)
    rank = max(1, math.ceil(0.95 * len(ordered)))
    return {
        "median": statistics.median(ordered),
        "p95": ordered[rank - 1],
        "min": ordered[0],
        "max": ordered[-1],
        "n": len(ordered),
    }


def _cwd_under(pid: int, root: Path) -> bool:
    try:
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return False
    return cwd == root or root in cwd.parents


def kill_under(root: Path) -> int:
    """Stop every process whose working directory is in ``root`` (what a clone's ``scripts/run``
    left running: its detached hot-path compile): SIGTERM, then SIGKILL after STOP_WAIT_S.
    Returns how many there were."""
    root = root.resolve()
    me = os.getpid()
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me and _cwd_under(int(p), root)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.1)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(pids)
