"""What a restart after ``kill -9`` costs: the time to ``ready`` and the store bytes it maps follow
the data stored, not the size of the (1 GiB, default) commit-log file, the consume-queue files
and the index files.

A gateway with the default file sizes stores a few MB through the remoting client of the fault
suite and is SIGKILLed; every restart is measured from process start to its ``ready`` line and
compared with starts of a gateway on an empty store, measured the same way in the same test (the
best of a few of each, so one slow moment of a loaded machine decides nothing). Before each
restart the page cache of the store files is dropped: a restart then pays for every page it
reads. After ``ready`` the resident pages of every mapping of a file under the store directory
are summed from ``/proc/PID/smaps``.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from codec.codes import ResponseCode
from tests.fault.helpers import create_topic_command
from tests.fault.process import GatewayProcess
from tests.fault.wire import BlockingClient, pull_bodies, send_one

TOPIC = "RestartCost"
BODY_SIZE = 4096
MESSAGES = 1200  # ~5 MB of records
MORE_MESSAGES = 100  # sent before each further kill, so every restart recovers a fresh end
SENDERS = 4
STARTS = 3  # fresh starts and restarts measured each; the best of each is compared
MAX_STORE_RSS = 100 * 1024 * 1024


def store_rss_bytes(pid: int, store: Path) -> int:
    """Resident bytes of the process's mappings of files under ``store`` (``/proc/PID/smaps``)."""
    prefix = str(store.resolve()) + "/"
    total = 0
    counting = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if not fields:
            continue
        if "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            counting = len(fields) >= 6 and fields[5].startswith(prefix)
        elif counting and fields[0] == "Rss:":
            total += int(fields[1]) * 1024
    return total


def evict_page_cache(store: Path) -> None:
    """Write back and drop the page cache of every store file, so a restart reads from disk what it
    reads, as after a reboot or under memory pressure (a warm cache would hide a read of the tail)."""
    for path in store.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def new_gateway(root: Path) -> GatewayProcess:
    """A gateway with the default file sizes, its store and HOME under ``root``."""
    root.mkdir()
    return GatewayProcess(root)


def timed_start(gateway: GatewayProcess) -> float:
    """Seconds from starting the process to its ``ready`` line."""
    started = time.monotonic()
    gateway.start()
    return time.monotonic() - started


def send_bodies(address: str, sender: int, first: int, count: int, acked: list[bytes]) -> None:
    with BlockingClient(address, timeout_s=10) as client:
        for i in range(first, first + count):
            body = f"s{sender}-{i:06d}-".encode().ljust(BODY_SIZE, b"x")
            send_one(client, TOPIC, body, timeout_s=20)
            acked.append(body)


def send_concurrently(address: str, first: int, count: int, acked: list[bytes]) -> None:
    """``count`` messages over ``SENDERS`` connections; every one acknowledged."""
    per_sender = count // SENDERS
    failures: list[BaseException] = []

    def run(sender: int) -> None:
        try:
            send_bodies(address, sender, first, per_sender, acked)
        except BaseException as err:
            failures.append(err)

    threads = [threading.Thread(target=run, args=(s,), daemon=True) for s in range(SENDERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert failures == []
    assert not any(t.is_alive() for t in threads)


@pytest.mark.slow
def test_restart_after_kill9_costs_the_data_not_the_file_size(tmp_path: Path) -> None:
    fresh_s: list[float] = []
    for i in range(STARTS):
        fresh = new_gateway(tmp_path / f"fresh{i}")
        try:
            fresh_s.append(timed_start(fresh))
        finally:
            fresh.stop()

    gateway = new_gateway(tmp_path / "data")
    acked: list[bytes] = []
    restart_s: list[float] = []
    store_rss: list[int] = []
    try:
        gateway.start()
        with BlockingClient(gateway.broker_addr) as admin:
            created = admin.invoke(create_topic_command(TOPIC, "1", "1"), 10)
            assert created.code == ResponseCode.SUCCESS, created.remark
        send_concurrently(gateway.broker_addr, 0, MESSAGES, acked)
        for i in range(STARTS):
            if i:
                send_concurrently(gateway.broker_addr, MESSAGES + i * MORE_MESSAGES, MORE_MESSAGES, acked)
            gateway.kill()
            evict_page_cache(gateway.root / "store")
            restart_s.append(timed_start(gateway))
            store_rss.append(store_rss_bytes(gateway.pid, gateway.root / "store"))
        with BlockingClient(gateway.broker_addr) as client:
            stored = pull_bodies(client, TOPIC, 0)
        gateway.stop()
    finally:
        gateway.kill()
    commit_log = gateway.root / "store" / "commitlog"
    print(
        f"\nfresh start to ready {', '.join(f'{s:.2f}' for s in fresh_s)} s; restart after kill -9 "
        f"{', '.join(f'{s:.2f}' for s in restart_s)} s; store mapped after ready "
        f"{', '.join(f'{b / 2**20:.1f}' for b in store_rss)} MiB; "
        f"{sum(p.stat().st_size for p in commit_log.iterdir()) / 2**20:.0f} MiB of commit-log files"
    )
    assert sorted(stored) == sorted(acked)  # SYNC or not, a kill -9 keeps what the page cache has
    assert min(restart_s) <= 2 * min(fresh_s)
    assert max(store_rss) < MAX_STORE_RSS
