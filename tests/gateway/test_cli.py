"""``rmq-gateway standalone`` as a user runs it: ready line, working routes, clean SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import trio

from codec.bodies.route import TopicRouteData
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from gateway.cli import build_parser
from gateway.transport.client import connect
from tests.helpers import read_ready_line


def test_help_documents_every_command() -> None:
    text = build_parser().format_help()
    for command in ("namesrv", "broker", "standalone"):
        assert command in text


async def test_standalone_starts_serves_and_stops(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = await trio.to_thread.run_sync(
        lambda: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gateway.cli",
                "standalone",
                "--namesrv-port",
                "0",
                "--broker-port",
                "0",
                "--store",
                str(tmp_path / "data"),
            ],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    )
    try:
        line = await read_ready_line(proc, 20)
        match = re.search(r"namesrv=(\S+) broker=(\S+)", line)
        assert match, line
        namesrv_addr, broker_addr = match.groups()
        async with connect(namesrv_addr) as conn:
            with trio.fail_after(10):
                while True:
                    resp = await conn.invoke(
                        RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}), 3
                    )
                    if resp.code == ResponseCode.SUCCESS:
                        break
                    await trio.sleep(0.05)
            assert TopicRouteData.decode(resp.body).broker_datas[0].master_addr() == broker_addr
        proc.send_signal(signal.SIGTERM)
        rest = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=20)[1])
        assert proc.returncode == 0
        assert "stopped" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_start_up_does_not_import_the_metrics_exporter(tmp_path: Path) -> None:
    """``prometheus_client`` (and its ``http.server``) is loaded only with metricsExporterType=PROM:
    a broker without metrics does not pay for it at start-up (``broker/metrics.py``)."""
    probe = (
        "import sys, gateway.cli, gateway.launcher, broker.processors.broker_status\n"
        "loaded = ('prometheus_client', 'http.server', 'broker.prometheus')\n"
        "print(sorted(m for m in loaded if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "[]"
