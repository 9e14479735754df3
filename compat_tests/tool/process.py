"""Client programs as bounded subprocesses: every one runs in its own process group, has a time
limit, and is killed (the whole group) when the limit passes, so the tool never hangs on a client
waiting for a server that does not answer."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compat_tests.tool.outcomes import Failed

TAIL_CHARS = 600


@dataclass
class Finished:
    """A program's exit status and output (``timed_out`` when it was killed at its limit)."""

    argv: list[str]
    code: int
    stdout: str
    stderr: str
    timed_out: bool

    def events(self) -> list[dict[str, Any]]:
        """The JSON objects among the stdout lines (the Java scenario programs' events)."""
        found: list[dict[str, Any]] = []
        for raw in self.stdout.splitlines():
            raw = raw.strip()
            if not raw.startswith("{"):
                continue
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                found.append(value)
        return found

    def of(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e.get("event") == name]

    def lines(self, word: str) -> list[list[str]]:
        """The stdout lines starting with ``word`` (the gRPC programs' outcome lines), split."""
        return [line.split() for line in self.stdout.splitlines() if line.split()[:1] == [word]]

    def error(self) -> str:
        """The program's own account of its failure: its last error event, else its first failure
        line (``FAILED ...``), else the first exception in its stderr, else its stderr tail."""
        errors = self.of("error")
        if errors:
            return str(errors[-1].get("error", ""))[:TAIL_CHARS]
        failures = [
            line
            for line in self.stdout.splitlines()
            if line.split()[:1] and line.split()[0].endswith("FAILED")
        ]
        if failures:
            return failures[0][:TAIL_CHARS]
        lines = self.stderr.strip().splitlines()
        thrown = [
            line.strip() for line in lines if "Exception" in line and not line.lstrip().startswith("at ")
        ]
        if thrown:
            return thrown[0][:TAIL_CHARS]
        return " | ".join(lines[-3:])[-TAIL_CHARS:] or f"exit status {self.code}"

    def require_ok(self, what: str) -> Finished:
        """Raise :class:`Failed` unless the program exited 0 within its limit."""
        if self.timed_out:
            raise Failed(f"{what}: no result within its time limit (killed)")
        if self.code != 0:
            raise Failed(f"{what}: {self.error()}")
        return self


class Background:
    """A program started in the background; :meth:`finish` waits for it (bounded) or kills it."""

    def __init__(self, argv: list[str], work: Path, env: dict[str, str] | None = None) -> None:
        work.mkdir(parents=True, exist_ok=True)
        stamp = time.time_ns()
        self.argv = argv
        self.out_path = work / f"out-{stamp}.txt"
        self.err_path = work / f"err-{stamp}.txt"
        with self.out_path.open("wb") as out, self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "LC_ALL": "C.UTF-8", **(env or {})},
                start_new_session=True,
            )

    def stdout(self) -> str:
        return self.out_path.read_text("utf-8", errors="replace")

    def wait_for(self, text: str, timeout: float) -> bool:
        """Poll stdout until ``text`` shows up (``True``), the program ends or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stdout():
                return True
            if self.proc.poll() is not None:
                return text in self.stdout()
            time.sleep(0.1)
        return False

    def kill(self) -> None:
        """SIGKILL the program's whole process group (a no-op once it has exited)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def finish(self, timeout: float) -> Finished:
        """Wait up to ``timeout`` for the exit; kill it when it does not come."""
        timed_out = False
        try:
            self.proc.wait(max(0.1, timeout))
        except subprocess.TimeoutExpired:
            timed_out = True
            self.kill()
        code = self.proc.returncode if self.proc.returncode is not None else -9
        stderr = self.err_path.read_text("utf-8", errors="replace")[-4000:]
        return Finished(self.argv, code, self.stdout(), stderr, timed_out)


def run(argv: list[str], work: Path, timeout: float, env: dict[str, str] | None = None) -> Finished:
    """Run ``argv`` to its end, at most ``timeout`` seconds (then it is killed)."""
    return Background(argv, work, env).finish(timeout)
