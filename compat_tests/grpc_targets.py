"""The two gRPC endpoints of the gRPC compat suites, and what their tests do with them.

* :class:`GrpcTarget`: our gateway (``rmq-gateway standalone`` with its gRPC port, :func:`start_ours`)
  or the real Apache RocketMQ 5.3.3 Proxy in local mode, the broker inside it (:func:`start_real`);
* :func:`run_java` / :func:`produce`: the rocketmq-client-java 5.0.8 programs of
  ``compat_tests/java/grpc5`` against a target;
* :func:`create_topic`, :func:`stored`: topics made and records read back over the remoting
  protocol of the broker behind each endpoint (both speak it), so stored records are checked the
  same way on both targets.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from codec.bodies.register import TopicConfig
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.admin import CreateTopicRequestHeader
from codec.headers.base import EmptyHeader
from codec.headers.pull import PullMessageRequestHeader, PullSysFlag
from codec.message import MessageRecord, iter_records
from compat_tests.reference import (
    JAVA_DIR,
    REFERENCE_LIBS,
    ReferenceServers,
    free_port,
    stop,
    topic_route,
    wait_for_line,
)
from compat_tests.scenario import TEST_JVM_OPTIONS
from gateway.testing.probe import wait_ready
from gateway.transport.client import connect

GRPC_CLIENT = JAVA_DIR / "grpc5" / "target"
REPO = Path(__file__).resolve().parent.parent
QUEUES = 4
FIFO_TOPIC = "GrpcFifo"
TX_TOPIC = "GrpcTransaction"
DELAY_TOPIC = "GrpcDelay"
RECALL_TOPIC = "GrpcRecall"
# Transaction checks soon after the send, on both brokers (Java's defaults: 6 s, then every 30 s).
# The real broker writes the op records of ended transactions in batches, every
# transactionOpBatchInterval (3 s by default); until they are written it checks ended transactions
# too, which a loaded machine made happen at 3 s of 5. A 200 ms interval leaves it 4.8 s; ours
# writes each op record at once and keeps the key as an unknown one.
TX_CONF = {
    "transactionTimeOut": "5000",
    "transactionCheckInterval": "1000",
    "transactionOpBatchInterval": "200",
    "recallMessageEnable": "true",  # RECALL_MESSAGE is refused by default (BrokerConfig)
}
#: The long polling timeout both targets tell their consumers (ProxyConfig
#: grpcClientConsumerMaxLongPollingTimeoutMillis, 20 s by default, also the longest a receive waits):
#: a push consumer's close() waits for its receive in flight, so with the default every push
#: scenario ended ~20 s after its last message. 5 s is the shortest a receive may ask
#: (grpcClientConsumerMinLongPollingTimeoutMillis).
LONG_POLLING_MS = 5000
DEFAULT_LONG_POLLING_MS = 20_000
POLLING_KEY = "grpcClientConsumerMaxLongPollingTimeoutMillis"
RUN_TIMEOUT_S = 120.0  # one Java producer run on a busy 2-core machine
REGISTER_TIMEOUT_S = 60.0  # the real Proxy's broker registering with the NameServer


@dataclass
class GrpcTarget:
    name: str
    grpc_addr: str
    broker_addr: str  # the remoting port of the broker behind the endpoint
    namesrv_addr: str
    home: Path
    procs: list[Any] = field(default_factory=list)
    servers: ReferenceServers | None = None

    def stop(self) -> None:
        """The end of the target (its store is not read afterwards): the real servers are killed."""
        if self.servers is not None:
            self.servers.stop(kill=True)
        for proc in self.procs:
            stop(proc)


def start_ours(
    workdir: Path, conf: Mapping[str, str] | None = None, long_polling_ms: int = LONG_POLLING_MS
) -> GrpcTarget:
    """Our gateway with ``TX_CONF`` and ``conf`` in its broker.conf; its consumers' long polling
    timeout ``long_polling_ms``."""
    # The typed topics exist from the start, from the store's topics.json as an operator's file
    # would give them; the tests create them again with their attributes on both targets.
    config_dir = workdir / "store" / "config"
    config_dir.mkdir(parents=True)
    table = {
        name: TopicConfig(name, QUEUES, QUEUES, 6, attributes={"message.type": kind}).to_obj()
        for name, kind in ((FIFO_TOPIC, "FIFO"), (TX_TOPIC, "TRANSACTION"), (DELAY_TOPIC, "DELAY"))
    }
    (config_dir / "topics.json").write_text(json.dumps({"topicConfigTable": table}))
    conf_file = workdir / "broker.conf"
    lines = {**TX_CONF, POLLING_KEY: str(long_polling_ms), **(conf or {})}
    conf_file.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    log = workdir / "gateway.log"
    command = [sys.executable, "-m", "gateway.cli", "standalone", "--namesrv-port", "0", "--broker-port", "0"]
    command += ["--grpc-port", "0", "--store", str(workdir / "store"), "-c", str(conf_file)]
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=log.open("w"), env={**os.environ, "HOME": str(workdir)}
    )
    line = wait_for_line(log, r"ready: .*", proc, 30)
    grpc_addr = re.search(r"grpc=(\S+)", line)
    broker_addr = re.search(r"broker=(\S+)", line)
    namesrv_addr = re.search(r"namesrv=(\S+)", line)
    assert grpc_addr, line
    assert broker_addr, line
    assert namesrv_addr, line
    return GrpcTarget(
        "ours", grpc_addr.group(1), broker_addr.group(1), namesrv_addr.group(1), workdir, [proc]
    )


def start_real(
    workdir: Path,
    conf: Mapping[str, str] | None = None,
    proxy_conf: Mapping[str, Any] | None = None,
    long_polling_ms: int = LONG_POLLING_MS,
) -> GrpcTarget:
    """The real Proxy in local mode: ``TX_CONF`` and ``conf`` in its broker.conf, ``proxy_conf``
    in its rmq-proxy.json; its consumers' long polling timeout ``long_polling_ms``."""
    lines = tuple(f"{k}={v}" for k, v in {**TX_CONF, **(conf or {})}.items())
    servers = ReferenceServers.on_loopback(workdir, extra_conf=lines)
    try:
        servers.start_namesrv()
        grpc_port = free_port()
        servers.start_proxy(grpc_port, free_port(), {POLLING_KEY: long_polling_ms, **(proxy_conf or {})})
        # "startup successfully" can come before the broker inside the Proxy has registered.
        wait_ready(servers.namesrv_addr, REGISTER_TIMEOUT_S)
    except BaseException:
        servers.stop()
        raise
    return GrpcTarget(
        "real", f"127.0.0.1:{grpc_port}", servers.broker_addr, servers.namesrv_addr, workdir, servers=servers
    )


@dataclass
class Endpoint:
    """A gRPC endpoint and its NameServer (ours, or the real Proxy in cluster mode)."""

    name: str
    grpc_addr: str
    namesrv_addr: str


def start_cluster_reference(
    workdir: Path, version: str, conf: Mapping[str, str] | None = None
) -> tuple[Endpoint, ReferenceServers]:
    """The real NameServer, broker (``conf`` in its broker.conf) and Proxy in cluster mode of
    ``version``, registered and started."""
    if not REFERENCE_LIBS[version].is_dir():
        pytest.fail(f"the {version} reference jars are missing: run scripts/setup-java.sh")
    extra_conf = tuple(f"{k}={v}" for k, v in (conf or {}).items())
    servers = ReferenceServers.on_loopback(workdir, version=version, extra_conf=extra_conf)
    servers.checks_exits = True
    try:
        servers.start_namesrv()
        servers.start_broker()
        servers.wait_registered()
        grpc_port = free_port()
        servers.start_cluster_proxy(grpc_port, free_port(), {POLLING_KEY: LONG_POLLING_MS})
    except BaseException:
        servers.stop(kill=True)
        raise
    return Endpoint("reference", f"127.0.0.1:{grpc_port}", servers.namesrv_addr), servers


def produce(target: GrpcTarget, *, tls: bool, topic: str, count: int, option: str = "") -> list[str]:
    """Run the Java producer; its outcome lines (STARTED, SENT i id, FAILED ..., CLOSED)."""
    return run_java(
        target,
        "rmqgrpc.Produce",
        "true" if tls else "false",
        topic,
        str(count),
        *([option] if option else []),
    )


def java_command(
    target: GrpcTarget, main: str, *args: str, properties: Mapping[str, str] | None = None
) -> list[str]:
    """The command line of a scenario class of compat_tests/java/grpc5 on the target's endpoint.
    ``properties``: more Java system properties (``rmqgrpc.accessKey``/``secretKey`` sign)."""
    return [
        "java",
        "-Xmx128m",
        *TEST_JVM_OPTIONS,
        f"-Duser.home={target.home}",
        *(f"-D{k}={v}" for k, v in (properties or {}).items()),
        "-cp",
        f"{GRPC_CLIENT / 'classes'}{os.pathsep}{GRPC_CLIENT / 'lib'}/*",
        main,
        target.grpc_addr,
        *args,
    ]


def run_java(
    target: GrpcTarget, main: str, *args: str, properties: Mapping[str, str] | None = None
) -> list[str]:
    """Run a scenario class of compat_tests/java/grpc5 (:func:`java_command`); its outcome lines."""
    result = subprocess.run(
        java_command(target, main, *args, properties=properties),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    lines = [line for line in result.stdout.splitlines() if line.split(" ", 1)[0].isupper()]
    assert lines, f"no outcome from the producer (exit {result.returncode}):\n{result.stderr[-3000:]}"
    return lines


def create_topic(target: GrpcTarget, topic: str, attributes: str = "") -> None:
    """UPDATE_AND_CREATE_TOPIC on the broker behind the endpoint (as ``mqadmin updateTopic``)."""

    async def create() -> None:
        config = TopicConfig(topic, QUEUES, QUEUES, 6)
        header = CreateTopicRequestHeader(
            topic=topic,
            default_topic="TBW102",
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=config.perm,
            topic_filter_type=config.topic_filter_type,
            topic_sys_flag=0,
            order=False,
            attributes=attributes or None,
        )
        async with connect(target.broker_addr) as conn:
            response = await conn.invoke(
                RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header), 10
            )
        assert response.code == ResponseCode.SUCCESS, response.remark

    trio.run(create)
    # The Proxy routes from the NameServer: wait until the broker's registration carries the topic.
    deadline = time.monotonic() + 30
    while topic_route(target.namesrv_addr, topic) is None:
        assert time.monotonic() < deadline, f"{topic} not routed by the NameServer within 30 s"
        time.sleep(0.2)


def pull_once(target: GrpcTarget, topic: str) -> dict[int, list[MessageRecord]]:
    """Every record of ``topic`` by queue, pulled from offset 0 over the remoting protocol."""

    async def pull_all() -> dict[int, list[MessageRecord]]:
        found: dict[int, list[MessageRecord]] = {}
        async with connect(target.broker_addr) as conn:
            for queue_id in range(QUEUES):
                header = PullMessageRequestHeader(
                    consumer_group="grpc-compat-reader",
                    topic=topic,
                    queue_id=queue_id,
                    queue_offset=0,
                    max_msg_nums=32,
                    sys_flag=int(PullSysFlag.SUBSCRIPTION),
                    commit_offset=0,
                    suspend_timeout_millis=0,
                    subscription="*",
                    sub_version=0,
                    expression_type="TAG",
                )
                response = await conn.invoke(RemotingCommand.request(RequestCode.PULL_MESSAGE, header), 10)
                if response.code == ResponseCode.SUCCESS:
                    found[queue_id] = list(iter_records(response.body))
        return found

    return trio.run(pull_all)


def stored(target: GrpcTarget, topic: str) -> dict[int, list[MessageRecord]]:
    """Every record of ``topic`` by queue, waiting up to 10 s for the first to be readable."""
    deadline = time.monotonic() + 10
    while True:  # the real broker's consume queue is built asynchronously after the put
        found = pull_once(target, topic)
        if sum(len(v) for v in found.values()) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def create_group(target: GrpcTarget, group: str, retry_max_times: int, orderly: bool = False) -> None:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on the broker behind the endpoint."""
    body = {
        "groupName": group,
        "consumeEnable": True,
        "consumeFromMinEnable": True,
        "consumeBroadcastEnable": True,
        "consumeMessageOrderly": orderly,
        "retryQueueNums": 1,
        "retryMaxTimes": retry_max_times,
        "brokerId": 0,
        "whichBrokerWhenConsumeSlowly": 1,
        "notifyConsumerIdsChangedEnable": True,
    }

    async def create() -> None:
        command = RemotingCommand.request(
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, EmptyHeader(), body=json.dumps(body).encode()
        )
        async with connect(target.broker_addr) as conn:
            response = await conn.invoke(command, 10)
        assert response.code == ResponseCode.SUCCESS, response.remark

    trio.run(create)
