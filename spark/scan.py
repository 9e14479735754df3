"""Planning and reading byte ranges of commit-log segments: the work of one Spark partition.

A partition is a :class:`Range` of one segment. Planning (:func:`plan_ranges`) cuts every segment,
up to its last non-zero byte (:func:`spark.records.written_end`: a live segment's preallocated
tail of zeros holds no record and gets no partition), into ranges of at most
``maxBytesPerPartition`` bytes; a range owns the records whose first byte lies in it. Records
appended after planning belong to the next read (or micro-batch). A range that does not start at a
known record boundary (``exact=False``) finds its first record with :func:`spark.records.resync`
when it is read, on the executor, so a 1 GiB segment is planned without reading its records and
its ranges are read in parallel.

Reading (:func:`read_range`) walks the record headers, decodes and validates them in bulk
(:mod:`spark.columns`) and yields Arrow record batches of at most :data:`BATCH_ROWS` rows. Where a
range stops before its end on something that is not a whole record (a torn tail, a zero-filled
hole, a bad magic code, a PHYSICALOFFSET or length mismatch, a CRC mismatch) it stops as the
store's recovery would, counts the bytes up to the last non-zero byte of the range as skipped and
logs one line; the next range, if any, resynchronises on the next whole record.
"""

from __future__ import annotations

import logging
import mmap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from spark import columns as col
from spark.layout import list_segments, open_map
from spark.records import STOP_INVALID, STOP_ZERO, resync, used_end, walk, written_end

logger = logging.getLogger(__name__)

BATCH_ROWS = 16384  # rows per Arrow batch: ~16 MiB of 1 KiB bodies
READ_AHEAD_SLACK = 4 * 1024 * 1024  # past a range's end: its last record ends there (maxMessageSize)
DEFAULT_MAX_BYTES_PER_PARTITION = 128 * 1024 * 1024  # Spark's own default maxPartitionBytes


@dataclass(frozen=True)
class Range:
    """Bytes ``[begin, end)`` of one segment (positions relative to the segment's first byte)."""

    store: str
    broker: str
    segment: str
    segment_start: int
    begin: int
    end: int
    exact: bool  # begin is a record boundary (the segment start or a validated offset)


def plan_ranges(
    store: str,
    broker: str,
    max_bytes: int,
    lo: int | None = None,
    hi: int | None = None,
    exact_lo: bool = False,
    trim_zeros: bool = True,
) -> list[Range]:
    """Ranges covering global commit-log offsets ``[lo, hi)`` of ``store`` (``None``: no bound).

    Ranges starting at a segment's first byte are exact; so is the one starting at ``lo`` when the
    caller knows it is a record boundary (``exact_lo``: the streaming reader's validated offsets).
    ``trim_zeros`` stops each segment's ranges at its written end; a caller whose ``hi`` is already
    the end of the whole records (the streaming reader) need not look for it.
    """
    ranges = []
    for seg in list_segments(store):
        if hi is not None and seg.start >= hi:
            break
        if lo is not None and seg.end <= lo:
            continue
        first = max(0, lo - seg.start) if lo is not None else 0
        last = min(seg.size, hi - seg.start) if hi is not None else seg.size
        if trim_zeros and last > first:
            last = min(last, _written_end(seg.path))
        pos = first
        while pos < last:
            nxt = min(last, pos + max_bytes)
            exact = pos == 0 or (exact_lo and lo is not None and seg.start + pos == lo)
            ranges.append(Range(store, broker, seg.path, seg.start, pos, nxt, exact=exact))
            pos = nxt
    return ranges


def _written_end(path: str) -> int:
    mm = open_map(path)
    if mm is None:
        return 0
    with mm:
        return written_end(mm, path)


def _will_need(mm: mmap.mmap, begin: int, end: int) -> None:
    """Ask the kernel to read the range ahead (``MADV_WILLNEED``): a cold read then streams from
    the disk instead of faulting page by page, and warm pages are mapped in larger steps."""
    if not hasattr(mmap, "MADV_WILLNEED"):
        return
    start = begin - begin % mmap.PAGESIZE
    stop = min(end + READ_AHEAD_SLACK, len(mm))
    if stop > start:
        mm.madvise(mmap.MADV_WILLNEED, start, stop - start)


def read_range(r: Range, projection: col.Projection, row_filter: col.RowFilter) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the records of ``r`` that pass ``row_filter`` (module docstring)."""
    mm = open_map(r.segment)
    if mm is None:
        return
    stats = projection.stats
    _will_need(mm, r.begin, r.end)
    begin = r.begin if r.exact else resync(mm, r.segment_start, r.begin, r.end)
    starts_buf, pos, why = walk(mm, begin, r.end)
    data = np.frombuffer(mm, dtype=np.uint8)
    starts = np.frombuffer(starts_buf, dtype=np.int64) if len(starts_buf) else np.zeros(0, np.int64)
    for first in range(0, len(starts), BATCH_ROWS):
        chunk = starts[first : first + BATCH_ROWS]
        heads = col.Heads(data, chunk)
        count, *positions = col.validate(data, r.segment_start, heads, projection.check_crc)
        stats["records"] = stats.get("records", 0) + count
        batch = build_batch(data, heads, count, positions, r.broker, projection, row_filter)
        if batch is not None and batch.num_rows:
            yield batch
        if count < len(chunk):
            pos, why = int(chunk[count]), STOP_INVALID
            break
    if why in (STOP_INVALID, STOP_ZERO):
        skipped = used_end(mm, pos, min(r.end, len(mm))) - pos
        if why == STOP_INVALID:
            skipped = max(skipped, 1)
        if skipped:
            stats["skipped_bytes"] = stats.get("skipped_bytes", 0) + skipped
            logger.warning(
                "rocketmq: %s: no whole record at commit-log offset %d (%s); skipped %d bytes",
                r.segment, r.segment_start + pos, why, skipped,
            )  # fmt: skip
    stats["end_offset"] = r.segment_start + pos


def build_batch(
    data: np.ndarray[Any, Any],
    heads: col.Heads,
    count: int,
    positions: list[np.ndarray[Any, Any]],
    broker: str,
    projection: col.Projection,
    row_filter: col.RowFilter,
    keep: np.ndarray[Any, Any] | None = None,
) -> pa.RecordBatch | None:
    """One record batch of the first ``count`` records of ``heads`` that pass ``row_filter`` (and,
    when given, are set in the boolean mask ``keep``)."""
    if not count:
        return None
    topic_pos, topic_len, props_pos, props_len = positions
    topics = col.var_array(data, topic_pos[:count], topic_len[:count], pa.string())
    rows = col.select_rows(topics, heads, count, row_filter, keep)
    n = len(rows)
    schema = projection.schema
    c = heads.cols
    props_map = None
    out = []
    for name in projection.names:
        kind = schema.field(name).type
        if name in col.KEY_COLUMNS or name == "properties":
            if props_map is None:
                texts = col.var_array(data, props_pos[rows], props_len[rows], pa.string())
                props_map = col.properties_map(texts, schema.field("properties").type if "properties" in
                                               schema.names else MAP_TYPE)  # fmt: skip
            out.append(props_map if name == "properties" else col.lookup(props_map, col.KEY_COLUMNS[name]))
        elif name == "broker":
            out.append(pa.array([broker] * n, kind))
        elif name == "topic":
            out.append(topics.take(pa.array(rows)))
        elif name in _NUMERIC:
            out.append(
                pa.array(c[_NUMERIC[name]][rows].astype(np.int32 if kind == pa.int32() else np.int64), kind)
            )
        elif name in ("born_timestamp", "store_timestamp"):
            ms = c["born_ts" if name == "born_timestamp" else "store_ts"][rows]
            out.append(pa.array(ms * 1000, kind))
        elif name == "born_host":
            out.append(col.hosts(heads.born_ip[rows], heads.bv6[rows], c["born_port"][rows]))
        elif name == "store_host":
            out.append(col.hosts(heads.store_ip[rows], heads.sv6[rows], c["store_port"][rows]))
        elif name == "msg_id":
            out.append(col.offset_msg_ids(heads, rows))
        elif name == "body":
            if projection.include_body:
                out.append(col.bodies(data, heads, rows, projection.stats))
            else:
                out.append(pa.nulls(n, pa.binary()))
        else:
            raise ValueError(f"rocketmq: unknown column {name!r} in the requested schema")
    return pa.RecordBatch.from_arrays(out, schema=schema)


_NUMERIC = {
    "queue_id": "queue_id", "queue_offset": "queue_offset", "commit_log_offset": "phys", "size": "total",
    "sys_flag": "sys_flag", "flag": "flag", "body_crc": "crc", "reconsume_times": "reconsume",
    "prepared_transaction_offset": "prepared",
}  # fmt: skip
MAP_TYPE = pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string()))
