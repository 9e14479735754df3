"""The ``kill -9`` loop on a classic SYNC_MASTER/slave pair of our brokers (``inSyncReplicas=2``):
concurrent senders against the master, which is SIGKILLed at a random moment and its store
deleted; every send acknowledged SUCCESS must then be served by the slave.

Classic HA has no automatic failover (``enableSlaveActingMaster`` is not implemented), so the
harness does what an operator does: it stops the slave and starts its store again as the
SYNC_MASTER (``brokerRole=SYNC_MASTER``, ``brokerId=0``) on the master's address, and starts an
empty slave on the deleted store's path, which copies the whole commit log (one file: an empty
slave starts at the master's last file). The next cycle kills that master.
"""

from __future__ import annotations

import random
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from codec.codes import ResponseCode
from compat_tests.ha_pairs import wait_replicated
from compat_tests.reference import BROKER_PORT_OFFSETS
from gateway.testing.ports import free_port
from tests.broker.ha_process import Server
from tests.fault.helpers import create_topic_command
from tests.fault.kill_loop import send_until_stopped
from tests.fault.wire import BlockingClient, pull_bodies

BROKER_NAME = "ha-kill"
FILE_SIZE = 64 * 1024 * 1024  # one commit-log file: a new slave copies everything
MASTER_CONF = {
    "brokerRole": "SYNC_MASTER",
    "brokerId": "0",
    "inSyncReplicas": "2",
    "slaveTimeout": "3000",
    "mappedFileSizeCommitLog": str(FILE_SIZE),
}
SLAVE_CONF = {
    "brokerRole": "SLAVE",
    "brokerId": "1",
    "slaveReadEnable": "true",
    "mappedFileSizeCommitLog": str(FILE_SIZE),
}
CATCH_UP_S = 60.0
VERIFY_S = 10.0  # the slave dispatches before it acks; the poll only absorbs scheduling delays


@dataclass
class HaKillResult:
    cycles: int = 0
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0


class PairProcesses:
    """The namesrv, the master and the slave processes; stores alternate between two paths."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.namesrv = Server(root, "namesrv", ["namesrv", "--namesrv-port", "0"])
        self.ports = (free_port(offsets=BROKER_PORT_OFFSETS), free_port(offsets=BROKER_PORT_OFFSETS))
        self.stores = [root / "store-a", root / "store-b"]
        self.master: Server | None = None
        self.slave: Server | None = None
        self.starts = 0

    @property
    def master_addr(self) -> str:
        return f"127.0.0.1:{self.ports[0]}"

    @property
    def slave_addr(self) -> str:
        return f"127.0.0.1:{self.ports[1]}"

    def broker(self, conf: dict[str, str], store: Path, port: int) -> Server:
        self.starts += 1
        name = f"broker{self.starts}"
        path = self.root / f"{name}.conf"
        path.write_text("".join(f"{k}={v}\n" for k, v in {"brokerName": BROKER_NAME, **conf}.items()))
        argv = ["broker", "-c", str(path), "--broker-port", str(port), "--no-grpc", "--store", str(store)]
        server = Server(self.root, name, [*argv, "--namesrv-addr", self.namesrv.addr])
        server.start()
        return server

    def start_master(self) -> None:
        self.master = self.broker(MASTER_CONF, self.stores[0], self.ports[0])

    def start_slave(self) -> None:
        self.slave = self.broker(SLAVE_CONF, self.stores[1], self.ports[1])

    def destroy_master(self) -> None:
        """kill -9 the master and delete its store."""
        assert self.master is not None
        self.master.kill()
        shutil.rmtree(self.stores[0])

    def promote(self) -> None:
        """Stop the slave and start its store as the master, and an empty slave."""
        assert self.slave is not None
        self.slave.stop()
        self.stores.reverse()
        self.start_master()
        self.start_slave()

    def stop(self) -> None:
        for server in (self.slave, self.master, self.namesrv):
            if server is not None:
                server.kill()


def _missing(address: str, topics: list[str], acked: dict[str, list[bytes]]) -> list[str]:
    with BlockingClient(address) as client:
        lost: list[str] = []
        for topic in topics:
            stored = set(pull_bodies(client, topic, 0))
            lost += [b.decode() for b in acked[topic] if b not in stored]
    return lost


def run_ha_kill_loop(
    root: Path, cycles: int, senders: int = 3, kill_after_s: tuple[float, float] = (0.3, 1.5), seed: int = 7
) -> HaKillResult:
    """Run ``cycles`` kill/promote cycles under ``root``; see the module docstring."""
    rng = random.Random(seed)
    started = time.monotonic()
    result = HaKillResult()
    topics = [f"HaKillT{i}" for i in range(senders)]
    acked: dict[str, list[bytes]] = {t: [] for t in topics}
    pair = PairProcesses(root)
    try:
        pair.namesrv.start()
        pair.start_master()
        with BlockingClient(pair.master_addr) as admin:
            for topic in topics:
                created = admin.invoke(create_topic_command(topic, "1", "1"), 10)
                assert created.code == ResponseCode.SUCCESS, created.remark
        pair.start_slave()  # its first metadata sync copies the topics
        for cycle in range(cycles):
            wait_replicated(pair.master_addr, CATCH_UP_S)
            stop = threading.Event()
            threads = [
                threading.Thread(
                    target=send_until_stopped,
                    args=(pair.master_addr, t, f"c{cycle}s{i}", acked[t], stop),
                    daemon=True,
                )
                for i, t in enumerate(topics)
            ]
            for t in threads:
                t.start()
            time.sleep(rng.uniform(*kill_after_s))
            pair.destroy_master()
            stop.set()
            for t in threads:
                t.join(30)
            result.cycles += 1
            result.acknowledged = sum(len(v) for v in acked.values())
            deadline = time.monotonic() + VERIFY_S
            while (lost := _missing(pair.slave_addr, topics, acked)) and time.monotonic() < deadline:
                time.sleep(0.2)
            if lost:
                result.lost = lost
                break
            pair.promote()
    finally:
        pair.stop()
        result.elapsed_s = time.monotonic() - started
    return result
