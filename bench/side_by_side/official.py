"""RocketMQ's own benchmark programs as a driver: ``org.apache.rocketmq.example.benchmark.Producer``
and ``BatchProducer`` of tag rocketmq-all-5.3.3, built by bench/official/build.sh from a git mirror
of apache/rocketmq (they are not published on Maven Central).

The programs print nothing but their own statistics, so they are measured from outside: every
second (they run with ``-ri 1000``) each prints one line such as ::

    Current Time: 2026-11-26 02:18:16,728 | Send TPS: 8012 | Max RT(ms): 27
        | Average RT(ms):   1.943 | Send Failed: 0 | Response Failed: 0

(printed as one line), whose rate covers the ten one-second snapshots they keep: the last 9
seconds. This module reads the lines as they come and snapshots the server processes' CPU time
(/proc) at each one, skips ``warmup`` lines after the first, then takes the line printed
:data:`WINDOW_LINES` lines later: its rate covers the seconds between the two snapshots, so the
server CPU per message is that CPU over the rate times those seconds, as the rows of our own driver
(driver.py) measure it. The program is then stopped (they run until killed).

The window is calibrated as our driver's are: the case waits for a quiet machine before starting
the program (settle.py); the ten seconds before the first line and the ``warmup`` lines after it
warm both servers up; the machine's load and the cores other processes used between the two
snapshots are kept, and calibration.calibrate marks the row LOADED like any other.
"""

from __future__ import annotations

import functools
import math
import os
import re
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.side_by_side.driver import DriverError, Snapshot
from bench.side_by_side.servers import die_with_parent

BUILD_SCRIPT = Path(__file__).resolve().parents[1] / "official" / "build.sh"
PACKAGE = "org.apache.rocketmq.example.benchmark"
WINDOW_LINES = 9  # a printed rate spans its 10 snapshots one second apart: the last 9 lines' seconds
REPORT_INTERVAL_MS = 1000  # -ri: one line per second instead of every 10 s
RUN_TIMEOUT_S = 180.0  # one program run: JVM start, 10 s to its first line, warm-up, window
#: The programs' heap. ``Producer -y true`` keeps up to 10,000 sends queued for the client's async
#: executor and up to 65,535 in flight (the client's async semaphore), 1 KiB bodies each: more than
#: our Java driver's 512 MiB holds once a broker answers slower than it submits (every client thread
#: then died of OutOfMemoryError before the first rate line, on both servers).
OFFICIAL_HEAP = "-Xmx2g"
FAILURE_FIELDS = ("Send Failed", "Response Failed", "Send Message Failed", "Consume Fail")
# "Send TPS" is requests/s; BatchProducer adds "Send MPS" (messages/s), the figure to compare.
FIELD = re.compile(r"\s*(?P<key>[A-Za-z() 0-9]+?)\s*:\s*(?P<value>-?[0-9.]+)\s*$")


@dataclass(frozen=True)
class TpsLine:
    """One statistics line of Producer / BatchProducer / Consumer, as numbers."""

    tps: float  # Send TPS (requests/s) or Consume TPS
    msgs_per_s: float  # Send MPS for a batch, else the TPS
    avg_rt_ms: float | None
    max_rt_ms: float | None
    failed: int  # Send Failed (+ Response Failed / Send Message Failed), cumulative since start


def parse_tps_line(line: str) -> TpsLine | None:
    """The numbers of a ``Current Time: ... | Send TPS: ...`` (or ``[Complete] ...``, or a
    Consumer's ``Consume TPS``) line; None for any other line."""
    if "TPS:" not in line:
        return None
    fields: dict[str, float] = {}
    for part in line.split("|"):
        match = FIELD.match(part)
        if match:
            fields[match["key"]] = float(match["value"])
    tps = fields.get("Send TPS", fields.get("Consume TPS"))
    if tps is None:
        return None
    failed = sum(int(fields.get(k, 0)) for k in FAILURE_FIELDS)
    return TpsLine(
        tps=tps,
        msgs_per_s=fields.get("Send MPS", tps),
        avg_rt_ms=fields.get("Average RT(ms)", fields.get("AVG(S2C) RT(ms)")),
        max_rt_ms=fields.get("Max RT(ms)", fields.get("MAX(S2C) RT(ms)")),
        failed=int(failed),
    )


@functools.cache
def build_official() -> Path:
    """Build the programs (skipped when cached); their cache directory. Raises
    :class:`DriverError` with the script's one-line reason when it fails (no mirror, no Maven)."""
    done = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise DriverError(reason)
    return Path(done.stdout.strip().splitlines()[-1])


@dataclass
class OfficialRun:
    """The line ending the window, the snapshots at both ends and every line, as printed."""

    first: TpsLine
    last: TpsLine
    start: Snapshot
    end: Snapshot
    lines: list[str]

    def metrics(self) -> dict[str, Any]:
        wall = self.end.at - self.start.at
        messages = self.last.msgs_per_s * wall
        server = self.end.server_cpu_s - self.start.server_cpu_s
        busy = self.end.machine_busy_s - self.start.machine_busy_s
        driver = self.end.driver_cpu_s - self.start.driver_cpu_s
        return {
            "msgs_per_s": self.last.msgs_per_s,
            "requests_per_s": self.last.tps,
            "ok": round(messages),
            "failed": self.last.failed - self.first.failed,
            "failed_before_window": self.first.failed,
            "server_cpu_us_per_msg": server / messages * 1e6 if messages else None,
            "server_cores": server / wall if wall > 0 else None,
            "avg_rt_ms": self.last.avg_rt_ms,
            "max_rt_ms": self.last.max_rt_ms,
            "elapsed_s": wall,
            "other_cores": max(0.0, (busy - server - driver) / wall) if wall > 0 else None,
            "load_1m_start": self.start.load_1m,
            "load_1m_end": self.end.load_1m,
            "window_at": (self.start.at, self.end.at),  # for calibration.calibrate, which removes it
            "tps_lines": self.lines[-WINDOW_LINES - 1 :],
        }


def warmup_lines(warmup_s: float) -> int:
    """Lines skipped after the first: one per second of ``--warmup``, on top of the 10 s the
    programs take to print their first line."""
    return math.ceil(warmup_s)


def run_official(program: str, server_pids: list[int], warmup: int, args: list[str]) -> OfficialRun:
    """Run ``program`` (Producer, BatchProducer) with ``args``, skipping ``warmup`` lines, until the
    window is measured; raises :class:`DriverError` when it cannot be built, or exits or stalls
    before."""
    cache = build_official()
    classpath = f"{cache}/classes:{cache}/lib/*"
    cmd = ["java", OFFICIAL_HEAP, "-cp", classpath, f"{PACKAGE}.{program}", "-ri", str(REPORT_INTERVAL_MS)]
    # The client logs under ${user.home}/logs/rocketmqlogs (Java takes user.home from the password
    # database, not $HOME): a home of the run's own keeps them out of the user's.
    with tempfile.TemporaryDirectory(prefix="bench-official-") as home:
        cmd.insert(1, f"-Duser.home={home}")
        window, printed, code = _read_lines([*cmd, *args], {**os.environ, "HOME": home}, server_pids, warmup)
    if len(window) <= warmup + WINDOW_LINES:
        tail = "\n".join(printed[-20:])
        raise DriverError(f"{program} {args}: exit {code} after {len(window)} TPS lines:\n{tail}")
    (first, start), (last, end) = window[warmup], window[-1]
    return OfficialRun(first, last, start, end, [line for line in printed if "TPS:" in line])


def _read_lines(
    cmd: list[str], env: dict[str, str], server_pids: list[int], warmup: int
) -> tuple[list[tuple[TpsLine, Snapshot]], list[str], int]:
    """Run ``cmd`` and snapshot the CPU times at each of its TPS lines until the window is complete
    (then kill it): (each TPS line with its snapshot, every line printed, the exit code)."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        preexec_fn=die_with_parent,
        env=env,
    )
    timer = threading.Timer(RUN_TIMEOUT_S, proc.kill)
    timer.start()
    printed: list[str] = []
    window: list[tuple[TpsLine, Snapshot]] = []
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            printed.append(line)
            parsed = parse_tps_line(line)
            if parsed is None:
                continue
            window.append((parsed, Snapshot.take(server_pids, proc.pid)))
            if len(window) > warmup + WINDOW_LINES:
                break
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()
    return window, printed, proc.returncode
