"""A classic master/slave pair for the failover tests, ours or the real Apache RocketMQ 5.3.3 one,
behind one interface, so a scenario runs unchanged on both: start, kill -9 the master (keeping
or deleting its store), restart it on the same address, kill or restart the slave. Both pairs
register to the NameServer given; the master's HA port is its listen port + 1 and the slave
learns it from its registration answer.

Plus the few remoting calls the scenarios make, each its own short connection (``trio.run``):
create a topic, send bodies, ask for the HA status and for committed consumer offsets.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Protocol

import trio

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.base import EmptyHeader
from compat_tests.reference import BROKER_PORT_OFFSETS, ReferenceServers, topic_route
from gateway.testing.ports import free_port
from gateway.transport.client import connect
from tests.broker.ha_process import Server, broker
from tests.broker.helpers import send_request
from tests.fault.helpers import create_topic_command

BROKER_NAME = "ha-broker"
QUEUES = 4


class Pair(Protocol):
    """What a scenario needs of a master/slave pair."""

    master_addr: str
    slave_addr: str

    def kill_master(self, *, destroy_store: bool = False) -> None: ...
    def start_master(self) -> None: ...
    def kill_slave(self) -> None: ...
    def start_slave(self) -> None: ...
    def stop(self) -> None: ...


class OurPair:
    """Our broker as master and as slave, each a ``python -m gateway.cli broker`` process."""

    def __init__(
        self, root: Path, namesrv: str, master_conf: dict[str, str], slave_conf: dict[str, str]
    ) -> None:
        self.root = root
        port = free_port(offsets=BROKER_PORT_OFFSETS)
        self.master: Server = broker(root, "master", namesrv, master_conf, port=port)
        conf = {**slave_conf, "brokerRole": "SLAVE", "brokerId": "1"}
        self.slave: Server = broker(root, "slave", namesrv, conf, port=free_port(offsets=BROKER_PORT_OFFSETS))
        self.master_addr = f"127.0.0.1:{port}"
        self.slave_addr = ""

    def kill_master(self, *, destroy_store: bool = False) -> None:
        self.master.kill()
        if destroy_store:
            shutil.rmtree(self.root / "master")

    def start_master(self) -> None:
        self.master.start()

    def kill_slave(self) -> None:
        self.slave.kill()

    def start_slave(self) -> None:
        self.slave.start()
        self.slave_addr = self.slave.addr

    def stop(self) -> None:
        self.slave.stop()
        self.master.stop()


class RealPair:
    """The real 5.3.3 broker as master and as slave (two JVMs, :class:`ReferenceServers`)."""

    def __init__(
        self, root: Path, namesrv: str, master_conf: dict[str, str], slave_conf: dict[str, str]
    ) -> None:
        def servers(name: str, conf: dict[str, str]) -> ReferenceServers:
            (root / name).mkdir()
            return ReferenceServers.on_loopback(
                root / name,
                broker_name=BROKER_NAME,
                namesrv_addr_for_broker=namesrv,
                extra_conf=tuple(f"{k}={v}" for k, v in conf.items()),
            )

        self.master = servers("master", master_conf)
        self.slave = servers("slave", {**slave_conf, "brokerRole": "SLAVE", "brokerId": "1"})
        self.master_addr = self.master.broker_addr
        self.slave_addr = self.slave.broker_addr

    def kill_master(self, *, destroy_store: bool = False) -> None:
        _kill(self.master)
        if destroy_store:
            shutil.rmtree(self.master.store)

    def start_master(self) -> None:
        self.master.start_broker()

    def kill_slave(self) -> None:
        _kill(self.slave)

    def start_slave(self) -> None:
        self.slave.start_broker()

    def stop(self) -> None:
        self.slave.stop(kill=True)
        self.master.stop(kill=True)


def _kill(servers: ReferenceServers) -> None:
    if servers.broker is not None:
        servers.expect_exit(servers.broker)
        servers.broker.kill()
        servers.broker.wait(30)


def invoke(addr: str, request: RemotingCommand, timeout_s: float = 10) -> RemotingCommand:
    async def run() -> RemotingCommand:
        async with connect(addr) as conn:
            return await conn.invoke(request, timeout_s)

    return trio.run(run)


def create_topic(addr: str, topic: str) -> None:
    """UPDATE_AND_CREATE_TOPIC with :data:`QUEUES` queues (as ``mqadmin updateTopic -b addr``)."""
    resp = invoke(addr, create_topic_command(topic, str(QUEUES), str(QUEUES)))
    assert resp.code == ResponseCode.SUCCESS, resp.remark


def send_bodies(addr: str, topic: str, bodies: list[bytes]) -> list[int]:
    """Send each body to queue ``i % QUEUES`` on one connection; the response code of each."""

    async def run() -> list[int]:
        async with connect(addr) as conn:
            return [
                (await conn.invoke(send_request(topic, body, queue_id=i % QUEUES), 10)).code
                for i, body in enumerate(bodies)
            ]

    return trio.run(run)


def ha_status(addr: str) -> dict[str, object]:
    request = RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS, EmptyHeader())
    status = json.loads(invoke(addr, request).body)
    assert isinstance(status, dict)
    return status


def wait_replicated(master_addr: str, timeout_s: float) -> int:
    """Wait until the master's one slave has acked its whole commit log; returns that offset."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = ha_status(master_addr)
        conns = status["haConnectionInfo"]
        end = status["masterCommitLogMaxOffset"]
        assert isinstance(conns, list)
        assert isinstance(end, int)
        if conns and conns[0]["slaveAckOffset"] == end:
            return end
        assert time.monotonic() < deadline, status
        time.sleep(0.2)


def committed_offsets(addr: str, group: str, topic: str) -> dict[int, int | None]:
    """QUERY_CONSUMER_OFFSET of each queue (``None``: not found or unreachable)."""
    found: dict[int, int | None] = {}
    for queue_id in range(QUEUES):
        fields = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}
        try:
            resp = invoke(addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, fields), 5)
        except (OSError, RocketMQError, trio.TooSlowError):
            found[queue_id] = None
            continue
        offset = (resp.ext_fields or {}).get("offset")
        found[queue_id] = int(offset) if resp.code == ResponseCode.SUCCESS and offset is not None else None
    return found


def wait_offsets(addr: str, group: str, topic: str, want: dict[int, int], timeout_s: float) -> None:
    """Poll :func:`committed_offsets` at ``addr`` until it is ``want``."""
    deadline = time.monotonic() + timeout_s
    while (seen := committed_offsets(addr, group, topic)) != want:
        assert time.monotonic() < deadline, f"{addr}: offsets {seen}, expected {want}"
        time.sleep(0.5)


def wait_route(namesrv: str, topic: str, addrs: dict[int, str], timeout_s: float) -> None:
    """Poll the NameServer until ``topic``'s route names exactly ``addrs`` (broker id -> address)
    for the pair, with queues to read."""
    deadline = time.monotonic() + timeout_s
    while True:
        route = topic_route(namesrv, topic)
        seen = {b.broker_name: b.broker_addrs for b in route.broker_datas} if route else {}
        if seen.get(BROKER_NAME) == addrs and route is not None and route.queue_datas:
            return
        assert time.monotonic() < deadline, f"route of {topic}: {seen}, expected {addrs}"
        time.sleep(0.2)
