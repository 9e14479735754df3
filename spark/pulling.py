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

import ipaddress
import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from codec.codes import ResponseCode
from codec.message import MessageRecord, MessageSysFlag
from codec.message_id import encode_offset_msg_id
from codec.properties import KEYS, TAGS, UNIQ_KEY, decode_properties
from spark.bodies import inflate
from spark.network import QueueRange
from spark.remote import PULL_BATCH, Connection, RemoteError, pull

logger = logging.getLogger(__name__)

BATCH_ROWS = 4096  # rows per Arrow batch
MAX_STALLS = 16  # answers in a row that move no offset forward before the read gives up
PULL_ATTEMPTS = 4  # failed pulls in a row (broker down, timeout) before the read fails
PULL_PAUSE_S = 1.0  # between them; the retry reconnects and pulls the same offset again


def arrow_schema(schema: Any) -> pa.Schema:
    """The Arrow schema Spark checks our batches against (``to_arrow_schema`` with UTC timestamps)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def pull_records(
    r: QueueRange, subscription: str, tags: frozenset[str] | None, timeout_s: float
) -> Iterator[MessageRecord]:
    """The records of ``r`` in queue order (module docstring); raises :class:`RemoteError`."""
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
                for record in result.records:
                    if offset <= record.queue_offset < r.end and _tag_matches(record, tags):
                        yield record
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


def _tag_matches(record: MessageRecord, tags: frozenset[str] | None) -> bool:
    if tags is None:
        return True
    return decode_properties(record.properties).get(TAGS) in tags


def read_queue_range(
    r: QueueRange,
    schema: pa.Schema,
    subscription: str,
    tags: frozenset[str] | None,
    include_body: bool,
    timeout_s: float,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches (``schema``: the requested columns) of the records of ``r``."""
    rows: list[MessageRecord] = []
    for record in pull_records(r, subscription, tags, timeout_s):
        rows.append(record)
        if len(rows) >= BATCH_ROWS:
            yield build_batch(rows, r.route.broker, schema, include_body)
            rows = []
    if rows:
        yield build_batch(rows, r.route.broker, schema, include_body)


def build_batch(
    records: list[MessageRecord], broker: str, schema: pa.Schema, include_body: bool
) -> pa.RecordBatch:
    """One batch of ``records``; only the columns of ``schema`` are computed (column pruning)."""
    props = [decode_properties(m.properties) for m in records] if _needs_properties(schema) else []
    stats: dict[str, int] = {}
    out = []
    for name in schema.names:
        kind = schema.field(name).type
        values: list[Any]
        if name == "broker":
            values = [broker] * len(records)
        elif name in _KEYS:
            values = [p.get(_KEYS[name]) for p in props]
        elif name == "properties":
            values = [list(p.items()) for p in props]
        elif name in _FIELDS:
            values = [getattr(m, _FIELDS[name]) for m in records]
        elif name in ("born_timestamp", "store_timestamp"):
            values = [getattr(m, name) * 1000 for m in records]  # ms to Arrow's microseconds
        elif name == "born_host":
            values = [_host(m.born_host, m.born_port) for m in records]
        elif name == "store_host":
            values = [_host(m.store_host, m.store_port) for m in records]
        elif name == "msg_id":
            values = [encode_offset_msg_id(m.store_host, m.store_port, m.physical_offset) for m in records]
        elif name == "body":
            values = [_body(m, stats) if include_body else None for m in records]
        else:
            raise ValueError(f"rocketmq: unknown column {name!r} in the requested schema")
        out.append(pa.array(values, kind))
    return pa.RecordBatch.from_arrays(out, schema=schema)


def _needs_properties(schema: pa.Schema) -> bool:
    return any(n in _KEYS or n == "properties" for n in schema.names)


def _host(address: bytes, port: int) -> str:
    if len(address) == 16:
        return f"[{ipaddress.IPv6Address(address)}]:{port}"
    return f"{'.'.join(str(b) for b in address)}:{port}"


def _body(m: MessageRecord, stats: dict[str, int]) -> bytes | None:
    if m.sys_flag & MessageSysFlag.COMPRESSED_FLAG:
        return inflate(m.body, m.sys_flag, stats)
    return m.body


_KEYS = {"uniq_key": UNIQ_KEY, "keys": KEYS, "tags": TAGS}
_FIELDS = {
    "topic": "topic", "queue_id": "queue_id", "queue_offset": "queue_offset",
    "commit_log_offset": "physical_offset", "size": "store_size", "sys_flag": "sys_flag", "flag": "flag",
    "body_crc": "body_crc", "reconsume_times": "reconsume_times",
    "prepared_transaction_offset": "prepared_transaction_offset",
}  # fmt: skip
