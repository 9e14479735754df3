"""The one launcher of the real Apache RocketMQ servers (Maven Central jars), plus the processes
the compatibility tests start next to them: ``mqadmin``, the capture client and our own NameServer
CLI. The reference is 5.3.3; 5.5.0 is the second version (``version="5.5.0"``, :data:`REFERENCE_LIBS`),
whose Proxy runs in cluster mode beside its broker (:meth:`ReferenceServers.start_cluster_proxy`).

Every Java server is started by :class:`ReferenceServers`: a temporary ``user.home`` (RocketMQ
writes logs and config there), a 256 MiB heap with up to 1 GiB of direct memory, free loopback
ports, and one broker setting that differs from the defaults (``consumerManageThreadPoolNums=1``,
see :meth:`ReferenceServers.start_broker`). Processes are stopped with SIGTERM, then SIGKILL.

A reference server that fails quietly would make a comparison pass or fail for the wrong reason,
so :func:`reference_failures` reports every running instance's ``OutOfMemoryError`` (in its
console output or its RocketMQ logs) and every process of it that exited without being stopped
here; the compat suites' conftest fails the test during which that happened, naming the file.

``compat_tests/java/README.md`` lists the exact artifacts; ``scripts/setup-java.sh`` resolves
them into :data:`REFERENCE_LIB` (5.3.3) and ``reference55/target/lib`` (5.5.0).

:func:`start_reference_namesrv` and :func:`start_reference_broker` are shorthands for tests that
start the two servers separately (e.g. a broker registering to ours and the real NameServer).
"""

from __future__ import annotations

import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from codec.bodies.route import TopicRouteData
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from compat_tests.scenario import CLIENT_LINES, JAVA_DIR, TEST_JVM_OPTIONS
from gateway.testing.ports import free_port
from gateway.transport.client import connect
from gateway.transport.tls_config import TlsSystemConfig, client_context

__all__ = [
    "BOOT_TIMEOUT_S",
    "CLIENT_LINES",
    "COMMIT_LOG_FILE_SIZE",
    "JAVA_DIR",
    "REFERENCE_LIB",
    "REFERENCE_LIBS",
    "STOP_TIMEOUT_S",
    "ReferenceServers",
    "free_port",
    "reference_failures",
    "run_capture",
    "run_mqadmin",
    "start_gateway_namesrv",
    "start_reference_broker",
    "start_reference_namesrv",
    "stop",
    "topic_route",
    "wait_routed",
    "write_tools_yml",
]

REFERENCE_LIB = JAVA_DIR / "reference" / "target" / "lib"
#: The jars of each reference version (``compat_tests/java/reference*/pom.xml``).
REFERENCE_LIBS = {"5.3.3": REFERENCE_LIB, "5.5.0": JAVA_DIR / "reference55" / "target" / "lib"}
BOOT_TIMEOUT_S = 90.0  # namesrv or broker "boot success" (JVM start-up on a busy 2-core machine)
STOP_TIMEOUT_S = 60.0  # the 5.3.3 broker takes ~20 s to stop (pop revive services)
GATEWAY_READY_TIMEOUT_S = 20.0  # our NameServer's "ready" line
SERVER_HEAP_MB = 256  # -Xms/-Xmx of each reference server
# -XX:MaxDirectMemorySize: a cap, not a reservation. Each thread that writes the commit log keeps a
# direct encode buffer of maxMessageSize (4 MiB, CommitLog.PutMessageThreadLocal): the send pool,
# the 18 delay-level deliverers and the timer threads, besides Netty's pooled arenas; with 256 MiB
# the schedule service ran out ("OutOfMemoryError: Direct buffer memory") in long sessions.
SERVER_DIRECT_MB = 1024
OOM_MARK = b"OutOfMemoryError"
_RUNNING: list[ReferenceServers] = []  # instances with processes started and not stopped here
COMMIT_LOG_FILE_SIZE = 64 * 1024 * 1024  # mappedFileSizeCommitLog: one file holds every record
# The broker's extra ports relative to listenPort (BrokerStartup): the VIP channel at P - 2
# (NettyServerConfig's fast port) and haListenPort, set here to P + 1.
BROKER_PORT_OFFSETS = (-2, 0, 1)


def topic_route(
    namesrv_addr: str, topic: str = "TBW102", tls: ssl.SSLContext | None = None
) -> TopicRouteData | None:
    """The route a NameServer gives for ``topic`` (asked directly: milliseconds, unlike an
    ``mqadmin`` JVM), over TLS with ``tls``; ``None`` when it is unreachable or knows no route."""

    async def ask() -> TopicRouteData | None:
        try:
            async with connect(namesrv_addr, tls=tls) as conn:
                request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
                response = await conn.invoke(request, 5)
        except (OSError, RocketMQError):
            return None
        if response.code != ResponseCode.SUCCESS or not response.body:
            return None
        return TopicRouteData.decode(response.body)

    return trio.run(ask)


def wait_routed(
    namesrv_addr: str,
    broker_addr: str,
    timeout: float,
    broker: subprocess.Popen[Any] | None = None,
    tls: ssl.SSLContext | None = None,
) -> None:
    """Wait until the NameServer routes TBW102 to ``broker_addr``: the broker has registered there.

    A real broker logs "boot success" before its first registration, and registers only to the
    NameServers its client's scan thread already found reachable, so one of several may see it
    only at the next periodic registration. Fails early if ``broker`` exits.
    """
    deadline = time.monotonic() + timeout
    while True:
        route = topic_route(namesrv_addr, tls=tls)
        if route and any(broker_addr in b.broker_addrs.values() for b in route.broker_datas):
            return
        if broker is not None and broker.poll() is not None:
            raise RuntimeError(f"broker exited ({broker.returncode}) before registering at {namesrv_addr}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"broker {broker_addr} not routed by {namesrv_addr} within {timeout} s")
        time.sleep(0.2)


def stop(proc: subprocess.Popen[Any], timeout: float = 15) -> None:
    """SIGTERM ``proc``, SIGKILL it after ``timeout`` seconds, and reap it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def wait_for_line(path: Path, pattern: str, proc: subprocess.Popen[Any], timeout: float) -> str:
    """The first match of ``pattern`` in the file ``path`` (a process's log), polled until
    ``timeout``; fails at once when ``proc`` exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        match = re.search(pattern, text)
        if match:
            return match.group(0)
        if proc.poll() is not None:
            raise RuntimeError(f"{path.name}: exited ({proc.returncode}) before {pattern!r}:\n{text[-3000:]}")
        time.sleep(0.1)
    raise TimeoutError(f"{pattern!r} not seen within {timeout} s in {path}")


def start_gateway_namesrv(
    workdir: Path, conf: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """Our NameServer through the real CLI (``conf``: namesrv.conf keys); returns it and its address."""
    log = workdir / "gateway-namesrv.log"
    args = [sys.executable, "-m", "gateway.cli", "namesrv", "--namesrv-port", "0"]
    if conf:
        conf_file = workdir / "gateway-namesrv.conf"
        conf_file.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
        args += ["-c", str(conf_file)]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
        env={**os.environ, "HOME": str(workdir)},
        text=True,
    )
    line = wait_for_line(log, r"ready: namesrv=\S+", proc, GATEWAY_READY_TIMEOUT_S)
    return proc, line.split("=", 1)[1]


@dataclass(eq=False)
class ReferenceServers:
    """One real NameServer and one real Broker in ``workdir``, started on demand.

    The knobs beyond a plain loopback pair serve the golden-vector recorder: the servers' own
    serialize type (a Java server answers in its configured type, not the request's, so
    ROCKETMQ-serialized responses need ROCKETMQ servers); the broker's ``bindAddress``
    (``NettyServerConfig``) apart from the ``brokerIP1`` it registers, so a recording proxy can
    listen on the advertised address; and where the broker registers (a proxy in front of the
    NameServer, or several NameServers separated by ``;``). :meth:`on_loopback` covers the rest.
    """

    workdir: Path
    serialize: str  # "JSON" or "ROCKETMQ", for both servers
    namesrv_port: int
    broker_port: int
    broker_bind: str  # NettyServerConfig.bindAddress of the broker (and of its VIP port - 2)
    broker_ip1: str  # brokerIP1: the address registered in the NameServer and stored as STOREHOST
    namesrv_addr_for_broker: str  # where the broker registers (a proxy in front of the NameServer)
    broker_name: str = "broker-a"
    extra_conf: tuple[str, ...] = ()  # more broker.conf lines
    checks_exits: bool = False  # an exit not asked through stop/expect_exit fails the test
    #: JVM system properties of both servers (``-Dtls.server.mode=enforcing``: TlsSystemConfig).
    system_properties: tuple[str, ...] = ()
    #: The NameServer with :data:`TEST_JVM_OPTIONS` (its start-up CPU fell from 5.3 s to 3.0 s;
    #: the broker's did not, so it keeps the JVM's defaults); benchmarks set ``False``.
    test_jvm: bool = True
    version: str = "5.3.3"  # a key of REFERENCE_LIBS
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    broker: subprocess.Popen[bytes] | None = None
    outputs: dict[int, Path] = field(default_factory=dict)  # console file of each process, by pid
    stopped: set[int] = field(default_factory=set)  # pids stopped on purpose (stop, stop_broker)
    scanned: dict[Path, int] = field(default_factory=dict)  # bytes of each log already searched

    @classmethod
    def on_loopback(
        cls,
        workdir: Path,
        *,
        broker_name: str = "broker-a",
        extra_conf: tuple[str, ...] = (),
        namesrv_addr_for_broker: str | None = None,
        version: str = "5.3.3",
    ) -> ReferenceServers:
        """JSON servers of ``version`` on free 127.0.0.1 ports; the broker registers to the
        NameServer here unless ``namesrv_addr_for_broker`` names others."""
        namesrv_port = free_port()
        # A send waiting over 200 ms (the default) in the broker's queue is refused with
        # "[TIMEOUT_CLEAN_QUEUE] broker busy" (BrokerFastFailure), which the 4.9.8 client does not
        # retry: on a loaded 2-core machine that sheds test sends (the local-mode Proxy's broker's
        # too); the suites check behaviour, not load shedding. ``extra_conf`` may say otherwise.
        extra_conf = ("waitTimeMillsInSendQueue=3000", *extra_conf)
        return cls(
            workdir=workdir,
            serialize="JSON",
            namesrv_port=namesrv_port,
            broker_port=free_port(offsets=BROKER_PORT_OFFSETS),
            broker_bind="127.0.0.1",
            broker_ip1="127.0.0.1",
            namesrv_addr_for_broker=namesrv_addr_for_broker or f"127.0.0.1:{namesrv_port}",
            broker_name=broker_name,
            extra_conf=extra_conf,
            version=version,
        )

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker_addr(self) -> str:
        """The address the broker registers (``brokerIP1:listenPort``)."""
        return f"{self.broker_ip1}:{self.broker_port}"

    @property
    def store(self) -> Path:
        return self.workdir / "store"

    @property
    def commit_log(self) -> Path:
        return self.store / "commitlog" / f"{0:020d}"

    def _java(
        self,
        main: str,
        conf: Path,
        out: str,
        args: tuple[str, ...] | None = None,
        jvm_options: tuple[str, ...] = (),
    ) -> subprocess.Popen[bytes]:
        """Start ``main`` with ``-c conf`` (or ``args`` in its place), its output in ``out``."""
        cmd = [
            "java",
            *jvm_options,
            f"-Xms{SERVER_HEAP_MB}m",
            f"-Xmx{SERVER_HEAP_MB}m",
            f"-XX:MaxDirectMemorySize={SERVER_DIRECT_MB}m",
            f"-Drocketmq.serialize.type={self.serialize}",
            f"-Duser.home={self.workdir}",
            f"-Drocketmq.home.dir={self.workdir}",
            *(f"-D{prop}" for prop in self.system_properties),
            "-cp",
            f"{REFERENCE_LIBS[self.version]}/*",
            main,
            *(args if args is not None else ("-c", str(conf))),
        ]
        # The Proxy looks for its home (TLS files, default config) in RMQ_PROXY_HOME. The working
        # directory is the server's own, where a crashing JVM writes its hs_err_pid*.log.
        env = {**os.environ, "RMQ_PROXY_HOME": str(self.workdir)}
        with (self.workdir / out).open("wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir)
        self.procs.append(proc)
        self.outputs[proc.pid] = self.workdir / out
        if self not in _RUNNING:
            _RUNNING.append(self)
        return proc

    def expect_exit(self, proc: subprocess.Popen[Any]) -> None:
        """Mark ``proc`` as stopped on purpose (a test killing it), not a failure."""
        self.stopped.add(proc.pid)

    def failures(self, *, exits: bool = True) -> list[str]:
        """What went wrong since the last call: an ``OutOfMemoryError`` line in a console file or a
        RocketMQ log (``user.home/logs``), and with ``exits`` a process that exited unasked. Each
        entry names its file."""
        found = []
        if exits:
            for proc in self.procs:
                if proc.pid not in self.stopped and proc.poll() is not None:
                    self.stopped.add(proc.pid)
                    found.append(f"{self.outputs[proc.pid]}: exited ({proc.returncode}) during the test")
        logs = sorted((self.workdir / "logs").rglob("*.log")) if (self.workdir / "logs").is_dir() else []
        for path in [*self.workdir.glob("*.out"), *logs]:
            found += self._scan(path)
        return found

    def _scan(self, path: Path) -> list[str]:
        try:
            size = path.stat().st_size
            start = self.scanned.get(path, 0)
            start = 0 if size < start else start  # a rolled-over log starts again
            with path.open("rb") as f:
                f.seek(start)
                data = f.read(size - start)
        except OSError:
            return []
        self.scanned[path] = start + len(data)
        return [
            f"{path}: {line.decode(errors='replace').strip()[:300]}"
            for line in data.splitlines()
            if OOM_MARK in line
        ][:3]

    def start_namesrv(self) -> subprocess.Popen[bytes]:
        """Start the NameServer on 127.0.0.1 and wait for its boot line."""
        conf = self.workdir / "namesrv.conf"
        conf.write_text(f"listenPort={self.namesrv_port}\nbindAddress=127.0.0.1\n")
        options = TEST_JVM_OPTIONS if self.test_jvm else ()
        proc = self._java("org.apache.rocketmq.namesrv.NamesrvStartup", conf, "namesrv.out", None, options)
        wait_for_line(self.workdir / "namesrv.out", r"boot success", proc, BOOT_TIMEOUT_S)
        return proc

    def start_broker(self) -> subprocess.Popen[bytes]:
        """Start the broker and wait for its boot line."""
        conf = self._write_broker_conf()
        self.broker = self._java("org.apache.rocketmq.broker.BrokerStartup", conf, "broker.out")
        wait_for_line(self.workdir / "broker.out", r"boot success", self.broker, BOOT_TIMEOUT_S)
        return self.broker

    def start_proxy(
        self, grpc_port: int, remoting_port: int, extra: Mapping[str, Any] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start the gRPC Proxy in local mode (``ProxyStartup -pm local``: the broker runs inside
        it, configured as :meth:`start_broker` configures one) and wait until it has started.
        Its TLS is the Proxy's default test mode (a self-signed certificate, no files).
        ``extra``: more keys of its rmq-proxy.json (``ProxyConfig`` and ``AuthConfig`` read it)."""
        broker_conf = self._write_broker_conf()
        proxy_conf = self.workdir / "rmq-proxy.json"
        proxy_conf.write_text(
            json.dumps(
                {
                    "rocketMQClusterName": "DefaultCluster",
                    "grpcServerPort": grpc_port,
                    "remotingListenPort": remoting_port,
                    "namesrvAddr": self.namesrv_addr_for_broker,
                    **(extra or {}),
                }
            )
        )
        args = ("-pm", "local", "-bc", str(broker_conf), "-pc", str(proxy_conf))
        self.broker = self._java("org.apache.rocketmq.proxy.ProxyStartup", proxy_conf, "proxy.out", args)
        wait_for_line(
            self.workdir / "proxy.out", r"rocketmq-proxy startup successfully", self.broker, BOOT_TIMEOUT_S
        )
        return self.broker

    def start_cluster_proxy(
        self, grpc_port: int, remoting_port: int, extra: Mapping[str, Any] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start the gRPC Proxy in cluster mode (``ProxyStartup -pm cluster``) in front of the
        broker of :meth:`start_broker`, found through the NameServer, and wait until it has
        started. ``extra``: more keys of its rmq-proxy-cluster.json (``ProxyConfig``)."""
        conf = self.workdir / "rmq-proxy-cluster.json"
        keys = {
            "rocketMQClusterName": "DefaultCluster",
            "grpcServerPort": grpc_port,
            "remotingListenPort": remoting_port,
            "namesrvAddr": self.namesrv_addr,
            "localServeAddr": "127.0.0.1",  # the address it routes clients to (else the host's)
            **(extra or {}),
        }
        conf.write_text(json.dumps(keys))
        args = ("-pm", "cluster", "-pc", str(conf))
        proc = self._java("org.apache.rocketmq.proxy.ProxyStartup", conf, "proxy.out", args)
        started = r"rocketmq-proxy startup successfully"
        wait_for_line(self.workdir / "proxy.out", started, proc, BOOT_TIMEOUT_S)
        return proc

    def _write_broker_conf(self) -> Path:
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
            *self.extra_conf,  # later lines win (java.util.Properties)
            "",
        ]
        conf.write_text("\n".join(lines))
        return conf

    def wait_registered(self, timeout: float = BOOT_TIMEOUT_S) -> None:
        """Wait until the NameServer routes TBW102 to this broker: a producer started between
        "boot success" and the first registration fails with "No route info of this topic"."""
        tls = None
        if "tls.server.mode=enforcing" in self.system_properties:  # plaintext would be refused
            tls = client_context(TlsSystemConfig())  # test mode: trusts the self-signed certificate
        wait_routed(self.namesrv_addr, self.broker_addr, timeout, self.broker, tls)

    def stop_broker(self) -> None:
        """SIGTERM the broker (its shutdown hook flushes the store) and wait for it."""
        if self.broker is not None:
            self.expect_exit(self.broker)
            stop(self.broker, STOP_TIMEOUT_S)

    def stop(self, *, kill: bool = False) -> None:
        """Stop every process started here, broker first.

        ``kill``: SIGKILL them all at once instead, for servers whose store and logs nothing reads
        afterwards (a test target at the end of its module): the 5.3.3 broker takes ~20 s to stop
        gracefully, and its store is only flushed for a reader that comes after.
        """
        if kill:
            for proc in self.procs:
                self.expect_exit(proc)
                if proc.poll() is None:
                    proc.kill()
        for proc in reversed(self.procs):
            self.expect_exit(proc)
            stop(proc, STOP_TIMEOUT_S)
        if self in _RUNNING:
            _RUNNING.remove(self)


def reference_failures() -> list[str]:
    """:meth:`ReferenceServers.failures` of every running instance: out-of-memory lines always,
    unasked exits only of instances whose processes tests do not kill themselves (``checks_exits``)."""
    found = []
    for servers in _RUNNING:
        found += servers.failures(exits=servers.checks_exits)
    return found


def start_reference_namesrv(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The real NameServer on a free loopback port; returns it and its address."""
    servers = ReferenceServers.on_loopback(workdir)
    return servers.start_namesrv(), servers.namesrv_addr


def start_reference_broker(
    workdir: Path, namesrv_addr: str, broker_name: str = "broker-ref", extra: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """The real broker registering to ``namesrv_addr`` (``;``-separated list); returns it and its
    address. ``extra``: more broker.conf keys."""
    servers = ReferenceServers.on_loopback(
        workdir,
        broker_name=broker_name,
        extra_conf=tuple(f"{k}={v}" for k, v in (extra or {}).items()),
        namesrv_addr_for_broker=namesrv_addr,
    )
    return servers.start_broker(), servers.broker_addr


def run_mqadmin(
    namesrv_addr: str,
    *args: str,
    home: Path,
    timeout: float = 60,
    rocketmq_home: Path | None = None,
    version: str = "5.3.3",
) -> str:
    """Run ``mqadmin`` (rocketmq-tools of ``version``) and return its output without log noise.

    ``rocketmq_home``: the ``rocketmq.home.dir`` whose ``conf/tools.yml`` (``accessKey``,
    ``secretKey``) signs every request, as ``MQAdminStartup`` reads it (:func:`write_tools_yml`).
    """
    result = subprocess.run(
        [
            "java",
            "-Xmx128m",
            *TEST_JVM_OPTIONS,
            f"-Duser.home={home}",
            *([f"-Drocketmq.home.dir={rocketmq_home}"] if rocketmq_home is not None else []),
            "-cp",
            f"{REFERENCE_LIBS[version]}/*",
            "org.apache.rocketmq.tools.command.MQAdminStartup",
            *args,
            "-n",
            namesrv_addr,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = (result.stdout + result.stderr).splitlines()
    return "\n".join(
        line
        for line in lines
        if line.strip() and "logback" not in line and " INFO " not in line and " |-" not in line
    )


def write_tools_yml(rocketmq_home: Path, access_key: str, secret_key: str) -> Path:
    """The credentials file ``mqadmin`` signs with: ``<rocketmq.home.dir>/conf/tools.yml``
    (``MixAll.ACL_CONF_TOOLS_FILE``, read by ``AclUtils.getAclRPCHook``); returns the home."""
    conf = rocketmq_home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "tools.yml").write_text(f"accessKey: {access_key}\nsecretKey: {secret_key}\n")
    return rocketmq_home


def run_capture(line: str, namesrv_addr: str, topic: str, home: Path, serialize: str = "JSON") -> str:
    """The capture scenario (consumer + producer, single and batch send) with one client line."""
    classes = JAVA_DIR / "target" / f"classes-{line}"
    lib = JAVA_DIR / "target" / f"lib-{line}"
    result = subprocess.run(
        [
            "java",
            *TEST_JVM_OPTIONS,
            f"-Drocketmq.serialize.type={serialize}",
            f"-Duser.home={home}",
            "-cp",
            f"{classes}{os.pathsep}{lib}/*",
            "rmqcompat.Capture",
            namesrv_addr,
            topic,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result.stdout
