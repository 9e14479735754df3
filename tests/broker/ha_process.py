"""Our NameServer and brokers as processes (``python -m gateway.cli``) for the HA tests: free
ports, a temporary HOME, a log file each, SIGTERM or SIGKILL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

READY_TIMEOUT_S = 60.0
ROOT = Path(__file__).resolve().parents[2]
_READY = re.compile(r"ready: (namesrv|broker)=(\S+)")
FILE_SIZE = 64 * 1024


class Server:
    """One ``python -m gateway.cli`` process logging to a file under ``root``."""

    def __init__(self, root: Path, name: str, argv: list[str]) -> None:
        self.root = root
        self.log = root / f"{name}.log"
        self.argv = [sys.executable, "-m", "gateway.cli", *argv]
        self.proc: subprocess.Popen[bytes] | None = None
        self.addr = ""

    def start(self) -> None:
        home = self.root / "home"
        home.mkdir(exist_ok=True)
        env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)}
        offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=out, env=env, cwd=self.root)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            match = _READY.search(self.log.read_bytes()[offset:].decode("utf-8", "replace"))
            if match:
                self.addr = match.group(2)
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.argv} exited: {self.text()[-3000:]}")
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"not ready in {READY_TIMEOUT_S} s: {self.text()[-3000:]}")

    def text(self) -> str:
        return self.log.read_text("utf-8", "replace")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


def broker(root: Path, name: str, namesrv: str, conf: dict[str, str], port: int = 0) -> Server:
    """A broker storing under ``root / name`` (64 KiB commit-log files unless ``conf`` says)."""
    path = root / f"{name}.conf"
    lines = {"brokerName": "ha-broker", "mappedFileSizeCommitLog": str(FILE_SIZE), **conf}
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    argv = ["broker", "-c", str(path), "--broker-port", str(port), "--no-grpc", "--store", str(root / name)]
    return Server(root, name, [*argv, "--namesrv-addr", namesrv])
