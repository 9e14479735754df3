"""A classic master/slave pair for the failover tests, each broker ours or the real Apache
RocketMQ 5.3.3 one, behind one interface, so a scenario runs unchanged on every combination:
start, kill -9 the master (keeping or deleting its store), restart it on the same address, kill
or restart the slave. Both brokers register to the NameServer given; the master's HA port is its
listen port + 1 and the slave learns it from its registration answer.

Plus the few remoting calls the scenarios make, each its own short connection (``trio.run``):
create a topic or a subscription group, commit an offset, send bodies (one after another, or a
burst from concurrent connections), pull everything a broker serves, ask for the HA status, for
committed consumer offsets and for a broker's whole metadata (its topics, groups and offsets).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import trio

from codec import fastjson
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.base import EmptyHeader
from codec.headers.pull import PullSysFlag
from codec.message import iter_records
from compat_tests.reference import (
    BROKER_PORT_OFFSETS,
    COMMIT_LOG_FILE_SIZE,
    ReferenceServers,
    start_gateway_namesrv,
    stop,
    topic_route,
)
from gateway.testing.ports import free_port
from gateway.transport.client import connect
from tests.broker.ha_process import Server, broker
from tests.broker.helpers import pull_request, send_request
from tests.fault.helpers import create_topic_command

BROKER_NAME = "ha-broker"
QUEUES = 4


class Broker(Protocol):
    """One broker of a pair: ours or the real one, started and killed on a fixed address."""

    addr: str
    store: Path

    def start(self) -> None: ...
    def kill(self) -> None: ...
    def stop(self) -> None: ...


class OurBroker:
    """Our broker, a ``python -m gateway.cli broker`` process storing under ``root / name``
    (64 MiB commit-log files: a pair with the real broker needs the same file size)."""

    def __init__(self, root: Path, name: str, namesrv: str, conf: dict[str, str]) -> None:
        port = free_port(offsets=BROKER_PORT_OFFSETS)
        conf = {"mappedFileSizeCommitLog": str(COMMIT_LOG_FILE_SIZE), **conf}
        self.server: Server = broker(root, name, namesrv, conf, port=port)
        self.addr = f"127.0.0.1:{port}"
        self.store = root / name

    def start(self) -> None:
        self.server.start()

    def kill(self) -> None:
        self.server.kill()

    def stop(self) -> None:
        self.server.stop()


class RealBroker:
    """The real 5.3.3 broker (a JVM, :class:`ReferenceServers`) working in ``root / name``."""

    def __init__(self, root: Path, name: str, namesrv: str, conf: dict[str, str]) -> None:
        (root / name).mkdir()
        self.servers = ReferenceServers.on_loopback(
            root / name,
            broker_name=BROKER_NAME,
            namesrv_addr_for_broker=namesrv,
            extra_conf=tuple(f"{k}={v}" for k, v in conf.items()),
        )
        self.addr = self.servers.broker_addr
        self.store = self.servers.store

    def start(self) -> None:
        self.servers.start_broker()

    def kill(self) -> None:
        broker_proc = self.servers.broker
        if broker_proc is not None:
            self.servers.expect_exit(broker_proc)
            broker_proc.kill()
            broker_proc.wait(30)

    def stop(self) -> None:
        self.servers.stop(kill=True)  # nothing reads its store afterwards


KINDS: dict[str, type[OurBroker] | type[RealBroker]] = {"ours": OurBroker, "real": RealBroker}


class Pair:
    """A master and its slave (``brokerRole=SLAVE``, ``brokerId=1``), each ``"ours"`` or ``"real"``."""

    def __init__(
        self,
        root: Path,
        namesrv: str,
        kinds: tuple[str, str],
        master_conf: dict[str, str],
        slave_conf: dict[str, str],
    ) -> None:
        self.master: Broker = KINDS[kinds[0]](root, "master", namesrv, master_conf)
        conf = {**slave_conf, "brokerRole": "SLAVE", "brokerId": "1"}
        self.slave: Broker = KINDS[kinds[1]](root, "slave", namesrv, conf)
        self.master_addr = self.master.addr
        self.slave_addr = self.slave.addr

    def kill_master(self, *, destroy_store: bool = False) -> None:
        self.master.kill()
        if destroy_store:
            shutil.rmtree(self.master.store)

    def start_master(self) -> None:
        self.master.start()

    def kill_slave(self) -> None:
        self.slave.kill()

    def start_slave(self) -> None:
        self.slave.start()

    def stop(self) -> None:
        self.slave.stop()
        self.master.stop()


@dataclass
class PairEnv:
    """A running pair, the address of the NameServer it registers to, and the test's directory."""

    pair: Pair
    namesrv: str
    root: Path


@contextmanager
def running_pair(
    root: Path,
    kinds: tuple[str, str],
    topic: str,
    master_conf: dict[str, str],
    slave_conf: dict[str, str],
    timeout_s: float = 60.0,
) -> Iterator[PairEnv]:
    """Our NameServer and a pair of ``kinds`` with ``topic`` on both brokers, the slave connected
    and caught up; everything is stopped on exit."""
    namesrv, naddr = start_gateway_namesrv(root)
    pair = Pair(root, naddr, kinds, master_conf, slave_conf)
    try:
        pair.start_master()
        create_topic(pair.master_addr, topic)
        # The topic exists on the master first: a slave's metadata sync deletes the topics its
        # master does not have (ours syncs on learning its master, the real one after 60 s).
        pair.start_slave()
        create_topic(pair.slave_addr, topic)  # as mqadmin updateTopic -b: no wait for that sync
        wait_route(naddr, topic, {0: pair.master_addr, 1: pair.slave_addr}, timeout_s)
        wait_replicated(pair.master_addr, timeout_s)  # connected: a SYNC_MASTER send waits for it
        yield PairEnv(pair, naddr, root)
    finally:
        pair.stop()
        stop(namesrv)


def invoke(addr: str, request: RemotingCommand, timeout_s: float = 10) -> RemotingCommand:
    async def run() -> RemotingCommand:
        async with connect(addr) as conn:
            return await conn.invoke(request, timeout_s)

    return trio.run(run)


def create_topic(addr: str, topic: str) -> None:
    """UPDATE_AND_CREATE_TOPIC with :data:`QUEUES` queues (as ``mqadmin updateTopic -b addr``)."""
    resp = invoke(addr, create_topic_command(topic, str(QUEUES), str(QUEUES)))
    assert resp.code == ResponseCode.SUCCESS, resp.remark


def create_group(addr: str, group: str, retry_max_times: int) -> None:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP with a ``SubscriptionGroupConfig`` body."""
    config = {"groupName": group, "consumeEnable": True, "retryMaxTimes": retry_max_times}
    request = RemotingCommand.request(
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, EmptyHeader(), body=json.dumps(config).encode()
    )
    resp = invoke(addr, request)
    assert resp.code == ResponseCode.SUCCESS, resp.remark


def commit_offset(addr: str, group: str, topic: str, queue_id: int, offset: int) -> None:
    """UPDATE_CONSUMER_OFFSET, as a consumer's offset store sends it."""
    fields = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id), "commitOffset": str(offset)}
    resp = invoke(addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, fields))
    assert resp.code == ResponseCode.SUCCESS, resp.remark


@dataclass
class Metadata:
    """A broker's tables as its GET_ALL_TOPIC_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG and
    GET_ALL_CONSUMER_OFFSET answers give them (offsets: ``topic@group`` -> queue id -> offset)."""

    topics: dict[str, dict[str, object]]
    groups: dict[str, dict[str, object]]
    offsets: dict[str, dict[int, int]]


def metadata(addr: str) -> Metadata:
    """The three tables of the broker at ``addr``, on one connection."""

    async def run() -> list[dict[str, Any]]:
        docs = []
        async with connect(addr) as conn:
            for code in (
                RequestCode.GET_ALL_TOPIC_CONFIG,
                RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
                RequestCode.GET_ALL_CONSUMER_OFFSET,
            ):
                resp = await conn.invoke(RemotingCommand.request(code, EmptyHeader()), 10)
                assert resp.code == ResponseCode.SUCCESS, resp.remark
                doc = fastjson.loads(resp.body)
                assert isinstance(doc, dict)
                docs.append(doc)
        return docs

    topics, groups, offsets = trio.run(run)
    return Metadata(
        topics=dict(topics.get("topicConfigTable") or {}),
        groups=dict(groups.get("subscriptionGroupTable") or {}),
        offsets={
            str(key): {int(q): int(o) for q, o in table.items()}
            for key, table in (offsets.get("offsetTable") or {}).items()
        },
    )


def send_bodies(addr: str, topic: str, bodies: list[bytes]) -> list[int]:
    """Send each body to queue ``i % QUEUES`` on one connection; the response code of each."""

    async def run() -> list[int]:
        async with connect(addr) as conn:
            return [
                (await conn.invoke(send_request(topic, body, queue_id=i % QUEUES), 10)).code
                for i, body in enumerate(bodies)
            ]

    return trio.run(run)


def send_burst(addr: str, topic: str, tasks: int, each: int) -> list[bytes]:
    """``tasks`` connections sending ``each`` messages side by side (task ``t`` to queue
    ``t % QUEUES``); the bodies answered SUCCESS."""
    acked: list[bytes] = []

    async def sender(task: int) -> None:
        async with connect(addr) as conn:
            for i in range(each):
                body = f"burst-{task}-{i}".encode()
                resp = await conn.invoke(send_request(topic, body, queue_id=task % QUEUES), 10)
                if resp.code == ResponseCode.SUCCESS:
                    acked.append(body)

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            for task in range(tasks):
                nursery.start_soon(sender, task)

    trio.run(run)
    return acked


def served_bodies(addr: str, topic: str) -> set[bytes]:
    """Every body a pull from offset 0 of each queue returns (a slave needs ``slaveReadEnable``)."""

    async def run() -> set[bytes]:
        found: set[bytes] = set()
        async with connect(addr) as conn:
            for queue_id in range(QUEUES):
                offset = 0
                while True:
                    pull = pull_request(topic, offset, queue_id, suspend_ms=0, flags=PullSysFlag.SUBSCRIPTION)
                    resp = await conn.invoke(pull, 10)
                    if resp.code != ResponseCode.SUCCESS:
                        break
                    bodies = [r.body for r in iter_records(resp.body)]
                    found.update(bodies)
                    offset += len(bodies)
        return found

    return trio.run(run)


def wait_served(addr: str, topic: str, want: list[bytes], timeout_s: float) -> None:
    """Poll :func:`served_bodies` until it holds every body of ``want`` (a real slave dispatches
    what it appended on its own thread)."""
    deadline = time.monotonic() + timeout_s
    while missing := set(want) - served_bodies(addr, topic):
        assert time.monotonic() < deadline, f"{len(missing)} of {len(want)} not served by {addr}"
        time.sleep(0.2)


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
