"""The reference Apache RocketMQ 5.3.3 NameServer and Broker laid out for recording golden vectors.

An adapter over the Maven Central jars that ``compat_tests/reference.py`` resolves (its
``REFERENCE_LIB``), with the few knobs the recorder needs and the plain launcher does not expose:

* the servers' own serialize type (``-Drocketmq.serialize.type``): a Java server answers in its
  configured type, not the request's (spec 1.5), so ROCKETMQ responses need ROCKETMQ servers;
* the broker's ``bindAddress`` (``NettyServerConfig``, loaded from broker.conf) apart from the
  ``brokerIP1`` it registers, so a recording proxy can listen on the advertised address
  (e.g. 127.0.0.2) while the broker binds 127.0.0.1 or ``::1`` on the same port;
* the store directory, read back after the broker stopped.

Everything listens on loopback only; every process is stopped by :meth:`ReferenceServers.stop`.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from compat_tests.reference import REFERENCE_LIB, wait_routed

BOOT_TIMEOUT_S = 90.0  # namesrv or broker "boot success"
STOP_TIMEOUT_S = 60.0  # the 5.3.3 broker takes ~20 s to stop (pop revive services)
COMMIT_LOG_FILE_SIZE = 64 * 1024 * 1024  # mappedFileSizeCommitLog: one file holds every record


def free_port(hosts: tuple[str, ...], offsets: tuple[int, ...] = (0,)) -> int:
    """A port P such that P + each offset can be bound on every host (IPv4 or IPv6 literals)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port + min(offsets) < 1024 or port + max(offsets) > 65535:
            continue
        try:
            for host in hosts:
                family = socket.AF_INET6 if ":" in host else socket.AF_INET
                for off in offsets:
                    with socket.socket(family) as probe:
                        probe.bind((host, port + off))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port")


@dataclass
class ReferenceServers:
    """One real NameServer and one real Broker in ``workdir``; see the module docstring."""

    workdir: Path
    serialize: str  # "JSON" or "ROCKETMQ", for both servers
    namesrv_port: int
    broker_port: int
    broker_bind: str  # NettyServerConfig.bindAddress of the broker (and of its VIP port - 2)
    broker_ip1: str  # brokerIP1: the address registered in the NameServer and stored as STOREHOST
    namesrv_addr_for_broker: str  # where the broker registers (a proxy in front of the NameServer)
    broker_name: str = "broker-a"
    extra_conf: tuple[str, ...] = ()  # more broker.conf lines
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    broker: subprocess.Popen[bytes] | None = None

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def store(self) -> Path:
        return self.workdir / "store"

    @property
    def commit_log(self) -> Path:
        return self.store / "commitlog" / f"{0:020d}"

    def _java(self, main: str, conf: Path, out: str) -> subprocess.Popen[bytes]:
        cmd = [
            "java",
            "-Xms256m",
            "-Xmx256m",
            "-XX:MaxDirectMemorySize=256m",
            f"-Drocketmq.serialize.type={self.serialize}",
            f"-Duser.home={self.workdir}",
            f"-Drocketmq.home.dir={self.workdir}",
            "-cp",
            f"{REFERENCE_LIB}/*",
            main,
            "-c",
            str(conf),
        ]
        with (self.workdir / out).open("wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def start_namesrv(self) -> None:
        """Start the NameServer on 127.0.0.1 and wait for its boot line."""
        conf = self.workdir / "namesrv.conf"
        conf.write_text(f"listenPort={self.namesrv_port}\nbindAddress=127.0.0.1\n")
        proc = self._java("org.apache.rocketmq.namesrv.NamesrvStartup", conf, "namesrv.out")
        _wait_for(self.workdir / "namesrv.out", r"boot success", proc)

    def start_broker(self) -> None:
        """Start the broker and wait for its boot line."""
        conf = self.workdir / "broker.conf"
        lines = [
            "brokerClusterName=DefaultCluster",
            f"brokerName={self.broker_name}",
            "brokerId=0",
            f"listenPort={self.broker_port}",
            f"haListenPort={self.broker_port + 1}",
            f"bindAddress={self.broker_bind}",
            f"brokerIP1={self.broker_ip1}",
            f"brokerIP2={self.broker_ip1}",
            f"namesrvAddr={self.namesrv_addr_for_broker}",
            f"storePathRootDir={self.store}",
            f"storePathCommitLog={self.store / 'commitlog'}",
            f"mappedFileSizeCommitLog={COMMIT_LOG_FILE_SIZE}",
            "autoCreateTopicEnable=true",
            # One thread for UPDATE_CONSUMER_OFFSET: 5.3.3 loses one of two concurrent *first* commits
            # of a topic@group (check-then-put in ConsumerOffsetManager.commitOffset, apache/rocketmq
            # #10700), and a push consumer's shutdown sends its first commits of all queues at once;
            # CI saw consumerProgress report a committed queue at offset 0. Ours commits on one thread.
            "consumerManageThreadPoolNums=1",
            *self.extra_conf,
            "",
        ]
        conf.write_text("\n".join(lines))
        self.broker = self._java("org.apache.rocketmq.broker.BrokerStartup", conf, "broker.out")
        _wait_for(self.workdir / "broker.out", r"boot success", self.broker)

    def wait_registered(self, timeout: float = BOOT_TIMEOUT_S) -> None:
        """Wait until the NameServer routes TBW102 to this broker: a producer started between
        "boot success" and the first registration fails with "No route info of this topic"."""
        wait_routed(self.namesrv_addr, f"{self.broker_ip1}:{self.broker_port}", timeout, self.broker)

    def stop_broker(self) -> None:
        """SIGTERM the broker (its shutdown hook flushes the store) and wait for it."""
        if self.broker is not None:
            _stop(self.broker)

    def stop(self) -> None:
        """Stop every process started here, broker first."""
        for proc in reversed(self.procs):
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _wait_for(
    path: Path, pattern: str, proc: subprocess.Popen[bytes], timeout: float = BOOT_TIMEOUT_S
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        if re.search(pattern, text):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{path.name}: exited ({proc.returncode}) before {pattern!r}:\n{text[-3000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"{pattern!r} not seen within {timeout} s in {path}")
