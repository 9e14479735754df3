"""Faults on demand against the unmodified Java 5.3.3 remoting producer (``DefaultMQProducer``,
sync sends, ``retryTimesWhenSendFailed=2``): what its retry policy makes of a busy broker, a
closed connection and a request never answered.

The busy answer is the real broker's: ``SYSTEM_BUSY`` (2) with the remark
``[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, …``, which
``org.apache.rocketmq.broker.latency.BrokerFastFailure.cleanExpiredRequest`` gives a queued send
when the page cache is busy. The client side is ``DefaultMQProducerImpl.sendDefaultImpl``: a sync
send is tried ``1 + retryTimesWhenSendFailed`` times; an ``MQBrokerException`` whose code is in
``DefaultMQProducer.retryResponseCodes`` (``SYSTEM_BUSY`` is) and a ``RemotingException`` are
retried at once; after the last try the producer throws an ``MQClientException`` ("Send [3]
times, still failed") carrying the last exception's response code (so an always-busy broker is
seen as that ``MQClientException`` with response code 2, its cause the ``MQBrokerException``); a
try begun after the send timeout was spent ends the loop with ``RemotingTooMuchRequestException``
("sendDefaultImpl call timeout"). The client logs every retried exception (``sendKernelImpl
exception, resend at once`` with its stack trace) to its own log, where the test reads it.

One JVM run per case, against an in-process gateway whose fault rules the test sets.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.scenario import ScenarioProcess, of, run_scenario, start_scenario
from gateway.testing.inprocess import InProcessGateway
from gateway.transport.faults import BUSY_REMARK

pytestmark = pytest.mark.compat

LINE = "5.3.3"
STEP_S = 90.0
COMMIT_LOG_FILE_SIZE = str(64 * 1024 * 1024)
CALL_TIMEOUT = (
    "org.apache.rocketmq.remoting.exception.RemotingTooMuchRequestException: sendDefaultImpl call timeout"
)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    store = tmp_path_factory.mktemp("faults-store")
    properties = {"mappedFileSizeCommitLog": COMMIT_LOG_FILE_SIZE}
    with InProcessGateway(store, grpc_port=None, properties=properties) as gw:
        yield gw


@pytest.fixture(autouse=True)
def _no_rules_left(gateway: InProcessGateway) -> Iterator[None]:
    yield
    gateway.faults.clear()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "client"


def _produce(gateway: InProcessGateway, home: Path, topic: str, **args: object) -> list[dict[str, object]]:
    return run_scenario(
        LINE,
        "produce",
        gateway.namesrv_addr,
        home,
        STEP_S,
        topic=topic,
        count=1,
        group=f"pg_{topic}",
        **args,  # type: ignore[arg-type]
    )


def _retried(home: Path, topic: str) -> list[str]:
    """The exceptions the client logged as retried for ``topic`` (the line after each
    ``sendKernelImpl exception, resend at once`` of its log), in order."""
    lines = [
        line
        for path in sorted((home / "logs").rglob("*.log"))
        for line in path.read_text(errors="replace").splitlines()
    ]
    return [
        after.strip()
        for line, after in itertools.pairwise(lines)
        if "resend at once" in line and f"topic={topic}," in line
    ]


def _fired(gateway: InProcessGateway, fault_id: int) -> int:
    return next(int(f["fired"]) for f in gateway.faults.list() if f["id"] == fault_id)


def test_busy_twice_then_the_third_try_is_stored(gateway: InProcessGateway, home: Path) -> None:
    topic = "FaultBusyTwice"
    fault_id = gateway.faults.add(request="SEND_MESSAGE_V2", respond=2, times=2, topic=topic)
    events = _produce(gateway, home, topic)
    assert not of(events, "send_error")
    (sent,) = of(events, "sent")
    assert sent["status"] == "SEND_OK"
    assert _fired(gateway, fault_id) == 2
    busy = f"org.apache.rocketmq.client.exception.MQBrokerException: CODE: 2  DESC: {BUSY_REMARK} BROKER: "
    assert [line.startswith(busy) for line in _retried(home, topic)] == [True, True]
    stored = gateway.stored_messages(topic, wait_for=1)
    assert [(m["msgId"], m["offsetMsgId"]) for m in stored] == [(sent["msgId"], sent["offsetMsgId"])]


def test_busy_always_fails_after_three_tries_with_code_2(gateway: InProcessGateway, home: Path) -> None:
    topic = "FaultBusyAlways"
    fault_id = gateway.faults.add(request="SEND_MESSAGE_V2", respond=2, topic=topic)
    events = _produce(gateway, home, topic)
    (error,) = of(events, "send_error")
    assert error["error"].startswith(
        "org.apache.rocketmq.client.exception.MQClientException: Send [3] times, still failed, cost ["
    )
    assert f"Topic: {topic}, BrokersSent: [broker-a, broker-a, broker-a]" in error["error"]
    assert _fired(gateway, fault_id) == 3
    busy = f"org.apache.rocketmq.client.exception.MQBrokerException: CODE: 2  DESC: {BUSY_REMARK} BROKER: "
    assert [line.startswith(busy) for line in _retried(home, topic)] == [True, True, True]
    assert gateway.stored_messages(topic) == []


def test_a_closed_connection_fails_each_try_fast_or_by_its_timeout(
    gateway: InProcessGateway, home: Path
) -> None:
    """The client notices our close in one of two ways, a race of its own: when its
    ``closeChannel`` still finds the channel in its table it closes it and ``failFast`` fails the
    pending send at once (``RemotingSendRequestException``), and the send is retried on a new
    connection; otherwise the pending send waits out its timeout (``RemotingTimeoutException``)
    and no time is left for a retry (``NettyRemotingClient.NettyConnectManageHandler``)."""
    topic = "FaultClose"
    fault_id = gateway.faults.add(request="SEND_MESSAGE_V2", close=True, topic=topic)
    events = _produce(gateway, home, topic, send_timeout_ms=1500)
    (error,) = of(events, "send_error")
    retried = _retried(home, topic)
    assert _fired(gateway, fault_id) == len(retried)  # each try met our close, on a new connection
    failed = "org.apache.rocketmq.remoting.exception.RemotingSendRequestException: send request to "
    timed_out = (
        "org.apache.rocketmq.remoting.exception.RemotingTimeoutException: wait response on the channel "
    )
    if retried[-1].startswith(timed_out):
        assert all(line.startswith(failed) for line in retried[:-1])
        assert error["error"] == CALL_TIMEOUT
    else:
        assert [line.startswith(failed) for line in retried] == [True, True, True]
        assert error["error"].startswith(
            "org.apache.rocketmq.client.exception.MQClientException: Send [3] times, still failed"
        )


def test_a_request_never_answered_times_out_and_ends_the_send(gateway: InProcessGateway, home: Path) -> None:
    topic = "FaultDrop"
    fault_id = gateway.faults.add(request="SEND_MESSAGE_V2", drop=True, topic=topic)
    events = _produce(gateway, home, topic, send_timeout_ms=1500)
    (error,) = of(events, "send_error")
    assert error["error"] == CALL_TIMEOUT
    # The first try used up the send timeout waiting; no time was left for a retry.
    assert _fired(gateway, fault_id) == 1
    (timeout,) = _retried(home, topic)
    assert timeout.startswith(
        "org.apache.rocketmq.remoting.exception.RemotingTimeoutException: wait response on the channel "
    )


def test_push_consumer_gets_every_message_again_after_a_rewind(gateway: InProcessGateway, home: Path) -> None:
    """Deliver again (``InProcessGateway.rewind``) with the 5.3.3 ``DefaultMQPushConsumer``: the
    broker's RESET_CONSUMER_CLIENT_OFFSET makes it pull the rewound messages once more, each with
    its msgId (and the same stored message: the scenario's ``seen`` counts 2)."""
    topic, group = "RewindRemoting", "rewind_remoting"
    produced = run_scenario(
        LINE, "produce", gateway.namesrv_addr, home, STEP_S, topic=topic, count=3, group=f"pg_{topic}"
    )
    sent = sorted(event["msgId"] for event in of(produced, "sent"))
    assert len(sent) == 3
    consumer = start_scenario(
        LINE, "consume", gateway.namesrv_addr, home, STEP_S, topic=topic, group=group, expect=4
    )
    try:
        _received(consumer, 3)
        gateway.group_offsets(group, topic, max_lag=0, timeout_s=STEP_S)
        gateway.rewind(group, topic, 3)
        received = _received(consumer, 6)
    finally:
        consumer.stop()
    assert sorted(event["msgId"] for event in received) == sorted(sent * 2)
    assert sorted(event["seen"] for event in received) == [1, 1, 1, 2, 2, 2]


def _received(consumer: ScenarioProcess, count: int) -> list[dict[str, object]]:
    """The consumer's first ``count`` deliveries, once it has had them (within STEP_S)."""
    deadline = time.monotonic() + STEP_S
    while len(received := of(consumer.events(), "received")) < count:
        assert time.monotonic() < deadline, (
            f"{len(received)} of {count} deliveries: {consumer.stderr[-2000:]}"
        )
        time.sleep(0.1)
    return received[:count]
