"""Store directories for the Spark tests, written with the project's own store (its public API)."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from codec.message import MessageRecord, MessageSysFlag
from codec.properties import KEYS, TAGS, UNIQ_KEY, encode_properties
from store.config import StoreConfig
from store.message_store import MessageStore

SEGMENT = 64 * 1024  # small commit-log files so that a few hundred messages roll several times
Expected = dict[str, Any]  # what a reader must see for one message (write_messages)
BASE_MS = 1_700_000_000_000  # store clock of message 0; message i is stored at BASE_MS + i * 1000


def small_config(root: Path) -> StoreConfig:
    config, unknown = StoreConfig.from_properties(
        {
            "storePathRootDir": str(root),
            "mappedFileSizeCommitLog": str(SEGMENT),
            "mappedFileSizeConsumeQueue": str(100 * 20),
            "maxHashSlotNum": "64",
            "maxIndexNum": "256",
        }
    )
    assert not unknown
    return config


class Clock:
    def __init__(self) -> None:
        self.now = BASE_MS

    def __call__(self) -> int:
        return self.now


def make_message(i: int, topic: str = "Orders", queue_id: int | None = None) -> MessageRecord:
    """Message ``i``: varied bodies (some Chinese), every 10th zlib-compressed, every 7th from IPv6."""
    body = (f"order {i} 订单 ".encode() * (5 + i % 40))[: 50 + (i * 37) % 900]
    sys_flag = 0
    stored = body
    if i % 10 == 3:
        stored = zlib.compress(body)
        sys_flag = MessageSysFlag.COMPRESSED_FLAG
    born = bytes(15) + b"\x01" if i % 7 == 5 else b"\x0a\x00\x00\x07"
    props = {
        TAGS: f"Tag{i % 3}",
        KEYS: f"key-{i} shared",
        UNIQ_KEY: f"UNIQ{i:08d}",
        "color": "红" if i % 2 else "blue",
    }
    return MessageRecord(
        topic=topic,
        queue_id=i % 4 if queue_id is None else queue_id,
        body=stored,
        properties=encode_properties(props),
        sys_flag=sys_flag,
        flag=i % 5,
        born_timestamp=BASE_MS + i * 1000 - 250,
        born_host=born,
        born_port=40000 + i,
        store_port=10911,
        reconsume_times=i % 2,
    )


def write_messages(
    store: MessageStore, clock: Clock, first: int, count: int, topic: str = "Orders"
) -> list[Expected]:
    """Put messages ``first .. first+count-1``; returns what a reader must see for each."""
    expected = []
    for i in range(first, first + count):
        clock.now = BASE_MS + i * 1000
        msg = make_message(i, topic)
        plain = zlib.decompress(msg.body) if msg.sys_flag & MessageSysFlag.COMPRESSED_FLAG else msg.body
        result = store.put_message(msg)
        assert result.ok, result
        expected.append(
            {
                "i": i, "topic": topic, "queue_id": msg.queue_id, "queue_offset": msg.queue_offset,
                "commit_log_offset": msg.physical_offset, "body": plain, "uniq_key": f"UNIQ{i:08d}",
                "keys": f"key-{i} shared", "tags": f"Tag{i % 3}", "store_ms": clock.now,
                "born_ms": BASE_MS + i * 1000 - 250, "flag": i % 5, "reconsume_times": i % 2,
                "sys_flag": msg.sys_flag, "born_v6": i % 7 == 5, "born_port": 40000 + i,
                "color": "红" if i % 2 else "blue",
            }
        )  # fmt: skip
    return expected


def build_store(root: Path, count: int = 300) -> list[Expected]:
    """A closed store with ``count`` Orders messages, 20 Audit messages and 5 in a system topic."""
    clock = Clock()
    with MessageStore(small_config(root), clock=clock) as store:
        expected = write_messages(store, clock, 0, count)
        expected += write_messages(store, clock, count, 20, topic="Audit")
        write_messages(store, clock, count + 20, 5, topic="rmq_sys_internal")
    return expected
