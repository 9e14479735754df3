"""Regression tests for start-up errors (a bad flag once ended in a traceback): each bad flag or
setting ends the process with one clear line and a non-zero exit, never a traceback, and nothing
says ``ready``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

START_TIMEOUT_S = 30


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``rmq-gateway ARGS`` with a temporary HOME and store; it must exit by itself."""
    env = {**os.environ, "HOME": str(tmp_path)}
    argv = [sys.executable, "-m", "gateway.cli", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=START_TIMEOUT_S, check=False)


def _standalone(tmp_path: Path, *flags: str) -> list[str]:
    return ["standalone", "--store", str(tmp_path / "data"), "--namesrv-port", "0", *flags]


def _assert_one_clear_line(proc: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Exceptions from Trio" not in proc.stderr
    assert "ready:" not in proc.stderr
    for word in words:
        assert word in proc.stderr


@contextmanager
def _port_in_use() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_port_in_use_is_one_line_naming_the_port(tmp_path: Path) -> None:
    with _port_in_use() as port:
        proc = _run(tmp_path, *_standalone(tmp_path, "--broker-port", str(port)))
    _assert_one_clear_line(proc, 1, "already in use", f"--broker-port {port}")
    assert proc.stderr.count("cannot start") == 1


def test_grpc_port_in_use_is_one_line_naming_it(tmp_path: Path) -> None:
    with _port_in_use() as port:
        proc = _run(tmp_path, *_standalone(tmp_path, "--broker-port", "0", "--grpc-port", str(port)))
    _assert_one_clear_line(proc, 1, "already in use", f"--grpc-port {port}")
    assert proc.stderr.count("cannot start") == 1


@pytest.mark.parametrize(
    ("host", "words"), [("999.1.1.1", "does not resolve"), ("192.0.2.1", "not an address")]
)
def test_bad_host_is_one_line(tmp_path: Path, host: str, words: str) -> None:
    proc = _run(tmp_path, *_standalone(tmp_path, "--broker-port", "0", "--host", host))
    _assert_one_clear_line(proc, 1, words, host)


@pytest.mark.parametrize("flag", ["--broker-port", "--namesrv-port"])
@pytest.mark.parametrize("value", ["70000", "-1", "abc"])
def test_port_outside_range_is_refused_by_the_parser(tmp_path: Path, flag: str, value: str) -> None:
    flags = ["--broker-port", "0", flag, value] if flag == "--namesrv-port" else [flag, value]
    proc = _run(tmp_path, *_standalone(tmp_path, *flags))
    _assert_one_clear_line(proc, 2, flag)


def test_unknown_log_level_is_refused_by_the_parser(tmp_path: Path) -> None:
    proc = _run(tmp_path, *_standalone(tmp_path, "--broker-port", "0", "--log-level", "LOUD"))
    _assert_one_clear_line(proc, 2, "unknown log level 'LOUD'")


@pytest.mark.parametrize("addr", ["garbage", "127.0.0.1:99999", "127.0.0.1:"])
def test_bad_namesrv_addr_is_refused_before_ready(tmp_path: Path, addr: str) -> None:
    proc = _run(
        tmp_path, "broker", "--store", str(tmp_path / "d"), "--broker-port", "0", "--namesrv-addr", addr
    )
    _assert_one_clear_line(proc, 2, "namesrvAddr")


def test_oversized_commit_log_file_is_refused_at_start(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeCommitLog=3000000000\n")
    proc = _run(tmp_path, *_standalone(tmp_path, "--broker-port", "0", "-c", str(conf)))
    _assert_one_clear_line(proc, 2, "mappedFileSizeCommitLog 3000000000")


def test_unknown_and_mistyped_keys_are_logged_once_each(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("flushdisktype=SYNC_FLUSH\nnoSuchKey=1\nflushDiskType=ASYNC_FLUSH\nlistenPort=0\n")
    env = {**os.environ, "HOME": str(tmp_path)}
    argv = [
        sys.executable,
        "-m",
        "gateway.cli",
        *_standalone(tmp_path, "--broker-port", "0", "-c", str(conf)),
    ]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # bounded: the process is killed after START_TIMEOUT_S below
            lines.append(line)
            if "ready:" in line:
                break
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=START_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = "".join(lines) + rest
    assert any("ready:" in line for line in lines), text
    unknown = [line for line in text.splitlines() if "is not used by this gateway" in line]
    assert len(unknown) == 2, text
    assert any("flushdisktype" in line and "did you mean flushDiskType?" in line for line in unknown)
    assert any("noSuchKey" in line for line in unknown)
    assert proc.returncode == 0
