"""Runs our Java load drivers (bench/java: ``rmqbench.Bench`` on rocketmq-client 5.3.3, and
``rmqbench.GrpcBench`` on the gRPC rocketmq-client-java 5.0.8) and measures around them.

The driver prints ``MARK start`` when its measured phase begins (after the warm-up, or at the first
consumed message) and ``MARK end`` when it ends; this module reads its output as it comes and takes
a snapshot at each mark of the server processes' CPU time, the driver's own CPU time and the whole
machine's busy time. So a case reports the **server CPU seconds per message** of exactly the measured
phase, and how much CPU *other* processes used meanwhile (the noise of a shared machine), with the
machine's 1-minute load average at both marks (bench/side_by_side/calibration.py judges them).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.side_by_side.calibration import system_load
from bench.side_by_side.servers import cpu_seconds, die_with_parent, machine_busy_seconds

JAVA_DIR = Path(__file__).resolve().parents[1] / "java"
GRPC_CLIENT_LIB = JAVA_DIR.parents[1] / "compat_tests" / "java" / "grpc5" / "target" / "lib"
REMOTING_DRIVER = "rmqbench.Bench"
GRPC_DRIVER = "rmqbench.GrpcBench"
CLASSPATHS = {  # main class: its classpath (built by bench/java/build.sh)
    REMOTING_DRIVER: f"{JAVA_DIR}/target/classes:{JAVA_DIR}/target/lib/*",
    GRPC_DRIVER: f"{JAVA_DIR}/target/grpc-classes:{GRPC_CLIENT_LIB}/*",
}
DRIVER_HEAP = "-Xmx512m"
RUN_TIMEOUT_S = 300.0  # one driver run; every case is bounded far below this


class DriverError(RuntimeError):
    """The driver failed, printed no result, or did not finish in time."""


def build_driver(grpc: bool = False) -> None:
    """Compile the remoting driver (resolving rocketmq-client 5.3.3), or with ``grpc`` the gRPC
    one; each skipped when up to date."""
    subprocess.run(["bash", str(JAVA_DIR / "build.sh"), *(["grpc"] if grpc else [])], check=True)


@dataclass
class Snapshot:
    at: float
    server_cpu_s: float
    driver_cpu_s: float
    machine_busy_s: float
    load_1m: float | None = None  # the machine's 1-minute load average (None: not read)

    @classmethod
    def take(cls, server_pids: list[int], driver_pid: int) -> Snapshot:
        """Now: the servers' and the driver's CPU seconds, the machine's busy seconds and load."""
        now = time.perf_counter()
        return cls(
            now, cpu_seconds(server_pids), cpu_seconds([driver_pid]), machine_busy_seconds(), system_load()
        )


@dataclass
class DriverRun:
    """The driver's RESULT plus the snapshots taken at its marks."""

    result: dict[str, Any]
    start: Snapshot
    end: Snapshot
    seconds: list[str] = field(default_factory=list)  # the per-second lines, as printed

    @property
    def server_cpu_s(self) -> float:
        return self.end.server_cpu_s - self.start.server_cpu_s

    def metrics(self) -> dict[str, Any]:
        """msgs/s, server CPU µs per message, latency percentiles and the noise of the phase (and
        the messages of the warm-up, when the driver counts them)."""
        ok = int(self.result["ok"])
        wall = self.end.at - self.start.at
        busy = self.end.machine_busy_s - self.start.machine_busy_s
        driver = self.end.driver_cpu_s - self.start.driver_cpu_s
        warmed = {"warmup_msgs": self.result["warmup_msgs"]} if "warmup_msgs" in self.result else {}
        return {
            **warmed,
            "msgs_per_s": float(self.result["tps"]),
            "ok": ok,
            "failed": int(self.result["failed"]),
            "server_cpu_us_per_msg": self.server_cpu_s / ok * 1e6 if ok else None,
            "server_cores": self.server_cpu_s / wall if wall > 0 else None,
            "avg_rt_ms": self.result["avg_rt_ms"],
            "max_rt_ms": self.result["max_rt_ms"],
            "p50_ms": self.result["p50_ms"],
            "p99_ms": self.result["p99_ms"],
            "p999_ms": self.result["p999_ms"],
            "elapsed_s": self.result["elapsed_s"],
            "warnings": self.result.get("warnings", []),
            # Cores other processes kept busy during the phase: the machine's noise.
            "other_cores": max(0.0, (busy - self.server_cpu_s - driver) / wall) if wall > 0 else None,
            "load_1m_start": self.start.load_1m,
            "load_1m_end": self.end.load_1m,
            "window_at": (self.start.at, self.end.at),  # for calibration.calibrate, which removes it
        }


def run_driver(
    mode: str,
    server_pids: list[int],
    main: str = REMOTING_DRIVER,
    on_mark: Callable[[str], None] | None = None,
    run_timeout_s: float = RUN_TIMEOUT_S,
    **options: object,
) -> DriverRun:
    """Run ``<main> <mode> --key value ...`` and measure it; ``on_mark`` is called with each mark's
    name right after its snapshot (the profiler's start and stop); the driver is killed after
    ``run_timeout_s``. Raises :class:`DriverError`."""
    cmd = ["java", DRIVER_HEAP, "-cp", CLASSPATHS[main], main, mode]
    for key, value in options.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    # The client logs under ${user.home}/logs/rocketmqlogs (Java takes user.home from the password
    # database, not $HOME): a home of the run's own keeps them out of the user's.
    with tempfile.TemporaryDirectory(prefix="bench-driver-") as home:
        cmd.insert(1, f"-Duser.home={home}")
        env = {**os.environ, "HOME": home}
        return _measure(cmd, env, server_pids, on_mark, mode, options, run_timeout_s)


def _measure(
    cmd: list[str],
    env: dict[str, str],
    server_pids: list[int],
    on_mark: Callable[[str], None] | None,
    mode: str,
    options: dict[str, object],
    run_timeout_s: float,
) -> DriverRun:
    """:func:`run_driver`'s run of ``cmd``: its marks, seconds, result and errors read as printed."""
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        preexec_fn=die_with_parent,
    )
    stderr: list[str] = []
    drain = threading.Thread(target=lambda: stderr.extend(proc.stderr or []), daemon=True)
    drain.start()

    def snap() -> Snapshot:
        return Snapshot.take(server_pids, proc.pid)

    marks: dict[str, Snapshot] = {}
    result: dict[str, Any] | None = None
    seconds: list[str] = []
    errors: list[str] = []
    warnings: list[str] = []  # the driver's first few send failures
    timer = threading.Timer(run_timeout_s, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            if line.startswith("MARK "):
                marks[line[5:]] = snap()
                if on_mark is not None:
                    on_mark(line[5:])
            elif line.startswith("RESULT "):
                result = json.loads(line[7:])
            elif line.startswith("SECOND "):
                seconds.append(line[7:])
            elif line.startswith("ERROR "):
                errors.append(line[6:])
            elif line.startswith("WARN "):
                warnings.append(line[5:])
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    drain.join(5)
    if proc.returncode != 0 or result is None or "start" not in marks or "end" not in marks:
        tail = "".join(stderr[-30:])
        raise DriverError(f"{mode} {options}: exit {proc.returncode}, errors {errors}, stderr:\n{tail}")
    if errors:
        result["errors"] = errors
    if warnings:
        result["warnings"] = warnings
    return DriverRun(result, marks["start"], marks["end"], seconds)
