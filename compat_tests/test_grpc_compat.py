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

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from broker.grpc.send import consistent_hash
from codec.hashing import java_string_hash
from codec.properties import decode_properties
from compat_tests.grpc_targets import (
    DEFAULT_LONG_POLLING_MS,
    DELAY_TOPIC,
    FIFO_TOPIC,
    GRPC_CLIENT,
    QUEUES,
    RECALL_TOPIC,
    REPO,
    RUN_TIMEOUT_S,
    TX_TOPIC,
    GrpcTarget,
    create_topic,
    produce,
    pull_once,
    run_java,
    start_ours,
    start_real,
    stored,
)
from compat_tests.reference import (
    REFERENCE_LIB,
    topic_route,
)
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

pytestmark = [pytest.mark.compat, pytest.mark.slow]


@pytest.fixture(scope="module", params=["ours", "real"])
def grpc_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GrpcTarget]:
    if shutil.which("java") is None or not REFERENCE_LIB.is_dir() or not (GRPC_CLIENT / "classes").is_dir():
        pytest.fail("java, the reference jars or the 5.x gRPC client are missing: run scripts/setup-java.sh")
    workdir = tmp_path_factory.mktemp(f"grpc-{request.param}")
    # The Proxy's default longest long polling (20 s): grpc_checks.py times receives of 10 s and 20 s.
    polling = DEFAULT_LONG_POLLING_MS
    if request.param == "ours":
        started = start_ours(workdir, long_polling_ms=polling)
    else:
        started = start_real(workdir, long_polling_ms=polling)
    try:
        yield started
    finally:
        started.stop()


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
    while not (delivered := [r for queue in pull_once(grpc_target, DELAY_TOPIC).values() for r in queue]):
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
        records = [r for queue in pull_once(grpc_target, RECALL_TOPIC).values() for r in queue]
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
