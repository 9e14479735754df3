"""A benchmark store of 1 KiB messages, written with :class:`store.message_store.MessageStore`.

Messages go to :data:`TOPICS` x :data:`QUEUES` in batches of :data:`BATCH` per queue (round-robin),
so consume queues and the commit log look like a busy broker's. Each record carries a 1 KiB
body, tags, keys and a unique key, as a real producer's would (about 1.2 KB per record). Index
files are switched off (``messageIndexEnable=false``): the Spark reader never reads them and
building them would triple the build time.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from codec.message import MessageRecord
from codec.properties import KEYS, TAGS, UNIQ_KEY, encode_properties
from store.config import StoreConfig
from store.message_store import MessageStore

logger = logging.getLogger(__name__)

BODY_BYTES = 1024  # 1 KiB messages, the size the Spark throughput goal is stated for
TOPICS = ("BenchOrders", "BenchPayments", "BenchAudit", "BenchClicks")
QUEUES = 4  # per topic (the default queue count of an auto-created topic)
BATCH = 64  # messages per put_messages call
SEGMENT_BYTES = 256 * 1024 * 1024  # mappedFileSizeCommitLog: a 1 GiB store spans 4-5 segments
BORN_HOST = bytes([10, 0, 0, 7])  # a producer at 10.0.0.7
STORE_HOST = bytes([10, 0, 0, 1])


@dataclass(frozen=True)
class BuiltStore:
    root: Path
    messages: int
    data_bytes: int  # commit-log bytes holding records (the max physical offset)
    segments: list[Path]
    build_s: float


def _body(i: int) -> bytes:
    """1 KiB, different per message (a counter in front of a fixed pattern)."""
    head = f"{i:016d}".encode()
    return (
        head
        + bytes((i + j) % 251 for j in range(64)) * ((BODY_BYTES - len(head)) // 64)
        + b"x" * ((BODY_BYTES - len(head)) % 64)
    )


def _record(topic: str, queue_id: int, i: int, body: bytes, now_ms: int) -> MessageRecord:
    props = encode_properties(
        {TAGS: f"Tag{i % 8}", KEYS: f"order-{i}", UNIQ_KEY: f"0A000007{os.getpid():08X}{i:016X}"}
    )
    return MessageRecord(
        topic=topic,
        queue_id=queue_id,
        body=body,
        properties=props,
        born_timestamp=now_ms - 3,
        born_host=BORN_HOST,
        born_port=50000 + i % 1000,
        store_host=STORE_HOST,
        store_port=10911,
    )


def build_store(root: Path, size_bytes: int) -> BuiltStore:
    """Write about ``size_bytes`` of commit log into the new directory ``root`` and close it."""
    config, unknown = StoreConfig.from_properties(
        {
            "storePathRootDir": str(root),
            "mappedFileSizeCommitLog": str(SEGMENT_BYTES),
            "messageIndexEnable": "false",
            "flushDiskType": "ASYNC_FLUSH",
        }
    )
    assert not unknown, unknown
    bodies = [_body(i) for i in range(BATCH)]
    start = time.perf_counter()
    i = 0
    written = 0
    with MessageStore(config) as store:
        lanes = [(t, q) for t in TOPICS for q in range(QUEUES)]
        while written < size_bytes:
            topic, queue_id = lanes[(i // BATCH) % len(lanes)]
            now_ms = int(time.time() * 1000)
            batch = [_record(topic, queue_id, i + k, bodies[k], now_ms) for k in range(BATCH)]
            result = store.put_messages(batch)
            if not result.ok:
                raise RuntimeError(f"put failed while building the benchmark store: {result}")
            i += BATCH
            written = store.commit_log.max_offset
    segments = sorted((root / "commitlog").iterdir())
    built = BuiltStore(root, i, written, segments, time.perf_counter() - start)
    logger.info("built %d messages, %.1f MiB in %.1f s", i, written / 2**20, built.build_s)
    return built
