"""A gateway in a subprocess (``python -m gateway.cli standalone``) for the fault suite: start on
free ports with a temporary HOME, read the ``ready`` line, measure RSS, stop or SIGKILL it.

Its log goes to a file, so a test can count ERROR lines and tracebacks after the fact.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

READY_TIMEOUT_S = 60.0  # start-up on a loaded 2-core machine, recovery after kill -9 included
STOP_TIMEOUT_S = 30.0
_READY = re.compile(r"ready: namesrv=(\S+) broker=(\S+)(?: grpc=(\S+))?")


class GatewayProcess:
    """One ``rmq-gateway standalone`` process; see the module docstring."""

    def __init__(
        self, root: Path, conf: dict[str, str] | None = None, ports: tuple[int, int] = (0, 0)
    ) -> None:
        self.root = root
        self.log_path = root / "gateway.log"
        self.conf_path = root / "broker.conf"
        lines = [f"{k}={v}" for k, v in (conf or {}).items()]
        self.conf_path.write_text("\n".join(lines) + "\n")
        self.ports = ports
        self.proc: subprocess.Popen[bytes] | None = None
        self.namesrv_addr = ""
        self.broker_addr = ""
        self.grpc_addr = ""

    def start(self) -> None:
        (self.root / "home").mkdir(exist_ok=True)
        env = {**os.environ, "HOME": str(self.root / "home")}
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        argv = [
            sys.executable,
            "-m",
            "gateway.cli",
            "standalone",
            "--store",
            str(self.root / "store"),
            "--namesrv-port",
            str(self.ports[0]),
            "--broker-port",
            str(self.ports[1]),
            "--grpc-port",
            "0",  # the gRPC endpoint on any free port: workers run side by side
            "-c",
            str(self.conf_path),
        ]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log, env=env)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            match = _READY.search(self.log_path.read_bytes()[offset:].decode("utf-8", "replace"))
            if match:
                self.namesrv_addr, self.broker_addr, grpc_addr = match.groups()
                self.grpc_addr = grpc_addr or ""
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited with {self.proc.returncode}: {self.log_tail()}")
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"gateway not ready within {READY_TIMEOUT_S} s: {self.log_tail()}")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def rss_bytes(self) -> int:
        """Resident set size of the process now (``VmRSS``)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def peak_rss_bytes(self) -> int:
        """Peak resident set size so far (``VmHWM``)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmHWM")

    def kill(self) -> None:
        """SIGKILL, as ``kill -9``: no flush, no unregistration."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(STOP_TIMEOUT_S)

    def stop(self) -> int:
        """SIGTERM and wait; SIGKILL if it does not stop in time. Returns the exit status."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def log_text(self) -> str:
        return self.log_path.read_text("utf-8", "replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def error_lines(self) -> list[str]:
        return [line for line in self.log_text().splitlines() if " ERROR " in line or " CRITICAL " in line]

    def traceback_count(self) -> int:
        return self.log_text().count("Traceback (most recent call last)")
