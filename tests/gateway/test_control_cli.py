"""``rmq-gateway fault disk-full``, ``rewind`` and ``route`` against a running
``rmq-gateway standalone --control-port 0`` process: each command changes what a remoting client
sees, and a refused or incomplete command ends with one line on stderr."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import trio

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from gateway.control.client import ControlClient
from gateway.transport.client import connect
from tests.broker.helpers import send_request
from tests.gateway.test_consumption import commit
from tests.helpers import read_ready_line

BROKER = "broker-a"  # the standalone gateway's broker name (BrokerConfig.broker_name)
TOPIC = "CliT"
GROUP = "cliG"


def _fault_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", "fault", *args], capture_output=True, text=True, timeout=60
    )


async def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return await trio.to_thread.run_sync(lambda: _fault_cli(*args))


async def test_disk_full_rewind_and_routes_from_the_command_line(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "gateway.cli", "standalone", "--namesrv-port", "0", "--broker-port", "0"]
    argv += ["--no-grpc", "--store", str(tmp_path / "data"), "--control-port", "0", "--group", GROUP]
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = await trio.to_thread.run_sync(
        lambda: subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    )
    try:
        line = await read_ready_line(proc, 30)
        match = re.search(r"namesrv=(\S+) broker=(\S+) control=(\S+)", line)
        assert match, line
        namesrv_addr, broker_addr, control = match.groups()
        async with connect(broker_addr) as conn:
            full = await _cli("disk-full", "--control", control, "on")
            assert (full.returncode, json.loads(full.stdout)) == (0, {"diskFull": True}), full.stderr
            status = await _cli("disk-full", "--control", control)
            assert json.loads(status.stdout) == {"diskFull": True}
            refused = await conn.invoke(send_request(TOPIC, b"refused"), 5)
            assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
            off = await _cli("disk-full", "--control", control, "off")
            assert json.loads(off.stdout) == {"diskFull": False}
            for i in range(3):
                sent = await conn.invoke(send_request(TOPIC, b"m%d" % i), 5)
                assert sent.code == ResponseCode.SUCCESS, sent.remark

            await commit(conn, GROUP, TOPIC, 0, 3)
            rewound = await _cli(
                "rewind", "--control", control, "--group", GROUP, "--topic", TOPIC, "--count", "2"
            )
            assert rewound.returncode == 0, rewound.stderr
            assert json.loads(rewound.stdout)["offsets"]["0"] == 1
            client = ControlClient(control)
            offsets = await trio.to_thread.run_sync(lambda: client.group_offsets(GROUP, TOPIC))
            assert offsets["lag"] == 2
            unknown = await _cli("rewind", "--control", control, "--group", "nobody", "--topic", TOPIC)
            assert unknown.returncode == 1
            assert unknown.stderr.startswith("rmq-gateway fault: ")
            assert unknown.stderr.count("\n") == 1

        async with connect(namesrv_addr) as namesrv:
            route = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
            removed = await _cli("route", "--control", control, "remove", BROKER)
            assert json.loads(removed.stdout) == {"withheld": [BROKER]}, removed.stderr
            assert (await namesrv.invoke(route, 5)).code == ResponseCode.TOPIC_NOT_EXIST
            listed = await _cli("route", "--control", control, "list")
            assert json.loads(listed.stdout) == {"withheld": [BROKER]}
            restored = await _cli("route", "--control", control, "restore", BROKER)
            assert json.loads(restored.stdout) == {"withheld": []}
            assert (await namesrv.invoke(route, 5)).code == ResponseCode.SUCCESS
        nameless = await _cli("route", "--control", control, "remove")
        assert (nameless.returncode, nameless.stderr.strip()) == (
            2,
            "rmq-gateway fault: route remove: name the broker (BROKER_NAME)",
        )
        proc.send_signal(signal.SIGTERM)
        await trio.to_thread.run_sync(lambda: proc.communicate(timeout=30))
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
