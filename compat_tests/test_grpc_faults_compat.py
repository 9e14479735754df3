"""gRPC fault rules against unmodified RocketMQ 5 gRPC clients: what each one's retry policy makes
of a SendMessage answered TOO_MANY_REQUESTS (the Proxy's answer for a busy broker, with the
broker's flow-control remark).

* rocketmq-client-java 5.0.8 (``ProducerImpl.send0``): a producer makes ``maxAttempts`` tries (3
  unless ``ProducerBuilder.setMaxAttempts`` says otherwise); a ``TooManyRequestsException`` is
  retried after the delay of its ``ExponentialBackoffRetryPolicy`` (the backoff the endpoint's
  settings give), any other failure at once; after the last try the send fails with that
  exception. So two busy answers leave the third try to succeed, and an always-busy endpoint is
  seen as ``TooManyRequestsException`` after exactly three tries.
* rocketmq-python-client 5.1.2 (``Producer.__check_send_retry_condition``): a
  ``TooManyRequestsException`` ends the retries at once, so one busy answer fails the send.

One JVM run per Java case, against an in-process gateway whose fault table the test sets.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.grpc_targets import REPO, RUN_TIMEOUT_S, GrpcTarget, create_group, create_topic, produce
from gateway.testing.inprocess import InProcessGateway
from gateway.transport.faults import BUSY_REMARK

pytestmark = pytest.mark.compat


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    with InProcessGateway(tmp_path_factory.mktemp("grpc-faults-store")) as gw:
        yield gw


@pytest.fixture
def target(gateway: InProcessGateway, tmp_path: Path) -> Iterator[GrpcTarget]:
    yield GrpcTarget("ours", gateway.grpc_endpoint, gateway.broker_addr, gateway.namesrv_addr, tmp_path)
    gateway.faults.clear()


def _fired(gateway: InProcessGateway, fault_id: int) -> int:
    found = gateway.faults.get(fault_id)
    assert found is not None
    return int(found["fired"])


def test_java_producer_retries_two_busy_answers_then_sends(
    gateway: InProcessGateway, target: GrpcTarget
) -> None:
    topic = "GrpcBusyTwice"
    create_topic(target, topic)
    fault = gateway.faults.add(request="SendMessage", topic=topic, respond="TOO_MANY_REQUESTS", times=2)
    lines = produce(target, tls=False, topic=topic, count=1)
    assert lines[0] == "STARTED", lines
    assert [line.split()[:2] for line in lines if line.startswith(("SENT", "FAILED"))] == [["SENT", "0"]]
    assert _fired(gateway, fault) == 2
    stored = gateway.stored_messages(topic, wait_for=1)
    assert [m["msgId"] for m in stored] == [lines[1].split()[2]]


def test_java_producer_gives_up_on_an_always_busy_endpoint(
    gateway: InProcessGateway, target: GrpcTarget
) -> None:
    topic = "GrpcBusyAlways"
    create_topic(target, topic)
    fault = gateway.faults.add(request="SendMessage", topic=topic, respond=42900)
    lines = produce(target, tls=False, topic=topic, count=1)
    failed = [line for line in lines if line.startswith("FAILED")]
    assert len(failed) == 1, lines
    assert failed[0].startswith("FAILED 0 TooManyRequestsException "), failed
    assert BUSY_REMARK in failed[0]
    assert _fired(gateway, fault) == 3
    assert gateway.stored_messages(topic) == []


def test_python_producer_does_not_retry_a_busy_answer(gateway: InProcessGateway, target: GrpcTarget) -> None:
    topic = "GrpcBusyPython"
    create_topic(target, topic)
    fault = gateway.faults.add(request="SendMessage", topic=topic, respond="TOO_MANY_REQUESTS", times=1)
    result = subprocess.run(
        [sys.executable, "-m", "compat_tests.grpc_python_producer", target.grpc_addr, topic, "2"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
        cwd=REPO,
        env={**os.environ, "HOME": str(target.home)},
    )
    lines = [line for line in result.stdout.splitlines() if line.split(" ", 1)[0].isupper()]
    assert lines[:1] == ["STARTED"], result.stdout + result.stderr[-3000:]
    outcomes = [line for line in lines if line.startswith(("SENT", "FAILED"))]
    assert [line.split()[:3] for line in outcomes[:1]] == [["FAILED", "0", "TooManyRequestsException"]]
    assert [line.split()[:2] for line in outcomes[1:]] == [["SENT", "1"]]
    assert _fired(gateway, fault) == 1
    assert len(gateway.stored_messages(topic, wait_for=1)) == 1


def _python_producer(target: GrpcTarget, topic: str, count: int) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "compat_tests.grpc_python_producer", target.grpc_addr, topic, str(count)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
        cwd=REPO,
        env={**os.environ, "HOME": str(target.home)},
    )
    lines = [line for line in result.stdout.splitlines() if line.split(" ", 1)[0].isupper()]
    assert lines[:1] == ["STARTED"], result.stdout + result.stderr[-3000:]
    return lines


def test_python_producer_on_a_full_disk_gets_the_brokers_error(
    gateway: InProcessGateway, target: GrpcTarget
) -> None:
    topic = "GrpcDiskFull"
    create_topic(target, topic)
    gateway.disk_full(True)
    try:
        lines = _python_producer(target, topic, 1)
    finally:
        gateway.disk_full(False)
    failed = [line for line in lines if line.startswith("FAILED")]
    assert len(failed) == 1, lines
    assert "service not available now" in failed[0]
    assert "the broker's disk is full" in failed[0]
    assert gateway.stored_messages(topic) == []


def test_python_push_consumer_sees_redelivered_messages_with_their_msg_id(
    gateway: InProcessGateway, target: GrpcTarget
) -> None:
    topic, group = "GrpcRewind", "GrpcRewindGroup"
    create_topic(target, topic)
    # Consumed from the queues' first message: a queue the consumer had not popped yet when a
    # message arrived would otherwise start after it (the POP init offset is the queue's max).
    create_group(target, group, 16)
    command = [sys.executable, "-m", "compat_tests.grpc_python_msgid_consumer", target.grpc_addr]
    consumer = subprocess.Popen(
        [*command, topic, group, "6", "90"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
        env={**os.environ, "HOME": str(target.home)},
    )
    lines: queue.Queue[str] = queue.Queue()
    stdout = consumer.stdout
    assert stdout is not None
    reader = threading.Thread(target=lambda: [lines.put(line.strip()) for line in stdout], daemon=True)
    reader.start()
    try:
        assert _next_line(lines, 30, "start") == "STARTED"
        sent = [line.split()[2] for line in _python_producer(target, topic, 3) if line.startswith("SENT")]
        assert len(sent) == 3
        first = [_next_line(lines, 60, f"first delivery {i}") for i in range(3)]
        offsets = gateway.rewind(group, topic, 3)
        rest = [_next_line(lines, 60, f"delivery {i} after the rewind") for i in range(3)]
    finally:
        consumer.terminate()  # its shutdown may wait out a long poll; what it received is in
        consumer.wait(timeout=RUN_TIMEOUT_S)
    assert sum(offsets.values()) == 0  # every queue back to its first message
    assert sorted(line.split()[1] for line in first) == sorted(sent)
    assert all(line.startswith("RECEIVED ") for line in rest), rest
    assert sorted(line.split()[1] for line in rest + first) == sorted(sent * 2)


def _next_line(lines: queue.Queue[str], timeout_s: float, what: str) -> str:
    """The consumer's next outcome line, within ``timeout_s``; fails naming ``what`` was awaited."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"the consumer printed nothing for {timeout_s:g} s: {what}") from None
        if line.split(" ", 1)[0].isupper():
            return line


def _start_msgid_consumer(
    target: GrpcTarget, topic: str, group: str, total: int
) -> tuple[subprocess.Popen[str], queue.Queue[str]]:
    """The Python push consumer (``compat_tests.grpc_python_msgid_consumer``) and its lines."""
    command = [sys.executable, "-m", "compat_tests.grpc_python_msgid_consumer", target.grpc_addr]
    consumer = subprocess.Popen(
        [*command, topic, group, str(total), "90"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
        env={**os.environ, "HOME": str(target.home)},
    )
    lines: queue.Queue[str] = queue.Queue()
    stdout = consumer.stdout
    assert stdout is not None
    threading.Thread(target=lambda: [lines.put(line.strip()) for line in stdout], daemon=True).start()
    return consumer, lines


def test_python_push_consumer_receives_after_refused_and_closed_receives(
    gateway: InProcessGateway, target: GrpcTarget
) -> None:
    """ReceiveMessage (server streaming) refused twice with TOO_MANY_REQUESTS, then ended
    UNAVAILABLE twice: the push consumer retries each receive after its pause
    (``PushConsumer.RECEIVE_RETRY_DELAY``) and gets every message."""
    topic, group = "GrpcReceiveFault", "GrpcReceiveFaultGroup"
    create_topic(target, topic)
    create_group(target, group, 16)
    busy = gateway.faults.add(request="ReceiveMessage", group=group, respond="TOO_MANY_REQUESTS", times=2)
    closed = gateway.faults.add(request="ReceiveMessage", group=group, close=True, times=2)
    consumer, lines = _start_msgid_consumer(target, topic, group, 3)
    try:
        assert _next_line(lines, 30, "start") == "STARTED"
        sent = [line.split()[2] for line in _python_producer(target, topic, 3) if line.startswith("SENT")]
        got = [_next_line(lines, 60, f"delivery {i}") for i in range(3)]
    finally:
        consumer.terminate()
        consumer.wait(timeout=RUN_TIMEOUT_S)
    assert (_fired(gateway, busy), _fired(gateway, closed)) == (2, 2)
    assert all(line.startswith("RECEIVED ") for line in got), got
    assert sorted(line.split()[1] for line in got) == sorted(sent)


def test_python_producer_sends_when_its_telemetry_stream_is_closed(
    gateway: InProcessGateway, target: GrpcTarget
) -> None:
    """The client's Telemetry stream (bidirectional) ended UNAVAILABLE at its first command (the
    client's settings): the Python producer does not wait for its settings' answer, and its
    sends go on over the unary SendMessage."""
    topic = "GrpcTelemetryClosed"
    create_topic(target, topic)
    closed = gateway.faults.add(request="Telemetry", close=True, times=1)
    lines = _python_producer(target, topic, 2)
    assert [line.split()[:2] for line in lines if line.startswith(("SENT", "FAILED"))] == [
        ["SENT", "0"],
        ["SENT", "1"],
    ]
    assert _fired(gateway, closed) == 1
    assert len(gateway.stored_messages(topic, wait_for=2)) == 2
