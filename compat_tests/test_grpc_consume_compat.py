"""RocketMQ 5's gRPC consumption: the unmodified rocketmq-client-java 5.0.8 SimpleConsumer and
PushConsumer against our endpoint and against the real 5.3.3 Proxy in local mode.

The Java side is ``compat_tests/java/grpc5/src/rmqgrpc/Consume.java``; the messages are sent by
``Produce.java``. Consumer groups with a small retry count are created over the remoting protocol
on the broker behind each endpoint (as ``mqadmin updateSubGroup``), and the dead letter queue is
read back over it too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from compat_tests.grpc_targets import (
    FIFO_TOPIC,
    GRPC_CLIENT,
    REPO,
    RUN_TIMEOUT_S,
    GrpcTarget,
    create_group,
    create_topic,
    java_command,
    produce,
    run_java,
    start_ours,
    start_real,
    stored,
)
from compat_tests.reference import REFERENCE_LIB

pytestmark = [pytest.mark.compat, pytest.mark.slow]


@pytest.fixture(scope="module", params=["ours", "real"])
def consume_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GrpcTarget]:
    import shutil

    if shutil.which("java") is None or not REFERENCE_LIB.is_dir() or not (GRPC_CLIENT / "classes").is_dir():
        pytest.fail("java, the reference jars or the 5.x gRPC client are missing: run scripts/setup-java.sh")
    workdir = tmp_path_factory.mktemp(f"grpc-consume-{request.param}")
    started = start_ours(workdir) if request.param == "ours" else start_real(workdir)
    try:
        yield started
    finally:
        started.stop()


def consume(target: GrpcTarget, mode: str, topic: str, group: str, count: int, seconds: int) -> list[str]:
    return run_java(target, "rmqgrpc.Consume", mode, topic, group, str(count), str(seconds))


def sent_bodies(target: GrpcTarget, topic: str, count: int) -> list[str]:
    lines = produce(target, tls=False, topic=topic, count=count)
    assert [line.split()[0] for line in lines].count("SENT") == count, lines
    return [f"grpc_message_{i}_中文" for i in range(count)]


def bodies(lines: list[str], kind: str) -> list[str]:
    return [line.split()[1] for line in lines if line.startswith(kind + " ")]


def test_simple_consumer_receives_and_acks_everything(consume_target: GrpcTarget) -> None:
    topic, group = "GrpcConsumeSimple", "GrpcSimpleGroup"
    create_topic(consume_target, topic)
    create_group(consume_target, group, 16)
    expected = sent_bodies(consume_target, topic, 5)
    lines = consume(consume_target, "simple", topic, group, 5, 60)
    assert "FAILED" not in " ".join(lines), lines
    assert sorted(bodies(lines, "ACKED")) == sorted(expected)
    assert sorted(bodies(lines, "RECEIVED")) == sorted(expected)
    assert lines[-2:] == ["EMPTY", "DONE"]


def test_change_invisible_duration_brings_the_message_back(consume_target: GrpcTarget) -> None:
    topic, group = "GrpcConsumeChange", "GrpcChangeGroup"
    create_topic(consume_target, topic)
    create_group(consume_target, group, 16)
    expected = sent_bodies(consume_target, topic, 1)
    lines = consume(consume_target, "change", topic, group, 1, 90)
    assert "FAILED" not in " ".join(lines), lines
    received = [line.split()[1:] for line in lines if line.startswith("RECEIVED ")]
    assert received == [[expected[0], "1"], [expected[0], "2"]], lines
    assert bodies(lines, "CHANGED") == expected
    assert bodies(lines, "ACKED") == expected
    assert lines[-2:] == ["EMPTY", "DONE"]


def test_push_consumer_receives_everything(consume_target: GrpcTarget) -> None:
    topic, group = "GrpcConsumePush", "GrpcPushGroup"
    create_topic(consume_target, topic)
    create_group(consume_target, group, 16)
    expected = sent_bodies(consume_target, topic, 8)
    lines = consume(consume_target, "push", topic, group, 8, 90)
    assert "FAILED" not in " ".join(lines), lines
    assert sorted(set(bodies(lines, "RECEIVED"))) == sorted(expected)


def test_push_consumer_failing_until_max_attempts_lands_in_the_dlq(consume_target: GrpcTarget) -> None:
    """After the last attempt failed, the next receive moves the message to %DLQ%group (the server
    does, not the client): the consumer keeps receiving until the message is found there."""
    topic, group = "GrpcConsumeDlq", "GrpcDlqGroup"
    create_topic(consume_target, topic)
    create_group(consume_target, group, 2)  # max attempts: retryMaxTimes + 1
    expected = sent_bodies(consume_target, topic, 1)
    argv = java_command(consume_target, "rmqgrpc.Consume", "pushfail", topic, group, "3", "100")
    consumer = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert consumer.stdout is not None
        assert consumer.stdin is not None
        lines: list[str] = []
        for line in consumer.stdout:  # ends at LAST_ATTEMPT, or when the program ends (100 s)
            lines.append(line.strip())
            if line.startswith(("LAST_ATTEMPT", "DONE")):
                break
        attempts = [line.split()[2] for line in lines if line.startswith("RECEIVED ")]
        assert attempts == ["1", "2", "3"], lines
        deadline = time.monotonic() + 60
        dlq: list[bytes] = []
        while not dlq and time.monotonic() < deadline:
            dlq = [r.body for queue in stored(consume_target, f"%DLQ%{group}").values() for r in queue]
        consumer.stdin.close()
        lines += [line.strip() for line in consumer.stdout]
    finally:
        if consumer.stdin is not None and not consumer.stdin.closed:
            consumer.stdin.close()
        try:
            consumer.wait(RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            consumer.kill()
            consumer.wait()
    assert [b.decode().replace(" ", "_") for b in dlq] == expected
    assert lines[-1] == "DONE", lines
    assert "FAILED" not in " ".join(lines), lines


def test_push_consumer_of_an_orderly_group_gets_a_message_group_in_order(consume_target: GrpcTarget) -> None:
    topic, group = FIFO_TOPIC, "GrpcFifoGroup"
    create_topic(consume_target, topic, "+message.type=FIFO")
    create_group(consume_target, group, 16, orderly=True)
    lines = produce(consume_target, tls=False, topic=topic, count=6, option="group=order-7")
    assert [line.split()[0] for line in lines].count("SENT") == 6, lines
    lines = consume(consume_target, "push", topic, group, 6, 90)
    assert "FAILED" not in " ".join(lines), lines
    assert bodies(lines, "RECEIVED") == [f"grpc_message_{i}_中文" for i in range(6)]


def run_python(
    target: GrpcTarget, module: str, topic: str, group: str, count: int, seconds: int
) -> list[str]:
    """Run a Python 5.x client script (its own process, plaintext) on the target's endpoint; its
    outcome lines, the first of which must be STARTED."""
    result = subprocess.run(
        [sys.executable, "-m", module, target.grpc_addr, topic, group, str(count), str(seconds)],
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


def test_python_simple_consumer_receives_and_acks_everything(consume_target: GrpcTarget) -> None:
    """rocketmq-python-client 5.1.2's SimpleConsumer, plaintext, in its own process."""
    topic, group = "GrpcConsumePython", "GrpcPythonGroup"
    create_topic(consume_target, topic)
    create_group(consume_target, group, 16)
    expected = sent_bodies(consume_target, topic, 3)
    lines = run_python(consume_target, "compat_tests.grpc_python_consumer", topic, group, 3, 60)
    assert not [line for line in lines if line.startswith("FAILED")], lines
    assert sorted(bodies(lines, "ACKED")) == sorted(expected)
    assert lines[-2:] == ["EMPTY", "DONE"]


def test_python_push_consumer_gets_everything_and_retries_a_failure(consume_target: GrpcTarget) -> None:
    """rocketmq-python-client 5.1.2's PushConsumer, plaintext, in its own process: every message is
    consumed, and the one its listener failed comes back with delivery attempt 2."""
    topic, group = "GrpcPushPython", "GrpcPythonPushGroup"
    create_topic(consume_target, topic)
    create_group(consume_target, group, 16)
    expected = sent_bodies(consume_target, topic, 3)
    lines = run_python(consume_target, "compat_tests.grpc_python_push_consumer", topic, group, 3, 90)
    assert lines[-1] == "DONE"
    received = [line.split() for line in lines if line.startswith("RECEIVED")]
    assert sorted({body for _, body, _, result in received if result == "SUCCESS"}) == sorted(expected), lines
    [failed] = [(body, attempt) for _, body, attempt, result in received if result == "FAILURE"]
    assert [attempt for _, body, attempt, result in received if body == failed[0]] == ["1", "2"], lines
