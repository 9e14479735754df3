"""Reading one :class:`spark.network.QueueRange` on an executor: PULL_MESSAGE from its broker until
the range's end, rows as Arrow record batches of the requested columns (:data:`MESSAGE_SCHEMA`).

The pull loop follows ``DefaultLitePullConsumerImpl`` / ``PullAPIWrapper.processPullResult``:

* SUCCESS: the records (those below the range's end and, since the broker filters by tag *hash*
  in the consume queue, whose ``TAGS`` really match), then ``nextBeginOffset``.
* PULL_RETRY_IMMEDIATELY (the broker's NO_MATCHED_MESSAGE: nothing in the scanned window matched the
  tags) and PULL_NOT_FOUND: continue from ``nextBeginOffset`` when it moved forward; PULL_NOT_FOUND
  that does not move means nothing is stored there any more (NO_NEW_MSG): the range ends.
* PULL_OFFSET_MOVED: the offset is outside the queue (expired files); one warning line, then
  continue from the suggested offset when it is inside the range, else the range ends.

Bodies stored compressed (``COMPRESSED_FLAG``) are inflated as a consumer does.
"""

from __future__ import annotations

import logging
import time
from array import array
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from codec.codes import ResponseCode
from codec.message import MessageRecord
from codec.properties import TAGS, decode_properties
from spark import columns as col
from spark.network import QueueRange
from spark.records import STOP_RANGE, walk
from spark.remote import PULL_BATCH, Connection, PullResult, RemoteError, pull
from spark.scan import MAP_TYPE, build_batch

logger = logging.getLogger(__name__)

BATCH_ROWS = 4096  # rows per Arrow batch
MAX_STALLS = 16  # answers in a row that move no offset forward before the read gives up
PULL_ATTEMPTS = 4  # failed pulls in a row (broker down, timeout) before the read fails
PULL_PAUSE_S = 1.0  # between them; the retry reconnects and pulls the same offset again


def arrow_schema(schema: Any) -> pa.Schema:
    """The Arrow schema Spark checks our batches against (``to_arrow_schema`` with UTC timestamps)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def pull_bodies(r: QueueRange, subscription: str, timeout_s: float) -> Iterator[tuple[int, bytes]]:
    """``(offset pulled, records as sent)`` of each SUCCESS answer for ``r``, in queue order (module
    docstring); the records may reach past ``r.end`` or miss the tags. Raises :class:`RemoteError`."""
    q = r.route
    offset = r.start
    stalls = 0
    failures = 0
    conn: Connection | None = None
    try:
        while offset < r.end:
            try:
                conn = conn or Connection(q.addr, timeout_s)
                result = pull(conn, q, offset, min(PULL_BATCH, r.end - offset), subscription)
                failures = 0
            except RemoteError:
                failures += 1
                if conn is not None:
                    conn.close()
                    conn = None
                if failures >= PULL_ATTEMPTS:
                    raise
                time.sleep(PULL_PAUSE_S)
                continue
            if result.code == ResponseCode.SUCCESS:
                yield offset, result.body
            elif result.code == ResponseCode.PULL_OFFSET_MOVED:
                logger.warning(
                    "rocketmq: %s %s:%d offset %d moved to %d (queue now [%d, %d))",
                    q.topic, q.broker, q.queue_id, offset,
                    result.next_offset, result.min_offset, result.max_offset,
                )  # fmt: skip
            elif result.code == ResponseCode.PULL_NOT_FOUND and result.next_offset <= offset:
                return
            if result.next_offset > offset:
                offset, stalls = result.next_offset, 0
                continue
            stalls += 1
            if stalls >= MAX_STALLS:
                raise RemoteError(
                    f"rocketmq: {q.addr} answers pulls of {q.topic} {q.broker}:{q.queue_id} at offset "
                    f"{offset} without moving on (code {result.code})"
                )
    finally:
        if conn is not None:
            conn.close()


def pull_records(
    r: QueueRange, subscription: str, tags: frozenset[str] | None, timeout_s: float
) -> Iterator[MessageRecord]:
    """The records of ``r`` in queue order, decoded one by one (what a pull consumer receives)."""
    for offset, body in pull_bodies(r, subscription, timeout_s):
        for record in PullResult(ResponseCode.SUCCESS, 0, 0, 0, body).records():
            if offset <= record.queue_offset < r.end and _tag_matches(record, tags):
                yield record


def read_queue_range(
    r: QueueRange,
    schema: pa.Schema,
    subscription: str,
    tags: frozenset[str] | None,
    include_body: bool,
    timeout_s: float,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches (``schema``: the requested columns) of the records of ``r``.

    The pulled bytes are kept as the broker sent them (stored records back to back) and decoded
    a batch at a time by the file reader's columnar code (:func:`spark.scan.build_batch`), so a
    row costs a few numpy and Arrow operations, not a Python object per field.
    """
    projection = col.Projection(names=schema.names, schema=schema, include_body=include_body, check_crc=False)
    bodies: list[bytes] = []
    starts: list[array[int]] = []
    floors: list[int] = []
    rows = 0
    for offset, body in pull_bodies(r, subscription, timeout_s):
        found, _, why = walk(body, 0, len(body))
        if why != STOP_RANGE:
            raise RemoteError(f"rocketmq: bad pull response from {r.route.addr}: a record is cut short")
        bodies.append(body)
        starts.append(found)
        floors.append(offset)
        rows += len(found)
        if rows >= BATCH_ROWS:
            yield from _decode(bodies, starts, floors, r, projection, tags)
            bodies, starts, floors, rows = [], [], [], 0
    if rows:
        yield from _decode(bodies, starts, floors, r, projection, tags)


def _decode(
    bodies: list[bytes],
    starts: list[array[int]],
    floors: list[int],
    r: QueueRange,
    projection: col.Projection,
    tags: frozenset[str] | None,
) -> Iterator[pa.RecordBatch]:
    """One batch of the pulled records that lie in ``r`` (at or past the offset each was pulled
    from, as ``PullAPIWrapper`` keeps them) and whose ``TAGS`` match ``tags``."""
    data = np.frombuffer(b"".join(bodies), dtype=np.uint8)
    bases = np.cumsum([0] + [len(b) for b in bodies[:-1]], dtype=np.int64)
    counts = [len(s) for s in starts]
    at = np.concatenate([np.frombuffer(s, dtype=np.int64) for s in starts]) + np.repeat(bases, counts)
    heads = col.Heads(data, at)
    count, *positions = col.validate(data, None, heads, check_crc=False)
    if count < len(at):
        raise RemoteError(f"rocketmq: bad pull response from {r.route.addr}: a malformed record")
    queue_offset = heads.cols["queue_offset"]
    keep = (queue_offset >= np.repeat(np.array(floors, dtype=np.int64), counts)) & (queue_offset < r.end)
    if tags is not None:
        _, _, props_pos, props_len = positions
        texts = col.var_array(data, props_pos, props_len, pa.string())
        tag = col.lookup(col.properties_map(texts, MAP_TYPE), TAGS)
        keep &= pc.is_in(tag, value_set=pa.array(sorted(tags), pa.string())).to_numpy(zero_copy_only=False)
    everything = col.RowFilter(include_system=True)
    batch = build_batch(data, heads, count, positions, r.route.broker, projection, everything, keep)
    if batch is not None and batch.num_rows:
        yield batch


def _tag_matches(record: MessageRecord, tags: frozenset[str] | None) -> bool:
    if tags is None:
        return True
    return decode_properties(record.properties).get(TAGS) in tags
