"""Faults on a running gateway, seen from a remoting client: in process (the Python API of
:class:`gateway.testing.inprocess.InProcessGateway`) and as ``rmq-gateway standalone
--control-port 0`` in a subprocess driven over HTTP and by ``rmq-gateway fault``."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from gateway.control.client import ControlClient, RemoteFaults
from gateway.testing.inprocess import InProcessGateway
from gateway.transport.client import connect
from gateway.transport.connection import PeerTimeoutError
from gateway.transport.connection_state import PeerClosedError
from gateway.transport.faults import BUSY_REMARK
from tests.broker.helpers import send_request
from tests.helpers import read_ready_line

ROUTE = RequestCode.GET_ROUTEINFO_BY_TOPIC


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    with InProcessGateway(tmp_path_factory.mktemp("store"), grpc_port=None, control_port=0) as gw:
        yield gw


@pytest.fixture(autouse=True)
def _no_rules_left(gateway: InProcessGateway) -> Iterator[None]:
    yield
    gateway.faults.clear()


async def test_busy_twice_then_stored(gateway: InProcessGateway) -> None:
    fault_id = gateway.faults.add(request="SEND_MESSAGE_V2", respond=2, times=2, topic="FaultT1")
    async with connect(gateway.broker_addr) as conn:
        answers = [
            await conn.invoke(
                send_request("FaultT1", b"hello", {"UNIQ_KEY": "U1", "KEYS": "k1", "TAGS": "a"}), 5
            )
            for _ in range(3)
        ]
    assert [(a.code, a.remark) for a in answers[:2]] == [(ResponseCode.SYSTEM_BUSY, BUSY_REMARK)] * 2
    assert answers[2].code == ResponseCode.SUCCESS
    assert [(f["id"], f["fired"], f["active"]) for f in gateway.faults.list()] == [(fault_id, 2, False)]
    stored = await trio.to_thread.run_sync(lambda: gateway.stored_messages("FaultT1", wait_for=1))
    assert len(stored) == 1
    message = stored[0]
    assert (message["msgId"], message["keys"], message["tags"], message["body"]) == ("U1", "k1", "a", "hello")
    assert message["bodyBase64"] == "aGVsbG8="
    assert message["offsetMsgId"] == answers[2].ext_fields["msgId"]  # type: ignore[index]
    assert (message["queueId"], message["queueOffset"]) == (0, 0)
    assert message["storeTimestamp"] >= message["bornTimestamp"] > 0


async def test_a_rule_for_another_topic_leaves_a_send_alone(gateway: InProcessGateway) -> None:
    gateway.faults.add(request="SEND_MESSAGE_V2", respond=2, topic="Elsewhere")
    async with connect(gateway.broker_addr) as conn:
        answer = await conn.invoke(send_request("FaultT2", b"x"), 5)
    assert answer.code == ResponseCode.SUCCESS


async def test_drop_times_out_close_closes_delay_delays(gateway: InProcessGateway) -> None:
    async with connect(gateway.broker_addr) as conn:
        gateway.faults.add(request="SEND_MESSAGE_V2", drop=True, times=1)
        with pytest.raises(PeerTimeoutError):
            await conn.invoke(send_request("FaultT3", b"x"), 0.5)
        gateway.faults.add(request="SEND_MESSAGE_V2", delay_ms=400, times=1)
        began = trio.current_time()
        answer = await conn.invoke(send_request("FaultT3", b"x"), 10)
        assert answer.code == ResponseCode.SUCCESS
        assert trio.current_time() - began >= 0.4
        gateway.faults.add(request="SEND_MESSAGE_V2", close=True, times=1)
        with pytest.raises(PeerClosedError):
            await conn.invoke(send_request("FaultT3", b"x"), 10)
        with trio.fail_after(10):
            await conn.wait_closed()


async def test_namesrv_rules_apply_to_the_namesrv_only(gateway: InProcessGateway) -> None:
    gateway.faults.add(
        request="GET_ROUTEINFO_BY_TOPIC", respond=17, remark="no route today", target="namesrv"
    )
    async with connect(gateway.namesrv_addr) as conn:
        answer = await conn.invoke(RemotingCommand.request(ROUTE, {"topic": "TBW102"}), 5)
    assert (answer.code, answer.remark) == (17, "no route today")
    async with connect(gateway.broker_addr) as conn:
        answer = await conn.invoke(send_request("FaultT4", b"x"), 5)
    assert answer.code == ResponseCode.SUCCESS


def _fault_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", "fault", *args], capture_output=True, text=True, timeout=60
    )


async def test_the_cli_process_serves_the_control_endpoint(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "gateway.cli", "standalone", "--namesrv-port", "0", "--broker-port", "0"]
    argv += ["--no-grpc", "--store", str(tmp_path / "data"), "--control-port", "0"]
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = await trio.to_thread.run_sync(
        lambda: subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    )
    try:
        line = await read_ready_line(proc, 30)
        match = re.search(r"broker=(\S+) control=(\S+)", line)
        assert match, line
        broker_addr, control_addr = match.groups()
        added = await trio.to_thread.run_sync(
            lambda: _fault_cli(
                "add", "--control", control_addr, "--request", "SEND_MESSAGE_V2", "--respond", "2"
            )
        )
        assert added.returncode == 0, added.stderr
        assert '"id": 1' in added.stdout
        refused = await trio.to_thread.run_sync(
            lambda: _fault_cli("add", "--control", control_addr, "--request", "SEND_MSG", "--respond", "2")
        )
        assert (refused.returncode, refused.stderr.strip()) == (
            1,
            "rmq-gateway fault: request: unknown RequestCode name 'SEND_MSG'",
        )
        async with connect(broker_addr) as conn:
            busy = await conn.invoke(send_request("FaultT5", b"one"), 5)
            assert (busy.code, busy.remark) == (ResponseCode.SYSTEM_BUSY, BUSY_REMARK)
            listed = await trio.to_thread.run_sync(lambda: _fault_cli("list", "--control", control_addr))
            assert '"fired": 1' in listed.stdout
            cleared = await trio.to_thread.run_sync(lambda: _fault_cli("clear", "--control", control_addr))
            assert cleared.stdout.strip() == "removed 1"
            assert (await conn.invoke(send_request("FaultT5", b"two"), 5)).code == ResponseCode.SUCCESS
        client = ControlClient(control_addr)
        stored = await trio.to_thread.run_sync(lambda: client.stored_messages("FaultT5", wait_for=1))
        assert [m["body"] for m in stored] == ["two"]
        proc.send_signal(signal.SIGTERM)
        rest = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=30)[1])
        assert proc.returncode == 0
        assert "fault 1 fired on broker: SEND_MESSAGE_V2" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    gone = await trio.to_thread.run_sync(lambda: _fault_cli("list", "--control", control_addr))
    assert gone.returncode == 1
    assert "cannot reach the control endpoint" in gone.stderr


async def test_remote_faults_and_binary_bodies_over_the_control_endpoint(gateway: InProcessGateway) -> None:
    remote = RemoteFaults(ControlClient(gateway.control_addr))
    fault_id = await trio.to_thread.run_sync(
        lambda: remote.add(request="SEND_MESSAGE_V2", respond=14, remark="no", topic="FaultT6", times=1)
    )
    assert [f["id"] for f in gateway.faults.list()] == [fault_id]
    async with connect(gateway.broker_addr) as conn:
        refused = await conn.invoke(send_request("FaultT6", b"\xff\x00"), 5)
        stored = await conn.invoke(send_request("FaultT6", b"\xff\x00"), 5)
    assert [(refused.code, refused.remark), (stored.code,)] == [(14, "no"), (ResponseCode.SUCCESS,)]
    listed = await trio.to_thread.run_sync(remote.list)
    assert [(f["id"], f["fired"], f["active"]) for f in listed] == [(fault_id, 1, False)]
    messages = await trio.to_thread.run_sync(
        lambda: ControlClient(gateway.control_addr).stored_messages("FaultT6", wait_for=1, limit=5)
    )
    assert [(m["body"], m["bodyBase64"]) for m in messages] == [(None, "/wA=")]
    assert await trio.to_thread.run_sync(lambda: remote.remove(fault_id)) is True
    assert await trio.to_thread.run_sync(lambda: remote.remove(fault_id)) is False
    assert await trio.to_thread.run_sync(remote.clear) == 0


def test_the_rmq_faults_fixture_is_cleared_after_each_test(tmp_path: Path) -> None:
    """A foreign suite with nothing but the installed plugin: ``rmq_faults`` is the session
    gateway's table, and a rule one test added is gone in the next."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_uses_faults.py").write_text(
        "def test_adds(rmq_faults, rmq_gateway):\n"
        "    assert rmq_faults is rmq_gateway.faults\n"
        "    rmq_faults.add(request='SEND_MESSAGE_V2', respond=2)\n"
        "    assert len(rmq_faults.list()) == 1\n"
        "\n"
        "def test_starts_clean(rmq_faults):\n"
        "    assert rmq_faults.list() == []\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t")],
        cwd=suite,
        env={**os.environ, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
