"""RocketMQ 5's gRPC protocol: the unmodified rocketmq-client-java 5.0.8 producer against our
endpoint and against the real 5.3.3 Proxy in local mode (``ProxyStartup -pm local``, the broker
inside it), TLS on and off (the Java client's default is TLS, trusting any certificate); and the Python
rocketmq-python-client 5.1.2 producer, plaintext.

The Java side is ``compat_tests/java/grpc5/src/rmqgrpc/Produce.java`` (its own Maven module, built
by ``scripts/setup-java.sh``). What the producer sent is read back over the remoting protocol from
the broker behind each endpoint (both speak it), so the stored records are checked the same way
on both targets.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import trio

from broker.grpc.send import consistent_hash
from codec.bodies.register import TopicConfig
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.hashing import java_string_hash
from codec.headers.admin import CreateTopicRequestHeader
from codec.headers.pull import PullMessageRequestHeader, PullSysFlag
from codec.message import MessageRecord, iter_records
from codec.properties import decode_properties
from compat_tests.reference import (
    JAVA_DIR,
    REFERENCE_LIB,
    ReferenceServers,
    free_port,
    stop,
    topic_route,
    wait_for_line,
)
from compat_tests.scenario import TEST_JVM_OPTIONS
from gateway.transport.client import connect
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

pytestmark = [pytest.mark.compat, pytest.mark.slow]

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
RUN_TIMEOUT_S = 120.0  # one Java producer run on a busy 2-core machine


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


def _start_ours(workdir: Path, conf: Mapping[str, str] | None = None) -> GrpcTarget:
    """Our gateway with ``TX_CONF`` and ``conf`` in its broker.conf."""
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
    conf_file.write_text("".join(f"{k}={v}\n" for k, v in {**TX_CONF, **(conf or {})}.items()))
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


def _start_real(
    workdir: Path, conf: Mapping[str, str] | None = None, proxy_conf: Mapping[str, Any] | None = None
) -> GrpcTarget:
    """The real Proxy in local mode: ``TX_CONF`` and ``conf`` in its broker.conf, ``proxy_conf``
    in its rmq-proxy.json."""
    lines = tuple(f"{k}={v}" for k, v in {**TX_CONF, **(conf or {})}.items())
    servers = ReferenceServers.on_loopback(workdir, extra_conf=lines)
    try:
        servers.start_namesrv()
        grpc_port = free_port()
        servers.start_proxy(grpc_port, free_port(), proxy_conf)
    except BaseException:
        servers.stop()
        raise
    return GrpcTarget(
        "real", f"127.0.0.1:{grpc_port}", servers.broker_addr, servers.namesrv_addr, workdir, servers=servers
    )


@pytest.fixture(scope="module", params=["ours", "real"])
def grpc_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GrpcTarget]:
    if shutil.which("java") is None or not REFERENCE_LIB.is_dir() or not (GRPC_CLIENT / "classes").is_dir():
        pytest.fail("java, the reference jars or the 5.x gRPC client are missing: run scripts/setup-java.sh")
    workdir = tmp_path_factory.mktemp(f"grpc-{request.param}")
    started = _start_ours(workdir) if request.param == "ours" else _start_real(workdir)
    try:
        yield started
    finally:
        started.stop()


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


def run_java(
    target: GrpcTarget, main: str, *args: str, properties: Mapping[str, str] | None = None
) -> list[str]:
    """Run a scenario class of compat_tests/java/grpc5 on the target's endpoint; its outcome lines.
    ``properties``: more Java system properties (``rmqgrpc.accessKey``/``secretKey`` sign)."""
    result = subprocess.run(
        [
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
        ],
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


def _pull_once(target: GrpcTarget, topic: str) -> dict[int, list[MessageRecord]]:
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
        found = _pull_once(target, topic)
        if sum(len(v) for v in found.values()) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "tls"])
def test_producer_sends_normal_messages(grpc_target: GrpcTarget, tls: bool) -> None:
    topic = f"GrpcNormal{'Tls' if tls else 'Plain'}"
    create_topic(grpc_target, topic)
    lines = produce(grpc_target, tls=tls, topic=topic, count=5)
    assert lines[0] == "STARTED"
    assert lines[-1] == "CLOSED"
    sent = {int(line.split()[1]): line.split()[2] for line in lines if line.startswith("SENT")}
    assert sorted(sent) == [0, 1, 2, 3, 4], lines
    records = [r for queue in stored(grpc_target, topic).values() for r in queue]
    by_id = {decode_properties(r.properties)["UNIQ_KEY"]: r for r in records}
    assert set(by_id) == set(sent.values())
    for index, message_id in sent.items():
        record = by_id[message_id]
        props = decode_properties(record.properties)
        assert record.body == f"grpc message {index} 中文".encode()
        assert props["TAGS"] == "TagA"
        assert props["KEYS"] == f"key-{index}"
        assert props["index"] == str(index)
        assert props["PGROUP"] == topic


def test_fifo_message_group_keeps_one_queue_in_order(grpc_target: GrpcTarget) -> None:
    topic = FIFO_TOPIC
    create_topic(grpc_target, topic, "+message.type=FIFO")
    lines = produce(grpc_target, tls=True, topic=topic, count=4, option="group=order-7")
    assert [line.split()[:2] for line in lines if line.startswith("SENT")] == [
        ["SENT", str(i)] for i in range(4)
    ]
    queues = {q: records for q, records in stored(grpc_target, topic).items() if records}
    # The queue Guava's consistentHash picks for the group among the 4 write queues, on both.
    assert list(queues) == [consistent_hash(java_string_hash("order-7"), QUEUES)]
    records = next(iter(queues.values()))
    assert [decode_properties(r.properties)["index"] for r in records] == ["0", "1", "2", "3"]
    assert {decode_properties(r.properties)["__SHARDINGKEY"] for r in records} == {"order-7"}


def test_unknown_topic_fails_start(grpc_target: GrpcTarget) -> None:
    lines = produce(grpc_target, tls=True, topic="GrpcNoSuchTopic", count=1)
    assert lines[0].startswith("START_FAILED"), lines


def test_python_producer_sends(grpc_target: GrpcTarget) -> None:
    """rocketmq-python-client 5.1.2, plaintext (its TLS trusts only the system's roots, so it
    cannot reach a self-signed endpoint, ours or the Proxy's)."""
    topic = "GrpcPython"
    create_topic(grpc_target, topic)
    result = subprocess.run(
        [sys.executable, "-m", "compat_tests.grpc_python_producer", grpc_target.grpc_addr, topic, "3"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
        cwd=REPO,
        env={**os.environ, "HOME": str(grpc_target.home)},
    )
    lines = [line for line in result.stdout.splitlines() if line.split(" ", 1)[0].isupper()]
    assert lines[:1] == ["STARTED"], result.stdout + result.stderr[-3000:]
    assert lines[-1] == "CLOSED"
    sent = {int(line.split()[1]): line.split()[2] for line in lines if line.startswith("SENT")}
    assert sorted(sent) == [0, 1, 2], lines
    records = [r for queue in stored(grpc_target, topic).values() for r in queue]
    by_id = {decode_properties(r.properties)["UNIQ_KEY"]: r for r in records}
    assert set(by_id) == set(sent.values())
    for index, message_id in sent.items():
        props = decode_properties(by_id[message_id].properties)
        assert by_id[message_id].body == f"python grpc message {index} 中文".encode()
        assert (props["TAGS"], props["KEYS"], props["index"]) == ("TagP", f"pkey-{index}", str(index))


def test_a_python_producers_namespace_wraps_no_name(grpc_target: GrpcTarget) -> None:
    """The client sends ``x-mq-namespace: nsG`` and ``resource_namespace`` in every resource; the
    5.3.3 Proxy uses each resource's ``name`` as it is, so the messages are in the plain topic."""
    topic = "GrpcNamespaced"
    create_topic(grpc_target, topic)
    result = subprocess.run(
        [sys.executable, "-m", "compat_tests.grpc_python_producer", grpc_target.grpc_addr, topic, "2"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
        cwd=REPO,
        env={**os.environ, "HOME": str(grpc_target.home), "RMQ_NAMESPACE": "nsG"},
    )
    lines = [line for line in result.stdout.splitlines() if line.split(" ", 1)[0].isupper()]
    assert lines[:1] == ["STARTED"], result.stdout + result.stderr[-3000:]
    sent = {line.split()[2] for line in lines if line.startswith("SENT")}
    assert len(sent) == 2, lines
    records = [r for queue in stored(grpc_target, topic).values() for r in queue]
    assert {decode_properties(r.properties)["UNIQ_KEY"] for r in records} == sent
    assert {r.topic for r in records} == {topic}
    assert topic_route(grpc_target.namesrv_addr, f"nsG%{topic}") is None


def test_a_received_messages_topic_is_split_at_its_namespace(grpc_target: GrpcTarget) -> None:
    """A message of topic ``nsR%GrpcNsRecv`` (what a remoting client with namespace ``nsR``
    stores) reaches a gRPC consumer of that topic as name ``GrpcNsRecv``, namespace ``nsR``
    (``GrpcConverter.buildResource``)."""
    topic = "nsR%GrpcNsRecv"
    create_topic(grpc_target, topic)
    env = {**os.environ, "HOME": str(grpc_target.home), "RMQ_SHOW_TOPIC": "1"}
    sent = subprocess.run(
        [sys.executable, "-m", "compat_tests.grpc_python_producer", grpc_target.grpc_addr, topic, "1"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False, cwd=REPO, env=env,
    )  # fmt: skip
    assert "SENT 0 " in sent.stdout, sent.stdout + sent.stderr[-3000:]
    consumer = [sys.executable, "-m", "compat_tests.grpc_python_consumer", grpc_target.grpc_addr]
    received = subprocess.run(
        [*consumer, topic, "GrpcNsGroup", "1", "60"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False, cwd=REPO, env=env,
    )  # fmt: skip
    lines = [line for line in received.stdout.splitlines() if line.startswith(("RECEIVED", "TOPIC"))]
    assert lines[:2] == ["RECEIVED python_grpc_message_0_中文 1", "TOPIC nsR GrpcNsRecv"], (
        received.stdout + received.stderr[-3000:]
    )


def test_transactions_commit_rollback_and_check_back(grpc_target: GrpcTarget) -> None:
    """A committed, a rolled back and an unresolved half message; the broker checks the last one
    back over the Telemetry stream and the client's checker commits it."""
    create_topic(grpc_target, TX_TOPIC, "+message.type=TRANSACTION")
    lines = run_java(grpc_target, "rmqgrpc.Transact", "true", TX_TOPIC, "60")
    sent = {line.split()[1]: line.split()[2] for line in lines if line.startswith("SENT")}
    assert sorted(sent) == ["check", "commit", "rollback"], lines
    assert [line for line in lines if line.startswith("CHECKED")] == [f"CHECKED {sent['check']} check"]
    deadline = time.monotonic() + 30
    while True:  # the checked message is committed after the client answered
        records = [r for queue in stored(grpc_target, TX_TOPIC).values() for r in queue]
        keys = sorted(decode_properties(r.properties)["KEYS"] for r in records)
        if keys == ["check", "commit"] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert keys == ["check", "commit"]
    by_key = {decode_properties(r.properties)["KEYS"]: decode_properties(r.properties) for r in records}
    assert by_key["commit"]["UNIQ_KEY"] == sent["commit"]
    assert by_key["check"]["UNIQ_KEY"] == sent["check"]


def test_delivery_timestamp_holds_the_message_until_due(grpc_target: GrpcTarget) -> None:
    """A message with a delivery time 4 s ahead (the 5.x timer message) is delivered to its topic
    by the broker's timer: stored there at least ~4 s after it was sent (3 s allowed for the
    timer's 1 s precision and clock reads on two sides)."""
    create_topic(grpc_target, DELAY_TOPIC, "+message.type=DELAY")
    lines = produce(grpc_target, tls=True, topic=DELAY_TOPIC, count=1, option="delayMs=4000")
    assert [line.split()[:2] for line in lines if line.startswith("SENT")] == [["SENT", "0"]], lines
    deadline = time.monotonic() + 60
    while not (delivered := [r for queue in _pull_once(grpc_target, DELAY_TOPIC).values() for r in queue]):
        assert time.monotonic() < deadline, "the delayed message was never delivered"
        time.sleep(0.5)
    record = delivered[0]
    assert decode_properties(record.properties)["KEYS"] == "key-0"
    assert record.store_timestamp - record.born_timestamp >= 3000


def test_a_recalled_delayed_message_is_never_delivered(grpc_target: GrpcTarget) -> None:
    """Recall (5.3.x): a delayed message's send receipt carries a recall handle; the message
    recalled with it is never delivered while the one due 2 s later is; recalling it again still
    succeeds, and a made-up handle fails with the same exception on both."""
    create_topic(grpc_target, RECALL_TOPIC, "+message.type=DELAY")
    lines = run_java(grpc_target, "rmqgrpc.Recall", RECALL_TOPIC, "4000")
    sent = {words[1]: words[2:] for words in (line.split() for line in lines) if words[0] == "SENT"}
    assert sorted(sent) == ["kept", "recalled"], lines
    assert [handle for _id, handle in sent.values()] == ["yes", "yes"], lines
    recalled_id = sent["recalled"][0]
    assert [line.split()[1:] for line in lines if line.startswith("RECALLED")] == [
        ["recalled", recalled_id],
        ["again", recalled_id],
    ], lines
    [failed] = [line.split(" ", 3) for line in lines if line.startswith("RECALL_FAILED")]
    assert failed[1:3] == ["garbage", "InternalErrorException"], lines
    assert "recall handle is invalid" in failed[3]
    deadline = time.monotonic() + 60
    while True:  # "kept" is due 2 s after "recalled": once it is stored, the recalled one's time has passed
        records = [r for queue in _pull_once(grpc_target, RECALL_TOPIC).values() for r in queue]
        keys = sorted(decode_properties(r.properties)["KEYS"] for r in records)
        if "kept" in keys:
            break
        assert time.monotonic() < deadline, "the kept message was never delivered"
        time.sleep(0.5)
    assert keys == ["kept"]


def _raw_calls(target: GrpcTarget) -> dict[str, Any]:
    """A handful of calls a client could make, answered by the endpoint (grpcio, plaintext)."""
    host, port = target.grpc_addr.rsplit(":", 1)
    endpoints = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host=host, port=int(port))])
    metadata = [("x-mq-client-id", "raw-client-1"), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v2")]
    out: dict[str, Any] = {}
    with grpc.insecure_channel(target.grpc_addr) as channel:

        def call(method: str, request: Any, response_type: Any) -> Any:
            rpc = channel.unary_unary(
                "/apache.rocketmq.v2.MessagingService/" + method,
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=response_type.FromString,
            )
            return rpc(request, metadata=metadata, timeout=30)

        missing = call(
            "QueryRoute",
            pb.QueryRouteRequest(topic=pb.Resource(name="GrpcRawNope"), endpoints=endpoints),
            pb.QueryRouteResponse,
        )
        out["missing_route"] = missing.status.code
        route = call(
            "QueryRoute",
            pb.QueryRouteRequest(topic=pb.Resource(name="GrpcRaw"), endpoints=endpoints),
            pb.QueryRouteResponse,
        )
        out["route"] = [
            (
                q.id,
                q.permission,
                list(q.accept_message_types),
                q.broker.id,
                [(a.host, a.port) for a in q.broker.endpoints.addresses],
            )
            for q in route.message_queues
        ]
        out["route_status"] = route.status.code
        out["heartbeat_unknown"] = call(
            "Heartbeat", pb.HeartbeatRequest(client_type=pb.PRODUCER), pb.HeartbeatResponse
        ).status.code
        assignment = call(
            "QueryAssignment",
            pb.QueryAssignmentRequest(
                topic=pb.Resource(name="GrpcRaw"), group=pb.Resource(name="GrpcRawGroup"), endpoints=endpoints
            ),
            pb.QueryAssignmentResponse,
        )
        out["assignment"] = [(a.message_queue.id, a.message_queue.permission) for a in assignment.assignments]
        out["empty_send"] = call("SendMessage", pb.SendMessageRequest(), pb.SendMessageResponse).status.code
        bad_id = pb.Message(topic=pb.Resource(name="GrpcRaw"), body=b"x")
        out["no_message_id"] = call(
            "SendMessage", pb.SendMessageRequest(messages=[bad_id]), pb.SendMessageResponse
        ).status.code
        try:
            call("NoSuchMethod", pb.HeartbeatRequest(), pb.HeartbeatResponse)
            out["unknown_method"] = "answered"
        except grpc.RpcError as err:
            out["unknown_method"] = err.code().name
    return out


def test_raw_calls_answer_as_the_proxy(grpc_target: GrpcTarget) -> None:
    """Statuses and routes of a few calls outside a client's happy path, the same on both."""
    create_topic(grpc_target, "GrpcRaw")
    out = _raw_calls(grpc_target)
    host, port = grpc_target.grpc_addr.rsplit(":", 1)
    assert out["missing_route"] == pb.TOPIC_NOT_FOUND
    assert out["route_status"] == pb.OK
    assert out["route"] == [(i, pb.READ_WRITE, [pb.NORMAL], 0, [(host, int(port))]) for i in range(QUEUES)]
    assert out["heartbeat_unknown"] == pb.UNRECOGNIZED_CLIENT_TYPE
    assert out["assignment"] == [(-1, pb.READ_WRITE)]
    assert out["empty_send"] == pb.MESSAGE_CORRUPTED
    assert out["no_message_id"] == pb.ILLEGAL_MESSAGE_ID
    assert out["unknown_method"] == "UNIMPLEMENTED"


def test_several_messages_in_one_send_are_one_batch(grpc_target: GrpcTarget) -> None:
    """A SendMessage of three messages (no 5.x client sends one; grpcio does) is one batch, as
    ``LocalMessageService`` sends it: one result entry with a new id, three records in one queue
    at consecutive offsets, each with its own body and the first message's properties (the
    header's, which the broker appends to every inner message's)."""
    topic = "GrpcBatch"
    create_topic(grpc_target, topic)
    messages = []
    for i in range(3):
        system = pb.SystemProperties(message_id=f"BATCH{i:04d}", tag=f"tag{i}", keys=[f"key{i}"])
        system.born_timestamp.FromMilliseconds(int(time.time() * 1000))
        messages.append(
            pb.Message(topic=pb.Resource(name=topic), body=f"batch-{i}".encode(), system_properties=system)
        )
    metadata = [("x-mq-client-id", "raw-batch-1"), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v2")]
    with grpc.insecure_channel(grpc_target.grpc_addr) as channel:
        rpc = channel.unary_unary(
            "/apache.rocketmq.v2.MessagingService/SendMessage",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.SendMessageResponse.FromString,
        )
        answer = rpc(pb.SendMessageRequest(messages=messages), metadata=metadata, timeout=30)
    records = [r for queue in stored(grpc_target, topic).values() for r in queue]
    props = [decode_properties(r.properties) for r in records]
    assert answer.status.code == pb.OK, answer
    assert len(answer.entries) == 1
    entry = answer.entries[0]
    assert entry.status.code == pb.OK
    assert entry.message_id not in {m.system_properties.message_id for m in messages}
    assert int(entry.message_id, 16) > 0  # MessageClientIDSetter's hex (IPv4 or IPv6 based)
    assert entry.transaction_id == "BATCH0000"  # the broker's: the header's UNIQ_KEY
    assert [r.body for r in records] == [b"batch-0", b"batch-1", b"batch-2"]
    assert len({r.queue_id for r in records}) == 1
    assert [r.queue_offset for r in records] == [entry.offset, entry.offset + 1, entry.offset + 2]
    assert [(p["UNIQ_KEY"], p["TAGS"], p["KEYS"]) for p in props] == [("BATCH0000", "tag0", "key0")] * 3


# The request checks run on this module's endpoints (no targets of their own to start).
from compat_tests.grpc_checks import (  # noqa: E402
    test_java_client_meets_the_proxys_checks,
    test_raw_requests_meet_the_proxys_checks,
)

__all__ = ["test_java_client_meets_the_proxys_checks", "test_raw_requests_meet_the_proxys_checks"]
