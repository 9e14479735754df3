"""Waiting for a quiet machine before a measured window.

A window is publishable when it starts on a quiet machine: a 1-minute load average under
``--max-load`` (1.0) and other processes using no more than ``--max-other-cores`` (0.25 of a core).
Back to back, the benchmark's own previous window (its driver JVM, the servers under load) keeps
the 1-minute load over 1 for the better part of a minute: an exponential average over 60 s falls
from 2 to 1 in ~42 s and from 4 to 1 in ~83 s. So before each measured window (after any unmeasured
filling of a backlog, before the driver's warm-up) :func:`wait_until_quiet` polls /proc/loadavg
once a :data:`POLL_S` and, over each poll interval, the cores other processes kept busy (the
machine's busy time from /proc/stat less that of this process and every process it started,
servers included) until both are under their thresholds or ``--settle-timeout`` passes. The idle
servers between windows add next to nothing to either reading.

:class:`Settle` keeps every sample, so the judgement of the window (calibration.judge) is a pure
function of the readings.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from bench.side_by_side.calibration import Settle, Thresholds, own_processes, system_load
from bench.side_by_side.servers import CLOCK_TICKS, machine_busy_seconds

POLL_S = 1.0  # between two load readings, and the span of one other-process CPU sample
SETTLE_TIMEOUT_S = 150.0  # --settle-timeout: from a 1-minute load of ~12 to under 1 on an idle machine


def is_quiet(load: float, other_cores: float | None, thresholds: Thresholds) -> bool:
    """Under both thresholds: the load below ``max_load``, and the others' cores over the last
    interval (when there was one) at most ``max_other_cores``."""
    return load < thresholds.max_load and (other_cores is None or other_cores <= thresholds.max_other_cores)


def _process_cpu_s(pids: list[int]) -> dict[int, float]:
    """utime + stime of each of ``pids`` still alive, in seconds."""
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                text = f.read()
            fields = text[text.rindex(")") + 2 :].split()
            out[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return out


class OtherCpu:
    """Cores used by processes other than this one and its descendants (and ``extra_pids``) between
    two calls of :meth:`sample`; only processes alive at both ends count as ours."""

    def __init__(self, extra_pids: list[int] | None = None) -> None:
        self._extra = list(extra_pids or [])
        self._last = self._read()

    def _read(self) -> tuple[float, float, dict[int, float]]:
        pids = sorted(set(own_processes(os.getpid())) | set(self._extra))
        return time.monotonic(), machine_busy_seconds(), _process_cpu_s(pids)

    def sample(self) -> float:
        """The others' cores since the previous call (or since construction)."""
        (t0, busy0, own0), (t1, busy1, own1) = self._last, self._read()
        self._last = (t1, busy1, own1)
        own = sum(own1[pid] - own0[pid] for pid in own1.keys() & own0.keys())
        return max(0.0, (busy1 - busy0 - own) / (t1 - t0)) if t1 > t0 else 0.0


def wait_until_quiet(
    thresholds: Thresholds,
    timeout_s: float,
    other_cpu: Callable[[], float],
    read_load: Callable[[], float] = system_load,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    poll_s: float = POLL_S,
) -> Settle:
    """Poll the load (and, after each ``poll_s``, ``other_cpu()``: the others' cores since its
    previous call) until :func:`is_quiet` with a CPU sample taken, or ``timeout_s`` has passed. A
    timeout of 0 reads the load once and judges by it alone."""
    began = clock()
    deadline = began + timeout_s
    loads = [read_load()]
    others: list[float] = []
    while True:
        last = others[-1] if others else None
        if (last is not None and is_quiet(loads[-1], last, thresholds)) or clock() >= deadline:
            break
        sleep(max(0.0, min(poll_s, deadline - clock())))
        others.append(other_cpu())
        loads.append(read_load())
    last = others[-1] if others else None
    return Settle(tuple(loads), tuple(others), clock() - began, not is_quiet(loads[-1], last, thresholds))
