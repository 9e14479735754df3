"""Classic HA against the real Apache RocketMQ 5.3.3 broker, both ways: the real broker as the
slave of our master, and our broker as the slave of the real master. The HA protocol is only
bytes (an 8-byte offset report one way, 12-byte headers and commit-log bytes the other), so the
proof is the slave's commit log, byte-identical to the master's up to the acknowledged offset,
after 10,000 sends from four connections; and the slave's consume queues, built from those bytes,
serve every message in order (the slave has ``slaveReadEnable``)."""

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
from codec.headers.pull import PullSysFlag
from codec.message import iter_records
from compat_tests.ha_pairs import QUEUES, create_topic
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
from tests.broker.helpers import pull_request, send_request

pytestmark = pytest.mark.compat

MESSAGES = 10_000
CATCH_UP_S = 90.0
BUSY_RETRIES = 5
TOPIC = "HaCompatT"
SUBSCRIPTION = PullSysFlag.SUBSCRIPTION


def body_of(i: int) -> bytes:
    return f"compat ha {i} ".encode() * 10


def send_all(addr: str) -> int:
    """Send ``MESSAGES`` to the broker at ``addr``, message ``i`` to queue ``i % QUEUES`` on the
    connection of that queue (one sender each, so each queue's order is the send order);
    returns how many were acknowledged. A send answered SYSTEM_BUSY (the real broker's flow
    control on a loaded machine: a request that waited too long in its send queue) is sent again,
    as the Java producer does."""
    ok = [0] * QUEUES
    busy: list[str] = []

    async def sender(queue_id: int) -> None:
        async with connect(addr) as conn:
            for i in range(queue_id, MESSAGES, QUEUES):
                for _attempt in range(BUSY_RETRIES):
                    resp = await conn.invoke(send_request(TOPIC, body_of(i), queue_id=queue_id), 10)
                    if resp.code != ResponseCode.SYSTEM_BUSY:
                        break
                    busy.append(resp.remark or "")
                    await trio.sleep(0.1)
                ok[queue_id] += resp.code == ResponseCode.SUCCESS

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            for queue_id in range(QUEUES):
                nursery.start_soon(sender, queue_id)

    started = time.monotonic()
    trio.run(run)
    print(f"\n{MESSAGES} sends to {addr}: {time.monotonic() - started:.1f} s, {len(busy)} busy {busy[:3]}")
    return sum(ok)


def queue_bodies(addr: str) -> list[list[bytes]]:
    """Every body each queue of ``TOPIC`` serves at ``addr``, pulled from offset 0."""

    async def run() -> list[list[bytes]]:
        found: list[list[bytes]] = []
        async with connect(addr) as conn:
            for queue_id in range(QUEUES):
                bodies: list[bytes] = []
                while True:
                    pull = pull_request(
                        TOPIC, len(bodies), queue_id, suspend_ms=0, flags=PullSysFlag.SUBSCRIPTION
                    )
                    resp = await conn.invoke(pull, 10)
                    if resp.code != ResponseCode.SUCCESS:
                        break
                    bodies += [r.body for r in iter_records(resp.body)]
                found.append(bodies)
        return found

    return trio.run(run)


def assert_slave_serves_all(slave_addr: str) -> None:
    """The slave's consume queues serve every message in send order (polled: a real slave
    dispatches what it appended on its own thread)."""
    started = time.monotonic()
    expected = [[body_of(i) for i in range(q, MESSAGES, QUEUES)] for q in range(QUEUES)]
    deadline = started + CATCH_UP_S
    while (served := queue_bodies(slave_addr)) != expected:
        counts = [len(b) for b in served]
        assert time.monotonic() < deadline, f"the slave serves {counts} messages per queue"
        time.sleep(0.5)
    print(f"{MESSAGES} messages pulled from the slave {slave_addr}: {time.monotonic() - started:.1f} s")


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
        extra_conf=("brokerRole=SLAVE", "brokerId=1", "slaveReadEnable=true"),
    )
    (tmp_path / "ref").mkdir()
    try:
        master.start()
        servers.start_broker()
        create_topic(master.addr, TOPIC)
        create_topic(servers.broker_addr, TOPIC)  # its metadata sync would take 60 s
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
        assert_slave_serves_all(servers.broker_addr)
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
                "slaveReadEnable": "true",
                "mappedFileSizeCommitLog": str(COMMIT_LOG_FILE_SIZE),
                "haMasterAddress": f"127.0.0.1:{servers.broker_port + 1}",
            },
        )
        create_topic(servers.broker_addr, TOPIC)  # before the slave, whose first sync copies it
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
        assert_slave_serves_all(slave.addr)
    finally:
        if slave is not None:
            slave.stop()
        servers.stop(kill=True)
        stop(namesrv)
