"""The harness notices a reference server that fails quietly: an ``OutOfMemoryError`` in its
console output or RocketMQ logs, or an exit nobody asked for, each reported with the file to
read (``ReferenceServers.failures``, which the conftest turns into a failed test)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from compat_tests.reference import ReferenceServers


def fake_servers(workdir: Path) -> ReferenceServers:
    servers = ReferenceServers.on_loopback(workdir)
    servers.checks_exits = True
    return servers


def started(servers: ReferenceServers, out: str, code: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", code])
    proc.wait(10)
    servers.procs.append(proc)
    servers.outputs[proc.pid] = servers.workdir / out
    return proc


def test_out_of_memory_in_a_rocketmq_log_is_reported_once_naming_the_file(tmp_path: Path) -> None:
    servers = fake_servers(tmp_path)
    log = tmp_path / "logs" / "rocketmqlogs" / "broker_default.log"
    log.parent.mkdir(parents=True)
    log.write_text("INFO boot success\n")
    assert servers.failures() == []
    with log.open("a") as f:
        f.write("ERROR ScheduleMessageService java.lang.OutOfMemoryError: Direct buffer memory\n")
    (found,) = servers.failures()
    assert found.startswith(f"{log}: ")
    assert "Direct buffer memory" in found
    assert servers.failures() == []  # each line is reported once, to the test it happened in


def test_an_unasked_exit_is_reported_and_a_stop_is_not(tmp_path: Path) -> None:
    servers = fake_servers(tmp_path)
    (tmp_path / "broker.out").write_text("boot success\n")
    crashed = started(servers, "broker.out", "raise SystemExit(137)")
    (found,) = servers.failures()
    assert found == f"{tmp_path / 'broker.out'}: exited (137) during the test"
    assert crashed.returncode == 137
    stopped = started(servers, "namesrv.out", "pass")
    servers.expect_exit(stopped)
    assert servers.failures() == []
