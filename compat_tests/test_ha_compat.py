"""Classic HA against the real Apache RocketMQ 5.3.3 broker, both ways: the real broker as the
slave of our master, and our broker as the slave of the real master. The HA protocol is only
bytes (an 8-byte offset report one way, 12-byte headers and commit-log bytes the other), so the
proof is the slave's commit log, byte-identical to the master's up to the acknowledged offset."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import trio

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from compat_tests.reference import (
    BROKER_PORT_OFFSETS,
    COMMIT_LOG_FILE_SIZE,
    ReferenceServers,
    run_mqadmin,
    start_gateway_namesrv,
    stop,
)
from gateway.testing.ports import free_port
from gateway.transport.client import connect
from tests.broker.ha_process import Server, broker
from tests.broker.helpers import send_request

pytestmark = pytest.mark.compat

MESSAGES = 300
CATCH_UP_S = 90.0
TOPIC = "HaCompatT"


def send_all(addr: str) -> int:
    """Send ``MESSAGES`` to the broker at ``addr``; returns how many were acknowledged."""

    async def run() -> int:
        ok = 0
        async with connect(addr) as conn:
            for i in range(MESSAGES):
                resp = await conn.invoke(
                    send_request(TOPIC, f"compat ha {i} ".encode() * 10, queue_id=i % 4), 10
                )
                ok += resp.code == ResponseCode.SUCCESS
        return ok

    return trio.run(run)


def ha_status(addr: str) -> dict[str, object]:
    async def ask() -> dict[str, object]:
        async with connect(addr) as conn:
            request = RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS, EmptyHeader())
            resp = await conn.invoke(request, 10)
        status = json.loads(resp.body)
        assert isinstance(status, dict)
        return status

    return trio.run(ask)


def first_file(store: Path) -> bytes:
    return (store / "commitlog" / f"{0:020d}").read_bytes()


def test_real_slave_copies_our_master(tmp_path: Path) -> None:
    namesrv, naddr = start_gateway_namesrv(tmp_path)
    port = free_port(offsets=BROKER_PORT_OFFSETS)
    master = broker(
        tmp_path, "master", naddr, {"mappedFileSizeCommitLog": str(COMMIT_LOG_FILE_SIZE)}, port=port
    )
    servers = ReferenceServers.on_loopback(
        tmp_path / "ref",
        broker_name="ha-broker",
        namesrv_addr_for_broker=naddr,
        # No haMasterAddress: 5.3.3 applies it before its HA client exists (DefaultHAService.init
        # runs in DefaultMessageStore.start), so a configured one is dropped and never retried;
        # the slave learns our master's HA address from its registration answer instead.
        extra_conf=("brokerRole=SLAVE", "brokerId=1"),
    )
    (tmp_path / "ref").mkdir()
    try:
        master.start()
        servers.start_broker()
        assert send_all(master.addr) == MESSAGES
        deadline = time.monotonic() + CATCH_UP_S
        while True:
            status = ha_status(master.addr)
            conns = status["haConnectionInfo"]
            assert isinstance(conns, list)
            end = status["masterCommitLogMaxOffset"]
            assert isinstance(end, int)
            if conns and conns[0]["slaveAckOffset"] == end:
                break
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
        ours = first_file(tmp_path / "master")
        theirs = first_file(servers.store)
        assert theirs[:end] == ours[:end]
        assert status["inSyncSlaveNums"] == 1
        out = run_mqadmin(naddr, "haStatus", "-b", master.addr, home=tmp_path / "home")
        assert re.search(r"^#SlaveNum\s+1$", out, re.M), out
        assert re.search(r"^#InSyncSlaveNum\s+1$", out, re.M), out
        assert re.search(rf"^127\.0\.0\.1:\d+\s+{end}\s+0\s+\S+\s+OK\s+{end}$", out, re.M), out
    finally:
        servers.stop(kill=True)
        master.stop()
        stop(namesrv)


def test_our_slave_copies_the_real_master(tmp_path: Path) -> None:
    namesrv, naddr = start_gateway_namesrv(tmp_path)
    servers = ReferenceServers.on_loopback(
        tmp_path / "ref", broker_name="ha-broker", namesrv_addr_for_broker=naddr
    )
    (tmp_path / "ref").mkdir()
    slave: Server | None = None
    try:
        servers.start_broker()
        slave = broker(
            tmp_path,
            "slave",
            naddr,
            {
                "brokerRole": "SLAVE",
                "brokerId": "1",
                "mappedFileSizeCommitLog": str(COMMIT_LOG_FILE_SIZE),
                "haMasterAddress": f"127.0.0.1:{servers.broker_port + 1}",
            },
        )
        slave.start()
        assert send_all(servers.broker_addr) == MESSAGES
        deadline = time.monotonic() + CATCH_UP_S
        while True:
            status = ha_status(servers.broker_addr)
            conns = status["haConnectionInfo"]
            assert isinstance(conns, list)
            end = status["masterCommitLogMaxOffset"]
            assert isinstance(end, int)
            if conns and conns[0]["slaveAckOffset"] == end:
                break
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
        assert first_file(tmp_path / "slave")[:end] == first_file(servers.store)[:end]
        mine = ha_status(slave.addr)
        client = mine["haClientRuntimeInfo"]
        assert isinstance(client, dict)
        assert client["maxOffset"] == end
        out = run_mqadmin(naddr, "haStatus", "-b", slave.addr, home=tmp_path / "home")
        assert re.search(rf"^#MasterAddr\s+127\.0\.0\.1:{servers.broker_port + 1}$", out, re.M), out
        assert re.search(rf"^#CommitLogMaxOffset\s+{end}$", out, re.M), out
    finally:
        if slave is not None:
            slave.stop()
        servers.stop(kill=True)
        stop(namesrv)
