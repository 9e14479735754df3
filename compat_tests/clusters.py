"""A cluster of one NameServer and two brokers (``broker-a``, ``broker-b``) as local processes,
ours or the real Apache RocketMQ 5.3.3's, for the suites that need more than one broker
(``test_cluster.py``, ``test_spark_network_compat.py``).

* :class:`GatewayCluster`: one ``rmq-gateway namesrv`` and two ``rmq-gateway broker -c ...``
  (distinct brokerName, ports and stores, SYNC_FLUSH), the layout of ``docker/compose.yaml``.
* :class:`ReferenceCluster`: the real NameServer and two real brokers from
  :mod:`compat_tests.reference`'s launcher, the second broker registering to the first one's
  NameServer.

A broker stopped (SIGTERM: it unregisters and flushes) or killed (SIGKILL) is started again on its
own store with ``start_broker``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from compat_tests.reference import ReferenceServers, free_port, run_mqadmin
from gateway.testing.probe import wait_ready

REPO = Path(__file__).resolve().parent.parent
BROKERS = ("broker-a", "broker-b")
READY_S = 60.0  # the real 5.3.3 broker registers seconds after "boot success"
STOP_S = 20.0


class Cluster(Protocol):
    @property
    def namesrv_addr(self) -> str: ...

    def start_broker(self, name: str) -> None: ...

    def kill(self, name: str) -> None: ...

    def stop_broker(self, name: str) -> None: ...

    def is_running(self, name: str) -> bool: ...

    def stop(self) -> None: ...


@dataclass
class GatewayCluster:
    """One ``rmq-gateway namesrv`` and two ``rmq-gateway broker`` subprocesses in ``workdir``;
    every one listens on 127.0.0.1."""

    workdir: Path
    namesrv_port: int = field(default_factory=lambda: free_port(("127.0.0.1",)))
    broker_ports: dict[str, int] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: The NameServer's HTTP control endpoint (its route faults), when a port is given.
    control_port: int | None = None

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    def _spawn(self, name: str, argv: list[str]) -> None:
        with (self.workdir / f"{name}.log").open("ab") as log:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "gateway.cli", *argv],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env={**os.environ, "HOME": str(self.workdir)},
            )

    def start_namesrv(self) -> None:
        conf = self.workdir / "namesrv.conf"
        conf.write_text(f"kvConfigPath={self.workdir / 'kvConfig.json'}\n")
        argv = ["namesrv", "--namesrv-port", str(self.namesrv_port), "-c", str(conf)]
        if self.control_port is not None:
            argv += ["--control-port", str(self.control_port)]
        self._spawn("namesrv", argv)

    def start_broker(self, name: str) -> None:
        port = self.broker_ports.setdefault(name, free_port(("127.0.0.1",), offsets=(-2, 0)))  # VIP at - 2
        conf = self.workdir / f"{name}.conf"
        conf.write_text(
            f"brokerClusterName=DefaultCluster\nbrokerName={name}\nbrokerId=0\nbrokerIP1=127.0.0.1\n"
            f"listenPort={port}\nflushDiskType=SYNC_FLUSH\nmappedFileSizeCommitLog={64 * 1024 * 1024}\n"
        )
        self._spawn(
            name,
            [
                "broker",
                "--broker-port",
                str(port),
                "--grpc-port",
                "0",
                "--store",
                str(self.workdir / name),
                "--namesrv-addr",
                self.namesrv_addr,
                "-c",
                str(conf),
            ],
        )

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def stop_broker(self, name: str) -> None:
        """SIGTERM: the broker unregisters from the NameServer, flushes its store and exits."""
        proc = self.procs[name]
        proc.terminate()
        proc.wait(STOP_S)

    def is_running(self, name: str) -> bool:
        proc = self.procs.get(name)
        return proc is not None and proc.poll() is None

    def stop(self) -> None:
        for proc in reversed(list(self.procs.values())):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(STOP_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


class ReferenceCluster:
    """The real NameServer with broker-a (one ``ReferenceServers``) and a real broker-b
    registering to it (a second one, its NameServer unused), SYNC_FLUSH as ours."""

    def __init__(self, workdir: Path) -> None:
        conf = ("flushDiskType=SYNC_FLUSH",)
        self.a = ReferenceServers.on_loopback(workdir / "a", broker_name="broker-a", extra_conf=conf)
        self.b = ReferenceServers.on_loopback(
            workdir / "b",
            broker_name="broker-b",
            extra_conf=conf,
            namesrv_addr_for_broker=self.a.namesrv_addr,
        )
        self.servers = {"broker-a": self.a, "broker-b": self.b}
        for servers in self.servers.values():
            servers.workdir.mkdir(parents=True)
        self.a.start_namesrv()

    @property
    def namesrv_addr(self) -> str:
        return self.a.namesrv_addr

    def start_broker(self, name: str) -> None:
        self.servers[name].start_broker()

    def kill(self, name: str) -> None:
        broker = self.servers[name].broker
        assert broker is not None
        broker.kill()
        broker.wait(10)

    def stop_broker(self, name: str) -> None:
        self.servers[name].stop_broker()

    def is_running(self, name: str) -> bool:
        broker = self.servers[name].broker
        return broker is not None and broker.poll() is None

    def stop(self) -> None:
        """The end of the cluster: nothing reads its stores afterwards, so it is killed (a
        graceful stop of each 5.3.3 broker took ~20 s)."""
        self.b.stop(kill=True)
        self.a.stop(kill=True)


def start_cluster(kind: str, workdir: Path) -> Cluster:
    if kind == "reference":
        return ReferenceCluster(workdir)
    gateway = GatewayCluster(workdir)
    gateway.start_namesrv()
    return gateway


@contextmanager
def running_cluster(kind: str, workdir: Path) -> Iterator[Cluster]:
    """``kind`` ("gateway" or "reference") with both brokers registered; stopped on exit."""
    workdir.mkdir(parents=True)
    started = start_cluster(kind, workdir)
    try:
        for name in BROKERS:
            started.start_broker(name)
        wait_ready(started.namesrv_addr, READY_S, min_brokers=2)
        yield started
    finally:
        started.stop()


def create_topic(cluster: Cluster, topic: str, home: Path, queues: int = 8) -> None:
    """``mqadmin updateTopic -c DefaultCluster``: ``queues`` read and write queues on each broker."""
    out = run_mqadmin(
        cluster.namesrv_addr, "updateTopic", "-c", "DefaultCluster", "-t", topic,
        "-r", str(queues), "-w", str(queues), home=home,
    )  # fmt: skip
    assert out.count("create topic to") == 2, out
    wait_routed_on(cluster, topic, BROKERS)


def wait_routed_on(cluster: Cluster, topic: str, brokers: tuple[str, ...]) -> None:
    """Until the NameServer routes ``topic`` to exactly ``brokers`` (each registers on its own)."""
    deadline = time.monotonic() + READY_S
    while True:
        routed = wait_ready(cluster.namesrv_addr, READY_S, topic=topic).topic_brokers
        if set(routed) == set(brokers):
            return
        assert time.monotonic() < deadline, f"{topic} routed on {routed}, not {brokers}"
        time.sleep(0.2)
