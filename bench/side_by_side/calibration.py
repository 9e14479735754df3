"""Is the machine quiet enough for a measured window's figures to be published?

Two readings per window, both from /proc, and a mark when either is over its threshold:

* **the others' 1-minute load before the window**: the kernel's 1-minute load average
  (/proc/loadavg) at the driver's ``MARK start``, less the benchmark's own share of it. The kernel's
  figure counts every runnable (or uninterruptible) thread of the machine, ours included: back to
  back, the previous case's server and driver alone would lift it over 1 on a quiet machine. So
  :class:`LoadWatch` counts, once a second, the runnable threads of this process and of every
  process it started (servers, drivers) and averages them as the kernel does (an exponential
  average over one minute); the difference is what other processes put on the run queue.
  Processes outside this PID namespace are invisible to the count but not to /proc/loadavg, which
  is why the subtraction, not a count of the others, is used.
* **the other processes' CPU over the window**: the machine's busy time (/proc/stat) less the
  servers' and the driver's (``other_cores`` of bench.side_by_side.driver), in cores.

Since a back-to-back window's 1-minute load still carries the benchmark's own preceding windows,
every case first waits for the machine to settle (settle.py): the load then judged is the
machine's whole 1-minute load at the end of that wait, before the case's driver starts, and a wait
that ended at ``--settle-timeout`` with the load still at ``--max-load`` or more marks the window.
The others' share at the window's start is still recorded, and judged only for a window measured
without a wait. :func:`judge` is the rule, a pure function of the readings.

A row over either threshold carries ``loaded`` (the reasons) and is shown as :data:`LOADED`.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOADED = "LOADED: not a publishable figure"
SAMPLE_S = 1.0  # how often the benchmark's own runnable threads are counted
LOAD_WINDOW_S = 60.0  # the kernel's 1-minute load average
RUNNABLE_STATES = ("R", "D")  # what the kernel's load average counts (running, uninterruptible)


@dataclass(frozen=True)
class Thresholds:
    """Above either, a window's row is marked :data:`LOADED`."""

    max_load: float = 1.0  # the others' 1-minute load before the window
    max_other_cores: float = 0.25  # cores other processes kept busy during the window


def system_load() -> float:
    """The kernel's 1-minute load average (first field of /proc/loadavg)."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def _stat_fields(path: str) -> list[str]:
    """The fields of a /proc stat file after the command name (which may hold spaces)."""
    with open(path) as f:
        text = f.read()
    return text[text.rindex(")") + 2 :].split()


def own_processes(root: int) -> list[int]:
    """``root`` and every live process descended from it (parents from /proc/PID/stat)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(_stat_fields(f"/proc/{entry}/stat")[1])
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def runnable_threads(pids: list[int], skip_tid: int) -> int:
    """Threads of ``pids`` running or waiting to run (or in uninterruptible sleep), but ``skip_tid``."""
    count = 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            if int(tid) == skip_tid:
                continue
            try:
                if _stat_fields(f"/proc/{pid}/task/{tid}/stat")[0] in RUNNABLE_STATES:
                    count += 1
            except (OSError, IndexError):
                continue
    return count


class LoadWatch:
    """A thread that keeps the benchmark's own share of the 1-minute load average: the runnable
    threads of this process and its descendants, counted every :data:`SAMPLE_S` and averaged as
    the kernel averages its count. ``own_load_at(t)`` answers for a ``time.perf_counter()`` time."""

    def __init__(self, sample_s: float = SAMPLE_S) -> None:
        self._sample_s = sample_s
        self._decay = math.exp(-sample_s / LOAD_WINDOW_S)
        self._samples: list[tuple[float, float]] = []  # (perf_counter, own load)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        me, own = os.getpid(), 0.0
        tid = threading.get_native_id()
        while True:
            runnable = runnable_threads(own_processes(me), skip_tid=tid)
            own = own * self._decay + runnable * (1 - self._decay)
            with self._lock:
                self._samples.append((time.perf_counter(), own))
            if self._stop.wait(self._sample_s):
                return

    def own_load_at(self, at: float) -> float:
        """The own load of the last sample at or before ``at`` (0 before the first)."""
        with self._lock:
            earlier = [load for t, load in self._samples if t <= at]
        return earlier[-1] if earlier else 0.0


@dataclass(frozen=True)
class Settle:
    """The readings of one wait: the machine's 1-minute load at each poll, the cores other
    processes used over each poll interval (one fewer: the first poll has no interval), the
    seconds waited and whether the deadline ended the wait."""

    loads: tuple[float, ...]
    other_cores: tuple[float, ...]
    waited_s: float
    timed_out: bool

    @property
    def load(self) -> float:
        """The load the window starts from: the last reading."""
        return self.loads[-1]

    @property
    def last_other_cores(self) -> float | None:
        return self.other_cores[-1] if self.other_cores else None

    def fields(self) -> dict[str, float | bool | None]:
        """The readings a result row keeps (JSON values)."""
        return {
            "load_before_case": self.load,
            "other_cores_before_case": self.last_other_cores,
            "settle_waited_s": round(self.waited_s, 1),
            "settle_timed_out": self.timed_out,
        }

    def describe(self) -> str:
        """One line for the log, e.g. ``settled in 42 s: load 0.93, others 0.01 cores``."""
        others = self.last_other_cores
        reading = f"load {self.load:.2f}" + (f", others {others:.2f} cores" if others is not None else "")
        if self.timed_out:
            return f"NOT settled after {self.waited_s:.0f} s: {reading}"
        return f"settled in {self.waited_s:.0f} s: {reading}"


def judge(
    settle: Settle | None,
    others_load_start: float | None,
    machine_load_start: float | None,
    other_cores: float | None,
    thresholds: Thresholds,
) -> list[str]:
    """Why a window is not publishable (empty: it is), from its readings alone: the settle wait
    before its case (its load samples and other-process CPU), or without one the others' 1-minute
    load at its start (of a machine load of ``machine_load_start``), and the cores other processes
    used over it."""
    reasons = []
    if settle is not None:
        if settle.timed_out and settle.load >= thresholds.max_load:
            reasons.append(
                f"1-minute load {settle.load:.2f} before the case, still >= {thresholds.max_load} "
                f"after waiting {settle.waited_s:.0f} s"
            )
        before = settle.last_other_cores
        if settle.timed_out and before is not None and before > thresholds.max_other_cores:
            reasons.append(
                f"other processes used {before:.2f} cores before the case, still > "
                f"{thresholds.max_other_cores} after waiting {settle.waited_s:.0f} s"
            )
    elif others_load_start is not None and others_load_start > thresholds.max_load:
        reasons.append(
            f"others' 1-minute load {others_load_start:.2f} before the window "
            f"(machine {machine_load_start or 0.0:.2f}) > {thresholds.max_load}"
        )
    if other_cores is not None and other_cores > thresholds.max_other_cores:
        reasons.append(
            f"other processes used {other_cores:.2f} cores in the window > {thresholds.max_other_cores}"
        )
    return reasons


def calibrate(metrics: dict[str, Any], watch: LoadWatch | None, thresholds: Thresholds) -> None:
    """Turn a driver run's window readings (``window_at``, ``load_1m_start``, ``load_1m_end``,
    ``other_cores``, and ``settle``: the wait before the case, when there was one) into the others'
    load before and after it and the settle readings, and add ``loaded`` (the reasons, by
    :func:`judge`) when a threshold is exceeded. Rows without a window (start-up, memory) are left
    as they are."""
    window = metrics.pop("window_at", None)
    settle: Settle | None = metrics.pop("settle", None)
    if window is None:
        return
    start, end = window
    if metrics.get("load_1m_start") is not None and metrics.get("load_1m_end") is not None:
        own_start = watch.own_load_at(start) if watch else 0.0
        own_end = watch.own_load_at(end) if watch else 0.0
        metrics["others_load_start"] = max(0.0, metrics["load_1m_start"] - own_start)
        metrics["others_load_end"] = max(0.0, metrics["load_1m_end"] - own_end)
    if settle is not None:
        metrics.update(settle.fields())
    reasons = judge(
        settle,
        metrics.get("others_load_start"),
        metrics.get("load_1m_start"),
        metrics.get("other_cores"),
        thresholds,
    )
    if reasons:
        metrics["loaded"] = reasons
