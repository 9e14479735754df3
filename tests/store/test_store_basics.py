"""The message store as a library: appends, reads, segment rolls, queues, index, time search,
reopen, config files, limits and cleanup (no broker, no networking)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from codec.hashing import tags_code
from codec.message import BLANK_MAGIC_CODE, MessageRecord, decode_record, iter_records, peek_record
from codec.properties import KEYS, TAGS, UNIQ_KEY, decode_properties, encode_properties
from store.consume_queue import ConsumeQueue
from store.message_filter import TagsCodeFilter
from store.message_store import MessageStore
from store.metadata import consumer_offsets, load_json_file, persist_json_file
from store.results import GetMessageStatus, PutMessageStatus
from tests.store.helpers import SEGMENT, small_config


class Clock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def message(topic: str, queue_id: int, i: int, size: int = 100, tag: str = "TagA") -> MessageRecord:
    props = {TAGS: tag, KEYS: f"key-{i} shared", UNIQ_KEY: f"UNIQ{i:08d}"}
    return MessageRecord(
        topic=topic,
        queue_id=queue_id,
        body=(f"body {i} 消息 ".encode() * (size // 10 + 1))[:size],
        properties=encode_properties(props),
        born_timestamp=1_700_000_000_000 + i,
        born_port=1234,
        store_port=10911,
    )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[MessageStore]:
    with MessageStore(small_config(tmp_path), clock=clock) as opened:
        yield opened


def bodies(result_body: bytes) -> list[bytes]:
    return [r.body for r in iter_records(result_body)]


def test_put_assigns_queue_and_physical_offsets_and_get_reads_ranges(store: MessageStore) -> None:
    results = [store.put_message(message("T", i % 2, i)) for i in range(10)]
    assert all(r.status is PutMessageStatus.PUT_OK for r in results)
    assert [r.append_result.logics_offset for r in results if r.append_result] == [
        0, 0, 1, 1, 2, 2, 3, 3, 4, 4,
    ]  # fmt: skip
    assert store.get_max_offset_in_queue("T", 0) == 5
    got = store.get_message("T", 0, 1, 3)
    assert got.status is GetMessageStatus.FOUND
    assert bodies(got.body()) == [message("T", 0, i).body for i in (2, 4, 6)]
    assert got.next_begin_offset == 4
    for record in iter_records(got.body()):
        data = store.look_message_by_offset(record.physical_offset)
        assert data is not None
        assert decode_record(data).queue_offset == record.queue_offset


def test_pull_status_table(store: MessageStore) -> None:
    assert store.get_message("None", 0, 0, 32).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    for i in range(3):
        store.put_message(message("S", 0, i))
    assert store.get_message("S", 0, 3, 32).status is GetMessageStatus.OFFSET_OVERFLOW_ONE
    badly = store.get_message("S", 0, 9, 32)
    assert (badly.status, badly.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 3)


def test_segments_roll_with_a_blank_marker_and_reads_cross_them(store: MessageStore, tmp_path: Path) -> None:
    count = 0
    while store.max_phy_offset < 2 * SEGMENT + 100:
        assert store.put_message(message("R", 0, count, size=1000)).ok
        count += 1
    files = sorted(os.listdir(tmp_path / "commitlog"))
    assert files[:3] == [f"{0:020d}", f"{SEGMENT:020d}", f"{2 * SEGMENT:020d}"]
    assert all((tmp_path / "commitlog" / f).stat().st_size == SEGMENT for f in files)
    first = (tmp_path / "commitlog" / files[0]).read_bytes()
    end = 0
    while True:  # walk the first file's records up to its end-of-file marker
        size, magic = peek_record(first, end)
        if magic == BLANK_MAGIC_CODE:
            break
        end += size
    assert size == SEGMENT - end  # the blank marker names the bytes left
    everything: list[bytes] = []
    offset = 0
    while offset < count:
        got = store.get_message("R", 0, offset, 32, 1 << 30)
        everything += bodies(got.body())
        offset = got.next_begin_offset
    assert everything == [message("R", 0, i, size=1000).body for i in range(count)]


def test_tag_filter_uses_the_tags_code(store: MessageStore) -> None:
    for i in range(6):
        store.put_message(message("F", 0, i, tag="TagA" if i % 3 == 0 else "TagB"))
    got = store.get_message("F", 0, 0, 32, message_filter=TagsCodeFilter({tags_code("TagA")}))
    assert [decode_properties(r.properties)[TAGS] for r in iter_records(got.body())] == ["TagA", "TagA"]
    none = store.get_message("F", 0, 1, 1, message_filter=TagsCodeFilter({tags_code("TagC")}))
    assert none.status is GetMessageStatus.NO_MATCHED_MESSAGE


def test_time_search_and_earliest_time(store: MessageStore, clock: Clock) -> None:
    for i in range(5):
        clock.now = 1_000_000 + i * 1000
        store.put_message(message("Time", 0, i))
    assert store.get_earliest_message_time("Time", 0) == 1_000_000
    assert store.get_offset_in_queue_by_time("Time", 0, 1_002_000) == 2
    assert store.get_offset_in_queue_by_time("Time", 0, 1_002_500) == 3
    assert store.get_offset_in_queue_by_time("Time", 0, 1_002_500, upper=True) == 2
    assert store.get_offset_in_queue_by_time("Time", 0, 9_999_999) == 5
    assert store.get_offset_in_queue_by_time("Time", 0, 0) == 0


def test_query_by_key_newest_first_with_cap(store: MessageStore, clock: Clock) -> None:
    for i in range(5):
        clock.now += 10
        store.put_message(message("Q", 0, i))
    found = store.query_message("Q", "shared", 3, 0, clock.now + 1)
    assert [decode_properties(r.properties)[UNIQ_KEY] for r in iter_records(found.body())] == [
        "UNIQ00000004",
        "UNIQ00000003",
        "UNIQ00000002",
    ]
    by_uniq = store.query_message("Q", "UNIQ00000001", 32, 0, clock.now + 1)
    assert len(found.buffers) == 3
    assert [r.body for r in iter_records(by_uniq.body())] == [message("Q", 0, 1).body]
    assert not store.query_message("Other", "shared", 32, 0, clock.now + 1).buffers


def test_reopen_after_clean_close_keeps_everything(tmp_path: Path, clock: Clock) -> None:
    with MessageStore(small_config(tmp_path), clock=clock) as store:
        for i in range(20):
            store.put_message(message("Re", i % 3, i))
    assert not (tmp_path / "abort").exists()
    with MessageStore(small_config(tmp_path), clock=clock) as store:
        assert store.last_exit_ok
        assert [store.get_max_offset_in_queue("Re", q) for q in range(3)] == [7, 7, 6]
        result = store.put_message(message("Re", 0, 99))
        assert result.append_result is not None
        assert result.append_result.logics_offset == 7


def test_oversized_body_is_refused_with_a_status(tmp_path: Path, clock: Clock) -> None:
    with MessageStore(small_config(tmp_path, maxMessageSize="1000"), clock=clock) as store:
        assert store.put_message(message("Big", 0, 1, size=1001)).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.put_message(message("Big", 0, 1, size=1000)).ok
        too_big_for_a_segment = message("Big", 0, 2, size=10)
        too_big_for_a_segment.body = b"x" * 999
        assert store.put_message(too_big_for_a_segment).ok


def test_sync_flush_flush_up_to_covers_the_put(tmp_path: Path, clock: Clock) -> None:
    with MessageStore(small_config(tmp_path, flushDiskType="SYNC_FLUSH"), clock=clock) as store:
        result = store.put_message(message("Sync", 0, 1))
        assert result.append_result is not None
        assert store.flush_up_to(result.append_result.end_offset) >= result.append_result.end_offset


def test_config_files_are_atomic_with_backup_and_read_fastjson_keys(tmp_path: Path) -> None:
    path = str(tmp_path / "config" / "consumerOffset.json")
    persist_json_file(path, {"offsetTable": {"T@g": {"0": 5}}})
    persist_json_file(path, {"offsetTable": {"T@g": {"0": 6}}})
    assert consumer_offsets(load_json_file(path)) == {"T@g": {0: 6}}
    assert consumer_offsets(json.loads(Path(path + ".bak").read_text())) == {"T@g": {0: 5}}
    Path(path).write_text('{"offsetTable":{"T@g":{0:7,1:8}}}')  # as fastjson writes it
    assert consumer_offsets(load_json_file(path)) == {"T@g": {0: 7, 1: 8}}


def test_cleanup_deletes_old_segments_and_advances_min_offsets(tmp_path: Path, clock: Clock) -> None:
    config = small_config(tmp_path, fileReservedTime="1")
    with MessageStore(config, clock=clock) as store:
        count = 0
        while store.max_phy_offset < 3 * SEGMENT:
            store.put_message(message("Old", 0, count, size=1000))
            count += 1
        store.flush()
        hours_later = clock.now + 2 * 3600 * 1000
        for name in os.listdir(tmp_path / "commitlog"):  # age the files as the clock says
            os.utime(tmp_path / "commitlog" / name, (hours_later / 1000 - 7200, hours_later / 1000 - 7200))
        clock.now = hours_later
        deleted = store.clean(manual=True)
        assert deleted >= 1
        assert store.min_phy_offset >= SEGMENT
        assert store.get_min_offset_in_queue("Old", 0) > 0
        moved = store.get_message("Old", 0, 0, 32)
        assert moved.status is GetMessageStatus.OFFSET_TOO_SMALL
        newest = store.get_message("Old", 0, count - 1, 32)
        assert bodies(newest.body()) == [message("Old", 0, count - 1, size=1000).body]


def test_consume_queue_units_written_with_pwrite_are_seen_by_the_mapping_and_a_reopen(tmp_path: Path) -> None:
    """Units go to the file with ``pwrite`` (MappedFile.write_at, as Java's
    putConsumeQueueDataByFileChannel); reads go through the mapping, which shares the page cache,
    and a flushed queue reopens with the same units."""
    queue = ConsumeQueue(str(tmp_path), "BenchmarkTest", 1023, 20 * 64)
    for n in range(100):  # crosses a file boundary: 64 units per file
        assert queue.put(n, 1000 + 50 * n, 50, n)
    assert [queue.get(n) for n in (0, 63, 64, 99)] == [
        (1000, 50, 0),
        (4150, 50, 63),
        (4200, 50, 64),
        (5950, 50, 99),
    ]
    assert queue.max_offset == 100
    queue.flush()
    queue.close()
    again = ConsumeQueue(str(tmp_path), "BenchmarkTest", 1023, 20 * 64)
    again.load()
    assert again.recover()
    assert again.max_offset == 100
    assert again.get(99) == (5950, 50, 99)
    again.close()
