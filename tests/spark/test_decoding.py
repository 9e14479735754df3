"""The bulk decoding shortcuts of the reader against plain Python (no Spark): copying byte ranges
into Arrow columns by each of its three strategies, finding a record far from where a partition
starts, and where a segment's written data ends (a sparse file's hole, written zeros)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from codec.message import MessageRecord, encode_record
from codec.message_id import encode_offset_msg_id
from codec.properties import TAGS, UNIQ_KEY, encode_properties
from spark.columns import Projection, var_array
from spark.layout import open_map
from spark.network import QueueRange
from spark.pulling import _decode
from spark.records import data_extents, resync, walk, written_end
from spark.remote import QueueRoute
from spark.source import MESSAGE_SCHEMA, arrow_schema

RNG_SEED = 17  # fixed: the same cases every run


def ranges(rng: np.random.Generator, lens: list[int], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Non-overlapping ranges of the given lengths in ascending positions, the last ending at ``size``."""
    gaps = rng.integers(0, 40, len(lens))
    ends = np.cumsum(np.array(lens) + gaps)
    pos = ends - np.array(lens) + (size - int(ends[-1]))
    return pos.astype(np.int64), np.array(lens, dtype=np.int64)


@pytest.mark.parametrize(
    "lengths",
    [
        [11] * 300,  # alike and short (topics): fixed-width rows trimmed by a mask
        [5, 250, 0, 3, 70, 1] * 50,  # short and mixed: a byte index
        [1024] * 40 + [0, 3000],  # long (bodies): a slice per range
        [11] * 299 + [3],  # alike, but a fixed-width row at the last range would run past the data
        [1024] * 40,  # one length (fixed-size bodies): the gathered rows are the values
    ],
    ids=["alike", "mixed", "long", "alike-at-end", "one-length"],
)
def test_var_array_copies_every_range_exactly(lengths: list[int]) -> None:
    rng = np.random.default_rng(RNG_SEED)
    raw = rng.integers(0, 256, sum(lengths) + 40 * len(lengths) + 100, dtype=np.uint8)
    pos, lens = ranges(rng, lengths, len(raw))  # the last range ends at the last byte of the data
    got = var_array(raw, pos, lens, pa.binary()).to_pylist()
    assert got == [raw[p : p + n].tobytes() for p, n in zip(pos.tolist(), lens.tolist(), strict=True)]


def record(offset: int, body: bytes) -> bytes:
    return encode_record(MessageRecord(topic="T", queue_id=0, body=body, physical_offset=offset))


def test_resync_finds_a_record_beyond_its_first_search_window(tmp_path: Path) -> None:
    """A partition starting inside a 100 KiB body: the next record's magic code is more than one
    search window (64 KiB) away, once exactly across a window's end."""
    first = record(0, b"x" * 100_000)
    second = record(len(first), b"y" * 10)
    path = tmp_path / "00000000000000000000"
    path.write_bytes(first + second + bytes(4096))
    mm = open_map(str(path))
    assert mm is not None
    with mm:
        magic_at = len(first) + 4
        for pos in (10, magic_at - 65536 - 4 + 2, magic_at - 65536 - 4 + 1, magic_at - 8):
            assert resync(mm, 0, pos, len(mm)) == len(first), pos
        assert resync(mm, 0, len(first) + 1, len(mm)) == len(mm)  # only zeros after it


def test_written_end_skips_holes_and_written_zeros(tmp_path: Path) -> None:
    data = record(0, b"z" * 500)
    sparse = tmp_path / "sparse"
    with sparse.open("wb") as f:
        f.write(data)
        f.truncate(64 * 1024 * 1024)  # a preallocated segment: a hole after the data
    written = tmp_path / "written"
    written.write_bytes(data + b"\x00\x07" + bytes(5 * 1024 * 1024))  # zeros written, not a hole
    # The record ends in zeros itself (PROPERTIESLENGTH 0): its last non-zero byte is the end.
    for path, end in ((sparse, len(data.rstrip(b"\0"))), (written, len(data) + 2)):
        mm = open_map(str(path))
        assert mm is not None
        with mm:
            assert written_end(mm, str(path)) == end
    # Where the file system reports holes the tail is never read; the data is always covered.
    first_start, first_stop = data_extents(str(sparse), 64 * 1024 * 1024)[0]
    assert first_start == 0
    assert first_stop >= len(data)


def test_pulled_records_decode_as_a_consumer_receives_them() -> None:
    """The network reader's batch decoding of pull answers (records back to back, not at their
    stored positions) against each record decoded alone: the range's end, the offset each answer
    was pulled from and the tag filter applied as ``PullAPIWrapper.processPullResult`` does."""
    route = QueueRoute("T", "broker-a", "127.0.0.1:1", 3)
    sent = [
        MessageRecord(
            topic="T", queue_id=3, body=bytes([i]) * (10 + i % 3), queue_offset=i,
            physical_offset=5000 + 97 * i,
            properties=encode_properties({TAGS: "red" if i % 2 else "blue", UNIQ_KEY: f"K{i}"}),
            born_timestamp=1_700_000_000_000 + i, store_timestamp=1_700_000_000_500 + i,
            born_port=40000 + i, store_port=10911,
        )
        for i in range(12)
    ]  # fmt: skip
    answers = [
        (2, b"".join(encode_record(m) for m in sent[1:7])),
        (7, b"".join(encode_record(m) for m in sent[7:])),
    ]
    schema = arrow_schema(MESSAGE_SCHEMA)
    projection = Projection(names=schema.names, schema=schema, include_body=True, check_crc=False)
    for tags in (None, frozenset({"red"})):
        bodies = [body for _, body in answers]
        starts = [walk(body, 0, len(body))[0] for body in bodies]
        batches = list(
            _decode(bodies, starts, [o for o, _ in answers], QueueRange(route, 0, 10), projection, tags)
        )
        got = pa.Table.from_batches(batches, schema).to_pylist()
        wanted = [m for m in sent if 2 <= m.queue_offset < 10 and (tags is None or m.queue_offset % 2)]
        assert [r["queue_offset"] for r in got] == [m.queue_offset for m in wanted]
        assert [(r["body"], r["commit_log_offset"], r["tags"], r["uniq_key"], r["broker"]) for r in got] == [
            (
                m.body,
                m.physical_offset,
                "red" if m.queue_offset % 2 else "blue",
                f"K{m.queue_offset}",
                "broker-a",
            )
            for m in wanted
        ]
        assert [r["msg_id"] for r in got] == [
            encode_offset_msg_id(m.store_host, m.store_port, m.physical_offset) for m in wanted
        ]
