"""The ``kill -9`` loop with POP consumers: a sender and a popper (pop, then ack what came back)
run against a SYNC_FLUSH gateway subprocess that is SIGKILLed at random moments and restarted.

A message counts as *sent* once its send was acknowledged and as *consumed* once an ack of it was
answered ``SUCCESS``. Whatever a kill interrupts (a pop whose answer was lost, a batch popped and
not yet acked, an ack the broker had not written) stays invisible until its invisible time passes;
the revive service then delivers it again through the POP retry topic (``PopReviveService``). After
the last cycle the popper drains until every sent message was consumed or the drain deadline
passes; messages popped more than once are reported as duplicates, never as errors.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codec.codes import ResponseCode
from compat_tests.pop_raw import RawSession, ack, pop, popped
from tests.fault.helpers import create_topic_command
from tests.fault.kill_loop import SYNC_FLUSH_CONF, kill_and_restart
from tests.fault.process import GatewayProcess
from tests.fault.wire import BlockingClient, send_one

TOPIC = "PopKillT"
GROUP = "PopKillG"
INVISIBLE_MS = 2_000
DRAIN_TIMEOUT_S = 45.0  # invisible time + revive's one-second lag + timer hops, on a loaded machine


@dataclass
class PopKillResult:
    cycles: int = 0
    sent: int = 0
    consumed: int = 0
    lost: list[str] = field(default_factory=list)
    duplicates: int = 0  # pops beyond the first of a message
    after_ack: int = 0  # of those, pops of a message whose ack had been answered SUCCESS
    restart_s: list[float] = field(default_factory=list)
    drain_s: float = 0.0
    elapsed_s: float = 0.0


@dataclass
class _Ledger:
    sent: list[bytes] = field(default_factory=list)
    pops: Counter[bytes] = field(default_factory=Counter)
    consumed: set[bytes] = field(default_factory=set)
    after_ack: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _sender(address: str, prefix: str, ledger: _Ledger, stop: threading.Event) -> None:
    """Send until the connection dies or ``stop``; record each acknowledged body."""
    seq = 0
    try:
        with BlockingClient(address, timeout_s=5) as client:
            while not stop.is_set():
                body = f"{prefix}-{seq}".encode()
                send_one(client, TOPIC, body, timeout_s=10)
                with ledger.lock:
                    ledger.sent.append(body)
                seq += 1
    except (OSError, ConnectionError, TimeoutError, AssertionError):
        return  # killed under us: what was acknowledged is in the ledger


def pop_and_ack_once(session: RawSession, ledger: _Ledger) -> int:
    """One POP of queue 0 and an ack of each record; the number of records popped."""
    answer = pop(session, TOPIC, GROUP, 0, INVISIBLE_MS, maxMsgNums="16")
    if answer["code"] != ResponseCode.SUCCESS:
        return 0  # POLLING_NOT_FOUND / POLLING_TIMEOUT: nothing visible now
    records = popped(answer)
    for view in records:
        body = str(view["body_text"]).encode()
        with ledger.lock:
            ledger.pops[body] += 1
            ledger.after_ack += body in ledger.consumed
        result = ack(session, TOPIC, GROUP, view["queue_id"], view["queue_offset"], view["handle"])
        if result["code"] == ResponseCode.SUCCESS:
            with ledger.lock:
                ledger.consumed.add(body)
    return len(records)


def _popper(address: str, ledger: _Ledger, stop: threading.Event) -> None:
    try:
        with RawSession(address) as session:
            while not stop.is_set():
                if pop_and_ack_once(session, ledger) == 0:
                    time.sleep(0.05)
    except (OSError, ConnectionError, TimeoutError):
        return


def _drain(address: str, ledger: _Ledger, timeout_s: float) -> None:
    """Pop and ack until every sent body is consumed or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    with RawSession(address) as session:
        while time.monotonic() < deadline:
            with ledger.lock:
                if ledger.consumed.issuperset(ledger.sent):
                    return
            if pop_and_ack_once(session, ledger) == 0:
                time.sleep(0.1)


def _traffic(address: str, prefix: str, ledger: _Ledger, stop: threading.Event) -> list[threading.Thread]:
    """The sender and the popper, not started yet."""
    return [
        threading.Thread(target=_sender, args=(address, prefix, ledger, stop), daemon=True),
        threading.Thread(target=_popper, args=(address, ledger, stop), daemon=True),
    ]


def _run(
    root: Path, drain_timeout_s: float, load: Callable[[GatewayProcess, _Ledger, PopKillResult], None]
) -> PopKillResult:
    """Start a SYNC_FLUSH gateway under ``root``, create the topic, run ``load``, drain, and count
    what the ledger saw."""
    started = time.monotonic()
    result = PopKillResult()
    ledger = _Ledger()
    gateway = GatewayProcess(root, SYNC_FLUSH_CONF)
    gateway.start()
    try:
        with BlockingClient(gateway.broker_addr) as admin:
            created = admin.invoke(create_topic_command(TOPIC, "1", "1"), 10)
            assert created.code == ResponseCode.SUCCESS, created.remark
        load(gateway, ledger, result)
        drain_started = time.monotonic()
        _drain(gateway.broker_addr, ledger, drain_timeout_s)
        result.drain_s = time.monotonic() - drain_started
        gateway.stop()
    finally:
        gateway.kill()
        result.elapsed_s = time.monotonic() - started
    result.sent = len(ledger.sent)
    result.consumed = len(ledger.consumed)
    result.lost = [b.decode() for b in ledger.sent if b not in ledger.consumed]
    result.duplicates = sum(n - 1 for n in ledger.pops.values() if n > 1)
    result.after_ack = ledger.after_ack
    return result


def run_pop_kill_loop(
    root: Path,
    cycles: int,
    kill_after_s: tuple[float, float] = (0.3, 1.5),
    drain_timeout_s: float = DRAIN_TIMEOUT_S,
    seed: int | None = None,
) -> PopKillResult:
    """Run ``cycles`` kill/restart cycles under ``root``; see the module docstring."""
    rng = random.Random(seed)

    def load(gateway: GatewayProcess, ledger: _Ledger, result: PopKillResult) -> None:
        for cycle in range(cycles):
            stop = threading.Event()
            threads = _traffic(gateway.broker_addr, f"c{cycle}", ledger, stop)
            result.restart_s.append(kill_and_restart(gateway, threads, stop, rng.uniform(*kill_after_s)))
            result.cycles += 1

    return _run(root, drain_timeout_s, load)


def run_pop_without_kills(
    root: Path, seconds: float, drain_timeout_s: float = DRAIN_TIMEOUT_S
) -> PopKillResult:
    """The same sender and consumer for ``seconds`` under SYNC_FLUSH with no kill, then a drain:
    the baseline in which an acknowledged message must never be popped again."""

    def load(gateway: GatewayProcess, ledger: _Ledger, result: PopKillResult) -> None:
        stop = threading.Event()
        threads = _traffic(gateway.broker_addr, "steady", ledger, stop)
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join(30)

    return _run(root, drain_timeout_s, load)
