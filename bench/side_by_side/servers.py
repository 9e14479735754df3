"""The two targets of the side-by-side benchmark, and what /proc tells about their processes.

* **ours**: ``rmq-gateway standalone`` (NameServer and Broker in one process) as a subprocess of the
  project's venv Python, with a temporary HOME and store; either the working tree or a git revision
  exported to a temporary directory (``--ours-source``, or ``--before`` for a third target beside
  the other two), so two commits can be compared. Ours always runs with its gRPC endpoint on
  (``--grpc-port 0``); with ``pure`` it runs its modules from source (``RMQ_GATEWAY_PURE=1``: the
  venv's compiled build is of one tree only, so two revisions are compared source to source).
* **reference**: the real Apache RocketMQ 5.3.3 NameServer and Broker from the Maven Central jars,
  started by :class:`compat_tests.golden_servers.ReferenceServers` (the compat launcher: 256 MiB
  heaps, loopback, ``autoCreateTopicEnable``). For the gRPC cases (``grpc=True``) the broker is the
  one inside the 5.3.3 Proxy in local mode (``ProxyStartup -pm local``: Proxy and broker are one
  JVM), beside the NameServer. Its stores are thrown away, so it is killed rather than given its
  ~20 s orderly shutdown.

Every start is timed twice: to *ready* (our ``ready:`` line; the real broker's "boot success", or
the Proxy's "startup successfully") and to the *first send* (the NameServer routes the broker and a
raw ``SEND_MESSAGE_V2`` is stored); a gRPC set-up also to the first gRPC ``SendMessage`` stored
(:func:`first_grpc_send`).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from codec.codes import RequestCode, ResponseCode
from compat_tests.golden_servers import ReferenceServers
from compat_tests.golden_servers import free_port as free_port_on
from compat_tests.raw_client import send_message_v2
from compat_tests.reference import free_port, topic_route, wait_routed


def die_with_parent() -> None:
    """In a child before exec: SIGKILL it when the benchmark dies (a killed run leaves no server)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 90.0
ROUTE_TIMEOUT_S = 90.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # /proc/PID/stat times are in these
OUR_BROKER_NAME = "broker-a"  # BrokerConfig's default brokerName, as the reference's
SYNC_FLUSH_CONF = "flushDiskType=SYNC_FLUSH"
FIRST_GRPC_TOPIC = "BenchFirstGrpcSend"
PROTO_DIR = "gateway/transport/grpc/proto"  # its generated *_pb2 modules are gitignored


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of every thread of ``pids`` (fields 14 and 15 of /proc/PID/stat)."""
    total = 0
    for pid in pids:
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text[text.rindex(")") + 2 :].split()
        total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent not idle since boot (first line of /proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / CLOCK_TICKS


def memory_kib(pids: list[int]) -> dict[str, int]:
    """RSS split into anonymous memory and mapped file pages, summed over ``pids`` (smaps_rollup)."""
    out = {"rss_kib": 0, "anon_kib": 0, "file_kib": 0}
    for pid in pids:
        values: dict[str, int] = {}
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            key, _, rest = line.partition(":")
            values[key] = int(rest.split()[0])
        out["rss_kib"] += values["Rss"]
        out["anon_kib"] += values["Anonymous"]
        out["file_kib"] += values["Rss"] - values["Anonymous"]
    return out


class Target(Protocol):
    name: str
    namesrv_addr: str
    broker_addr: str
    grpc_addr: str  # "" when the set-up has no gRPC endpoint

    def pids(self) -> list[int]: ...

    def stop(self) -> None: ...


@dataclass
class Timing:
    ready_s: float
    first_send_s: float
    started: float = 0.0  # time.perf_counter() at the launch


def create_topic(broker_addr: str, namesrv_addr: str, topic: str, queues: int, attributes: str = "") -> None:
    """UPDATE_AND_CREATE_TOPIC at the broker (read/write queues, perm 6, ``attributes`` such as
    ``+message.type=FIFO`` when given), then wait for the route."""
    import trio

    from codec.command import RemotingCommand
    from gateway.transport.client import connect

    header = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": str(queues),
        "writeQueueNums": str(queues),
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
    }
    if attributes:
        header["attributes"] = attributes

    async def create() -> int:
        async with connect(broker_addr) as conn:
            request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
            return (await conn.invoke(request, 10)).code

    code = trio.run(create)
    if code != ResponseCode.SUCCESS:
        raise RuntimeError(f"creating {topic} at {broker_addr}: response code {code}")
    deadline = time.monotonic() + ROUTE_TIMEOUT_S
    while True:
        route = topic_route(namesrv_addr, topic)
        if route and route.queue_datas:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic} not routed by {namesrv_addr} within {ROUTE_TIMEOUT_S} s")
        time.sleep(0.05)


def stored_messages(broker_addr: str, topic: str, queues: int) -> int:
    """Messages the broker holds for ``topic``: the sum of GET_MAX_OFFSET over its queues."""
    import trio

    from codec.command import RemotingCommand
    from gateway.transport.client import connect

    async def ask() -> int:
        total = 0
        async with connect(broker_addr) as conn:
            for queue_id in range(queues):
                header = {"topic": topic, "queueId": str(queue_id)}
                answer = await conn.invoke(RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header), 10)
                if answer.code != ResponseCode.SUCCESS:
                    raise RuntimeError(
                        f"GET_MAX_OFFSET {topic}/{queue_id}: code {answer.code} {answer.remark}"
                    )
                total += int((answer.ext_fields or {})["offset"])
        return total

    return trio.run(ask)


def _first_send(namesrv_addr: str, broker_addr: str, started: float, proc: subprocess.Popen[bytes]) -> float:
    """Seconds from ``started`` until a route exists and one raw send is stored."""
    wait_routed(namesrv_addr, broker_addr, ROUTE_TIMEOUT_S, proc)
    host, port = broker_addr.rsplit(":", 1)
    deadline = time.monotonic() + ROUTE_TIMEOUT_S
    while True:
        answer = send_message_v2(
            (host, int(port)),
            group="bench_first_send",
            topic="BenchFirstSend",
            broker_name=OUR_BROKER_NAME,
            body=b"first",
            properties="WAIT\x01true\x02",
        )
        if answer.get("code") == ResponseCode.SUCCESS:
            return time.perf_counter() - started
        if time.monotonic() > deadline:
            raise TimeoutError(f"first send to {broker_addr} answered {answer}")
        time.sleep(0.05)


def first_grpc_send(target: Target, started: float) -> float:
    """Seconds from ``started`` until a raw gRPC ``SendMessage`` (grpcio, plaintext) is stored, once
    its topic is created at the broker and routed (the Proxy routes through the NameServer)."""
    import grpc

    from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

    create_topic(target.broker_addr, target.namesrv_addr, FIRST_GRPC_TOPIC, 1)
    metadata = [("x-mq-client-id", "bench-first-send"), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v2")]
    deadline = time.monotonic() + ROUTE_TIMEOUT_S
    with grpc.insecure_channel(target.grpc_addr) as channel:
        send = channel.unary_unary(
            "/apache.rocketmq.v2.MessagingService/SendMessage",
            request_serializer=pb.SendMessageRequest.SerializeToString,
            response_deserializer=pb.SendMessageResponse.FromString,
        )
        while True:
            message = pb.Message(body=b"first")
            message.topic.name = FIRST_GRPC_TOPIC
            message.system_properties.message_id = f"01{uuid.uuid4().hex.upper()}"
            message.system_properties.message_type = pb.NORMAL
            message.system_properties.born_host = "127.0.0.1"
            message.system_properties.born_timestamp.GetCurrentTime()
            try:
                answer = send(pb.SendMessageRequest(messages=[message]), metadata=metadata, timeout=10)
                if answer.status.code == pb.OK:
                    return time.perf_counter() - started
                outcome = f"{pb.Code.Name(answer.status.code)} {answer.status.message}"
            except grpc.RpcError as err:
                outcome = str(err)
            if time.monotonic() > deadline:
                raise TimeoutError(f"first gRPC send to {target.grpc_addr}: {outcome}")
            time.sleep(0.05)


@dataclass
class Ours:
    """``rmq-gateway standalone`` from ``source_dir`` (a tree holding gateway/, broker/ ...)."""

    source_dir: Path
    sync_flush: bool = False
    name: str = "ours"
    pure: bool = False  # RMQ_GATEWAY_PURE=1: the modules from source_dir, never a compiled build
    namesrv_addr: str = ""
    broker_addr: str = ""
    grpc_addr: str = ""
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="bench-ours-")))
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Timing:
        namesrv_port, broker_port = free_port(), free_port(spare_below=2, spare_above=1)
        conf = self.workdir / "broker.conf"
        conf.write_text(f"{SYNC_FLUSH_CONF}\n" if self.sync_flush else "")
        log = self.workdir / "gateway.log"
        args = [sys.executable, "-m", "gateway.cli", "standalone", "--namesrv-port", str(namesrv_port)]
        args += ["--broker-port", str(broker_port), "--store", str(self.workdir / "store"), "-c", str(conf)]
        args += ["--grpc-port", "0"]  # the endpoint on, on any free port
        env = {**os.environ, "HOME": str(self.workdir), "PYTHONPATH": str(self.source_dir)}
        if self.pure:
            env["RMQ_GATEWAY_PURE"] = "1"
        started = time.perf_counter()
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                args,
                cwd=self.source_dir,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=die_with_parent,
            )
        while True:
            text = log.read_text(errors="replace")
            if match := re.search(r"ready: namesrv=(\S+) broker=(\S+)", text):
                ready = time.perf_counter() - started
                self.namesrv_addr, self.broker_addr = match.group(1), match.group(2)
                if grpc := re.search(r"grpc=(\S+)", text):
                    self.grpc_addr = grpc.group(1)
                break
            if self.proc.poll() is not None or time.perf_counter() - started > READY_TIMEOUT_S:
                self.stop()
                raise RuntimeError(f"rmq-gateway did not get ready:\n{text[-3000:]}")
            time.sleep(0.005)
        return Timing(ready, _first_send(self.namesrv_addr, self.broker_addr, started, self.proc), started)

    def pids(self) -> list[int]:
        assert self.proc is not None
        return [self.proc.pid]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["rm", "-rf", str(self.workdir)], check=False)


@dataclass
class Reference:
    """The real 5.3.3 NameServer + Broker, through the compat launcher; with ``grpc`` the broker
    runs inside the Proxy in local mode."""

    sync_flush: bool = False
    grpc: bool = False
    name: str = "reference"
    namesrv_addr: str = ""
    broker_addr: str = ""
    grpc_addr: str = ""
    servers: ReferenceServers | None = None

    def start(self) -> Timing:
        workdir = Path(tempfile.mkdtemp(prefix="bench-ref-"))
        namesrv_port = free_port_on(("127.0.0.1",))
        broker_port = free_port_on(("127.0.0.1",), (-2, 0, 1))
        self.servers = ReferenceServers(
            workdir=workdir,
            serialize="JSON",
            namesrv_port=namesrv_port,
            broker_port=broker_port,
            broker_bind="127.0.0.1",
            broker_ip1="127.0.0.1",
            namesrv_addr_for_broker=f"127.0.0.1:{namesrv_port}",
            extra_conf=(SYNC_FLUSH_CONF,) if self.sync_flush else (),
            test_jvm=False,  # the JVM's own defaults, as RocketMQ's start scripts run it
        )
        started = time.perf_counter()
        try:
            self.servers.start_namesrv()
            if self.grpc:
                grpc_port = free_port_on(("127.0.0.1",))
                self.servers.start_proxy(grpc_port, free_port_on(("127.0.0.1",)))
                self.grpc_addr = f"127.0.0.1:{grpc_port}"
            else:
                self.servers.start_broker()
        except BaseException:
            self.stop()
            raise
        ready = time.perf_counter() - started
        self.namesrv_addr = self.servers.namesrv_addr
        self.broker_addr = f"127.0.0.1:{broker_port}"
        assert self.servers.broker is not None
        first_send = _first_send(self.namesrv_addr, self.broker_addr, started, self.servers.broker)
        return Timing(ready, first_send, started)

    def pids(self) -> list[int]:
        assert self.servers is not None
        return [p.pid for p in self.servers.procs]

    def stop(self) -> None:
        if self.servers is None:
            return
        for proc in self.servers.procs:  # stores are discarded: no orderly ~20 s shutdown needed
            if proc.poll() is None:
                proc.kill()
            proc.wait(30)
        subprocess.run(["rm", "-rf", str(self.servers.workdir)], check=False)


def export_revision(rev: str) -> Path:
    """``git archive`` of ``rev`` into a temporary directory (for ``--ours-source REV`` and
    ``--before REV``), with this tree's generated protobuf modules where ``rev`` lacks them (they are
    gitignored, and a revision's gRPC endpoint cannot start without them)."""
    out = Path(tempfile.mkdtemp(prefix=f"bench-src-{rev.replace('/', '_')}-"))
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    if (out / PROTO_DIR).is_dir():
        for generated in (REPO / PROTO_DIR).glob("*_pb2.py*"):
            if not (out / PROTO_DIR / generated.name).exists():
                shutil.copy(generated, out / PROTO_DIR / generated.name)
    return out


def describe_source(source: str) -> str:
    """The commit (and ``+dirty`` for a modified working tree) that ``--ours-source`` names."""
    rev = "HEAD" if source == "worktree" else source
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", rev], check=True, capture_output=True, text=True
    ).stdout.strip()
    if source == "worktree":
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return f"{commit}+dirty" if dirty else commit
    return commit
