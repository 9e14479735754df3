"""Store throughput for 1 KiB messages, against the disk's own sequential write speed.

Run ``python -m bench.store [--seconds S] [--dir DIR]``. In one run, on one disk, it measures:

* raw sequential write: 1 MiB ``write`` calls into a file, then one ``fsync`` (the physical
  limit a commit log can approach), and the same with an ``fsync`` after every 64 KiB;
* ASYNC_FLUSH appends (the periodic flush of :meth:`MessageStore.tick` included);
* SYNC_FLUSH appends with 1 writer (every put waits for its own ``msync``) and with 64 writers
  sharing each ``msync`` (group commit: 64 puts, then one ``flush_up_to`` covering them all);
* reads: ``get_message`` batches of 32 over everything written.

Each case runs for ``--seconds`` (default 2) and prints messages/s, MB/s and the ratio to the raw
sequential write speed. The directory is removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codec.message import MessageRecord
from codec.properties import encode_properties
from store.config import StoreConfig
from store.message_store import MessageStore

BODY = bytes(range(256)) * 4  # 1 KiB
PROPS = encode_properties({"TAGS": "TagA", "KEYS": "bench", "UNIQ_KEY": "7F0000010A3C18B4AAC2604A3E5B0000"})
CHUNK = 1024 * 1024


def raw_write(path: Path, seconds: float, fsync_every: int | None) -> float:
    """Bytes per second of sequential writes (fsync at the end, or every ``fsync_every`` bytes)."""
    chunk = bytes(CHUNK if fsync_every is None else fsync_every)
    written = 0
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while time.perf_counter() - start < seconds:
            written += os.write(fd, chunk)
            if fsync_every is not None:
                os.fsync(fd)
        os.fsync(fd)
    finally:
        os.close(fd)
    elapsed = time.perf_counter() - start
    os.unlink(path)
    return written / elapsed


def open_store(root: Path, flush: str) -> MessageStore:
    config, _ = StoreConfig.from_properties(
        {"storePathRootDir": str(root), "flushDiskType": flush, "mappedFileSizeCommitLog": str(256 * CHUNK)}
    )
    return MessageStore(config).open()


def record(i: int) -> MessageRecord:
    return MessageRecord(
        topic="Bench", queue_id=i % 8, body=BODY, properties=PROPS, born_port=1, store_port=2
    )


def timed(seconds: float, step: Callable[[int], int]) -> tuple[int, float]:
    """Run ``step(i)`` (returns messages done) until ``seconds`` passed; returns (messages, elapsed)."""
    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        done += step(done)
    return done, time.perf_counter() - start


def bench_appends(root: Path, flush: str, writers: int, seconds: float) -> tuple[int, float, int]:
    store = open_store(root, flush)
    try:

        def step(i: int) -> int:
            ends = []
            for k in range(writers):
                result = store.put_message(record(i + k))
                assert result.append_result is not None
                ends.append(result.append_result.end_offset)
            if flush == "SYNC_FLUSH":
                store.flush_up_to(max(ends))  # one msync acknowledges every put of the round
            elif i % 1000 == 0:
                store.tick()  # the broker ticks every 100 ms, i.e. once per ~1000 puts here
            return writers

        count, elapsed = timed(seconds, step)
        size = store.max_phy_offset
    finally:
        store.close()
    return count, elapsed, size


def bench_reads(root: Path, seconds: float) -> tuple[int, float]:
    store = open_store(root, "ASYNC_FLUSH")
    try:
        offsets = dict.fromkeys(range(8), 0)

        def step(i: int) -> int:
            queue = i % 8
            got = store.get_message("Bench", queue, offsets[queue], 32)
            n = len(got.buffers)
            offsets[queue] = got.next_begin_offset if n else 0
            return max(n, 1)

        return timed(seconds, step)
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--dir", help="directory on the disk to measure (default: a temp dir)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-store-", dir=args.dir))
    try:
        raw = raw_write(base / "raw", args.seconds, None)
        raw_64k = raw_write(base / "raw64k", args.seconds, 64 * 1024)
        print(f"raw sequential write       {raw / 1e6:9.1f} MB/s  (fsync at end)")
        print(f"raw write + fsync per 64K  {raw_64k / 1e6:9.1f} MB/s")
        print(f"{'case':32} {'msgs/s':>10} {'MB/s':>8} {'x raw':>7}")
        for flush, writers in (("ASYNC_FLUSH", 1), ("SYNC_FLUSH", 1), ("SYNC_FLUSH", 64)):
            root = base / f"{flush}-{writers}"
            count, elapsed, size = bench_appends(root, flush, writers, args.seconds)
            mbps = size / elapsed / 1e6
            name = f"{flush} {writers} writer(s)"
            print(f"{name:32} {count / elapsed:10.0f} {mbps:8.1f} {mbps * 1e6 / raw:7.3f}")
            if flush == "ASYNC_FLUSH":
                reads, read_elapsed = bench_reads(root, args.seconds)
                print(f"{'reads (get_message x32)':32} {reads / read_elapsed:10.0f}")
            shutil.rmtree(root)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
