"""The ``kill -9`` loop: concurrent senders against a SYNC_FLUSH gateway subprocess that is
SIGKILLed at random moments and restarted; after every restart every acknowledged message must
be there. Used by the fault suite (a few cycles) and ``scripts/fault_long.py`` (hundreds)."""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from codec.codes import ResponseCode
from tests.fault.helpers import create_topic_command
from tests.fault.process import GatewayProcess
from tests.fault.wire import BlockingClient, pull_bodies, send_one

logger = logging.getLogger(__name__)

SYNC_FLUSH_CONF = {
    "flushDiskType": "SYNC_FLUSH",
    "mappedFileSizeCommitLog": str(8 * 1024 * 1024),  # small files: rolls over files as it goes
    "mappedFileSizeConsumeQueue": str(20 * 30_000),
    "maxHashSlotNum": "4096",
    "maxIndexNum": "16384",
}


@dataclass
class KillLoopResult:
    cycles: int = 0
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)
    restart_s: list[float] = field(default_factory=list)
    elapsed_s: float = 0.0


def send_until_stopped(
    address: str, topic: str, prefix: str, acked: list[bytes], stop: threading.Event
) -> None:
    """Send until the connection dies or ``stop``; record each body acknowledged SUCCESS."""
    seq = 0
    try:
        with BlockingClient(address, timeout_s=5) as client:
            while not stop.is_set():
                body = f"{prefix}-{seq}".encode()
                send_one(client, topic, body, timeout_s=10)
                acked.append(body)
                seq += 1
    except (OSError, ConnectionError, TimeoutError, AssertionError):
        return  # the broker was killed under us (or answered otherwise): `acked` holds the SUCCESSes


def _verify(gateway: GatewayProcess, topics: list[str], acked: dict[str, list[bytes]]) -> list[str]:
    """The acknowledged bodies a pull from offset 0 does not return (names of the lost)."""
    lost: list[str] = []
    with BlockingClient(gateway.broker_addr) as client:
        for topic in topics:
            stored = set(pull_bodies(client, topic, 0))
            lost += [b.decode() for b in acked[topic] if b not in stored]
    return lost


def kill_and_restart(
    gateway: GatewayProcess, threads: list[threading.Thread], stop: threading.Event, run_s: float
) -> float:
    """Start ``threads``, SIGKILL the gateway after ``run_s`` of their traffic, stop and join them,
    then start the gateway again; the seconds the restart took."""
    for t in threads:
        t.start()
    time.sleep(run_s)
    gateway.kill()
    stop.set()
    for t in threads:
        t.join(30)
    restarted = time.monotonic()
    gateway.start()
    return time.monotonic() - restarted


def run_kill_loop(
    root: Path,
    cycles: int,
    senders: int = 4,
    kill_after_s: tuple[float, float] = (0.3, 1.5),
    seed: int | None = None,
) -> KillLoopResult:
    """Run ``cycles`` kill/restart cycles under ``root``; see the module docstring."""
    rng = random.Random(seed)
    started = time.monotonic()
    result = KillLoopResult()
    topics = [f"KillT{i}" for i in range(senders)]
    acked: dict[str, list[bytes]] = {t: [] for t in topics}
    gateway = GatewayProcess(root, SYNC_FLUSH_CONF)
    gateway.start()
    try:
        with BlockingClient(gateway.broker_addr) as admin:
            for topic in topics:
                created = admin.invoke(create_topic_command(topic, "1", "1"), 10)
                assert created.code == ResponseCode.SUCCESS, created.remark
        for cycle in range(cycles):
            stop = threading.Event()
            threads = [
                threading.Thread(
                    target=send_until_stopped,
                    args=(gateway.broker_addr, t, f"c{cycle}s{i}", acked[t], stop),
                    daemon=True,
                )
                for i, t in enumerate(topics)
            ]
            result.restart_s.append(kill_and_restart(gateway, threads, stop, rng.uniform(*kill_after_s)))
            result.cycles += 1
            lost = _verify(gateway, topics, acked)
            result.acknowledged = sum(len(v) for v in acked.values())
            if lost:
                result.lost = lost
                break
        gateway.stop()
    finally:
        gateway.kill()
        result.elapsed_s = time.monotonic() - started
    return result
