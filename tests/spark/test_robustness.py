"""Torn tails, zero-filled holes, rolled segments and corrupt records: reading stops at the valid end
as the store's recovery would, counts the skipped bytes and logs one line (no exception)."""

from __future__ import annotations

import logging
import shutil
import struct
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from spark.columns import Projection, RowFilter
from spark.scan import plan_ranges, read_range
from spark.source import MESSAGE_SCHEMA, arrow_schema
from tests.spark.stores import SEGMENT, Expected


def scan(root: Path) -> tuple[list[str], dict[str, int]]:
    """The uniq keys a direct (Spark-free) read returns, in commit-log order, and its counters."""
    names = ["commit_log_offset", "uniq_key"]
    projection = Projection(names, arrow_schema(StructType([MESSAGE_SCHEMA[n] for n in names])))
    keys: list[str] = []
    for r in plan_ranges(str(root), "b", 1 << 27):
        for batch in read_range(r, projection, RowFilter(include_system=True)):
            keys += batch.column(1).to_pylist()
    return keys, projection.stats


@pytest.fixture
def copy(tmp_path: Path, our_store: tuple[Path, list[Expected]]) -> Path:
    target = tmp_path / "store"
    shutil.copytree(our_store[0], target)
    return target


def last_segment(root: Path) -> Path:
    return sorted((root / "commitlog").iterdir())[-1]


def record_at(expected: list[Expected], index: int) -> tuple[int, int]:
    """(segment-relative position, global offset) of expected message ``index``."""
    offset = expected[index]["commit_log_offset"]
    return offset % SEGMENT, offset


def in_order(expected: list[Expected]) -> list[Expected]:
    return sorted(expected, key=lambda e: e["commit_log_offset"])


def test_clean_store_skips_nothing(copy: Path, our_store: tuple[Path, list[Expected]]) -> None:
    keys, stats = scan(copy)
    assert len(keys) == len(our_store[1]) + 5
    assert stats.get("skipped_bytes", 0) == 0
    assert len(list((copy / "commitlog").iterdir())) >= 3  # rolled segments are followed


def test_torn_tail(
    copy: Path, our_store: tuple[Path, list[Expected]], caplog: pytest.LogCaptureFixture
) -> None:
    full, _ = scan(copy)
    seg = last_segment(copy)
    data = bytearray(seg.read_bytes())
    end = len(bytes(data).rstrip(b"\0"))
    # A record whose copy was interrupted: its bytes are there but TOTALSIZE (written last) is 0.
    first = seg.parent.iterdir().__next__().read_bytes()
    size = struct.unpack_from(">i", first, 0)[0]
    torn = bytearray(first[:size])
    torn[0:4] = b"\0\0\0\0"
    data[end : end + size - 100] = torn[: size - 100]
    seg.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="spark.scan"):
        keys, stats = scan(copy)
    assert keys == full
    assert stats["skipped_bytes"] == len(bytes(data[end:]).rstrip(b"\0"))
    assert next(r.getMessage() for r in caplog.records if "skipped" in r.getMessage()).endswith(
        f"skipped {stats['skipped_bytes']} bytes"
    )


@pytest.mark.parametrize("damage", ["bad-magic", "bad-crc", "zero-hole", "bad-size"])
def test_corrupt_record_stops_at_the_valid_end(
    copy: Path, our_store: tuple[Path, list[Expected]], damage: str, session: SparkSession
) -> None:
    ordered = in_order(our_store[1])
    victim = ordered[-10]  # in the last segment, with whole records after it
    seg = last_segment(copy)
    assert int(seg.name) <= victim["commit_log_offset"]
    pos = victim["commit_log_offset"] - int(seg.name)
    data = bytearray(seg.read_bytes())
    if damage == "bad-magic":
        data[pos + 4] ^= 0xFF
    elif damage == "bad-crc":
        data[pos + 200] ^= 0x01  # a body byte (bodies here are at least 50 bytes after an 84-byte head)
    elif damage == "zero-hole":
        data[pos : pos + 4096] = bytes(4096)
    else:
        struct.pack_into(">i", data, pos, 5000)
    seg.write_bytes(bytes(data))
    keys, stats = scan(copy)
    full_before = [e["uniq_key"] for e in ordered if e["commit_log_offset"] < victim["commit_log_offset"]]
    assert [k for k in keys if k.startswith("UNIQ")][: len(full_before)] == full_before
    assert victim["uniq_key"] not in keys
    assert stats["skipped_bytes"] > 0
    # The same through Spark: no exception, the rows before the damage.
    got = session.read.format("rocketmq").load(str(copy)).select("uniq_key").collect()
    assert {r[0] for r in got} == set(full_before) & {e["uniq_key"] for e in our_store[1]}


def test_reading_writes_nothing_and_takes_no_lock(copy: Path, session: SparkSession) -> None:
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in copy.rglob("*")}
    session.read.format("rocketmq").load(str(copy)).count()
    session.read.format("rocketmq.offsets").load(str(copy)).count()
    assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in copy.rglob("*")} == before
    assert not (copy / "lock").exists() or before.get(copy / "lock") is not None
