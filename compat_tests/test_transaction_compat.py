"""Transactional messages with check-back: the unmodified Java clients of both lines
(``TransactionMQProducer``) and the Go client (``rocketmq-client-go/v2``) against our broker AND
the real Apache RocketMQ 5.3.3 broker, with identical assertions.

Both targets run with ``transactionTimeOut=6000`` (Java's default) and
``transactionCheckInterval=5000``: the real broker writes its op messages in batches up to
``transactionOpBatchInterval`` (3 s) after the end of a transaction, so a shorter interval would
make it check some transactions twice, which is its behaviour and not what these tests compare.

Driven by ``rmqcompat.TransactionScenario`` (Java) and ``compat_tests/go`` (Go, built from the Go
module proxy into a temporary directory).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests import gobuild
from compat_tests.scenario import (
    CLIENT_LINES,
    ArgValue,
    Event,
    ScenarioProcess,
    command_line,
    java_env,
    of,
    parse_events,
)
from compat_tests.targets import Target, start_target

pytestmark = pytest.mark.compat

TARGETS = ("gateway", "reference")
TX_CONF = {"transactionTimeOut": "6000", "transactionCheckInterval": "5000"}
MAIN_CLASS = "rmqcompat.TransactionScenario"
STEP_S = 150.0
BIG = 4 * 1024 * 1024  # body bytes of the large transactional message (maxMessageSize on both)
#: The large body is random, so the clients' compression (over 4 KiB by default) would make it
#: larger than maxMessageSize; it is sent uncompressed.
COMPRESS_OVER = BIG + 1
GO_DIR = Path(__file__).resolve().parent / "go"


def short(line: str) -> str:
    return line.replace(".", "")


def java_argv(line: str, target: Target, home: Path, **args: ArgValue) -> list[str]:
    """The command line of one TransactionScenario run (a 4 MiB body: a larger heap)."""
    return command_line(
        line, "tx", target.namesrv_addr, home, STEP_S, args, main_class=MAIN_CLASS, heap_mb=512
    )


def expected(count: int, big: bool) -> tuple[dict[str, int], dict[str, int]]:
    """(messages received once each, checks per message) for TransactionScenario's plans."""
    plans = {str(i): i % 5 for i in range(count)}
    if big:
        plans[str(count)] = 2
    received = {i: 1 for i, plan in plans.items() if plan in (0, 2, 4)}
    checks = {i: {2: 1, 3: 1, 4: 2}[plan] for i, plan in plans.items() if plan in (2, 3, 4)}
    return received, checks


def assert_outcome(events: list[Event], count: int, *, big: bool, at_least_once: bool = False) -> None:
    """Exactly the committed messages arrive and each is checked as planned; exactly once each,
    or at least once with ``at_least_once`` (across a broker restart the real broker may check a
    half message again, or redeliver what the consumer had not committed yet)."""
    assert not of(events, "error"), of(events, "error")
    sent = of(events, "sent")
    assert [e["status"] for e in sent] == ["SEND_OK"] * len(sent)
    assert len(sent) == count + (1 if big else 0)
    [done] = of(events, "done")
    want_received, want_checks = expected(count, big)
    if at_least_once:
        assert done["received"].keys() == want_received.keys(), done["received"]
        assert done["checks"].keys() == want_checks.keys(), done["checks"]
        assert all(done["checks"][i] >= n for i, n in want_checks.items()), done["checks"]
    else:
        assert done["received"] == want_received
        assert done["checks"] == want_checks
    assert done["complete"] is True
    if big:
        [large] = [e for e in of(events, "received") if e["i"] == count]
        assert large["bodyLen"] == BIG


@pytest.fixture(scope="module", params=TARGETS)
def tx_target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    if shutil.which("java") is None:
        pytest.fail("java is missing: run scripts/setup-java.sh")
    name: str = request.param
    started = start_target(name, tmp_path_factory.mktemp(f"tx-{name}"), TX_CONF)
    try:
        yield started
    finally:
        started.discard()


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_commit_rollback_unknown_and_check_back(
    tx_target: Target, tmp_path_factory: pytest.TempPathFactory, line: str
) -> None:
    """Ten messages (COMMIT, ROLLBACK, UNKNOW then COMMIT, UNKNOW then ROLLBACK, UNKNOW twice then
    COMMIT) and a 4 MiB one resolved by its check: exactly the committed ones are consumed, once
    each, and each check-back happens the expected number of times."""
    home = tmp_path_factory.mktemp(f"txh-{tx_target.name}-{short(line)}")
    argv = java_argv(
        line, tx_target, home, topic=f"TxT{short(line)}", group=f"txPG{short(line)}",
        cgroup=f"txCG{short(line)}", count=10, big=BIG, compress_over=COMPRESS_OVER, settle_ms=6000,
    )  # fmt: skip
    result = subprocess.run(argv, capture_output=True, env=java_env(), timeout=STEP_S + 60, check=False)
    events = parse_events(result.stdout.decode("utf-8", errors="replace"))
    stderr = result.stderr.decode("utf-8", errors="replace")[-3000:]
    assert result.returncode == 0, f"{events[-3:]}\n{stderr}"
    assert_outcome(events, 10, big=True)


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_check_back_after_a_broker_restart(
    tx_target: Target, tmp_path_factory: pytest.TempPathFactory, line: str
) -> None:
    """The broker restarts between the sends and the checks: the half messages and their op
    records survive, the producer (still running) is checked after the restart."""
    home = tmp_path_factory.mktemp(f"txr-{tx_target.name}-{short(line)}")
    resume = home / "resume"
    argv = java_argv(
        line, tx_target, home, topic=f"TxR{short(line)}", group=f"txRPG{short(line)}",
        cgroup=f"txRCG{short(line)}", count=5, resume_file=str(resume), settle_ms=6000,
    )  # fmt: skip
    (home / "logs").mkdir(parents=True, exist_ok=True)
    proc = ScenarioProcess(line, "tx", argv, home / "logs" / "tx.stderr", STEP_S)
    try:
        proc.wait_for(lambda e: e.get("event") in ("sent_all", "error"), 90)
        assert not of(proc.events(), "error"), proc.stderr
        assert not of(proc.events(), "check"), "checked before the restart"
        tx_target.restart_broker()
        resume.touch()
        events = proc.wait(STEP_S + 30)
    finally:
        proc.stop()
    assert_outcome(events, 5, big=False, at_least_once=True)


@pytest.fixture(scope="module")
def go_binary() -> Path:
    """The Go scenario, built with the Go toolchain from the Go module proxy (cached: gobuild)."""
    try:
        return gobuild.go_binary(GO_DIR)
    except gobuild.GoBuildError as err:
        pytest.fail(str(err))


def test_go_client_transaction_producer(tx_target: Target, go_binary: Path) -> None:
    """Nine messages from the Go client: COMMIT, ROLLBACK, UNKNOW (its check answers COMMIT) in
    turn: six are consumed, once each, and each unknown one is checked once."""
    argv = [
        str(go_binary),
        f"-namesrv={tx_target.namesrv_addr}",
        "-topic=TxGo",
        "-group=txGoPG",
        "-cgroup=txGoCG",
        "-count=9",
        f"-timeout={STEP_S:g}s",
        "-settle=6s",
    ]
    result = subprocess.run(argv, capture_output=True, timeout=STEP_S + 60, check=False)
    events = parse_events(result.stdout.decode("utf-8", errors="replace"))
    stderr = result.stderr.decode("utf-8", errors="replace")[-3000:]
    assert result.returncode == 0, f"{events[-3:]}\n{stderr}"
    assert not of(events, "send_error"), of(events, "send_error")
    assert len(of(events, "sent")) == 9
    [done] = of(events, "done")
    assert done["received"] == {str(i): 1 for i in range(9) if i % 3 != 1}
    assert done["checks"] == {str(i): 1 for i in range(9) if i % 3 == 2}
    assert done["complete"] is True
