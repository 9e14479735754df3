"""``format("rocketmq.offsets")``: committed consumer offsets joined with consume-queue max offsets.

Sources (``ConsumerOffsetManager``, ``ConsumeQueue``):

* ``config/consumerOffset.json``: ``{"offsetTable": {"topic@group": {queueId: offset}}}``, written by
  fastjson with unquoted integer keys by the Java broker (read with :func:`codec.fastjson.loads`);
  like ``ConfigManager.load`` the ``.bak`` copy is used when the file is missing or unreadable.
* ``consumequeue/<topic>/<queueId>/``: 20-byte units ``(commit-log offset int64, size int32, tags
  code int64)`` in files named by the 20-digit byte offset of their first unit. The max offset
  (the queue offset the next message gets) is the last file's start plus its written units,
  divided by 20; the written units are a prefix of non-empty units (a zero unit ends them, as in
  ``ConsumeQueue.recover``), found by binary search, so a preallocated file is barely read.

Rows: broker, group, topic, queue_id, consumer_offset, max_offset, lag (``max(0, max - consumer)``).
A queue with an offset but no consume queue has max_offset 0.

Network mode (option ``namesrvAddr``, with ``groups`` and ``topics``, comma-separated, and
``timeoutMs``): the same rows from a running cluster, as ``mqadmin consumerProgress`` shows them,
from QUERY_CONSUMER_OFFSET and GET_MAX_OFFSET per master queue of each topic
(:func:`network_offset_rows`); a queue the group has no offset on (QUERY_NOT_FOUND) has no row.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from codec.errors import BodyError
from codec.fastjson import loads
from spark.layout import (
    CONFIG_DIR,
    CONSUME_QUEUE_DIR,
    StoreReadError,
    broker_name,
    is_segment_name,
    store_paths,
)
from spark.options import OptionError
from spark.remote import Connection, QueueRoute, consumer_offset, topic_routes
from spark.remote import max_offset as remote_max_offset

CQ_UNIT = struct.Struct(">qiq")  # commit-log offset, size, tags code (ConsumeQueue.CQ_STORE_UNIT_SIZE = 20)
CONSUMER_OFFSET_JSON = "consumerOffset.json"

OFFSETS_SCHEMA = StructType(
    [
        StructField("broker", StringType()),
        StructField("group", StringType()),
        StructField("topic", StringType()),
        StructField("queue_id", IntegerType()),
        StructField("consumer_offset", LongType()),
        StructField("max_offset", LongType()),
        StructField("lag", LongType()),
    ]
)


def load_offset_table(store: str) -> dict[str, dict[str, Any]]:
    """``offsetTable`` of ``store`` (empty when there is no file); raises :class:`StoreReadError`."""
    base = os.path.join(store, CONFIG_DIR, CONSUMER_OFFSET_JSON)
    last_error = ""
    for path in (base, base + ".bak"):
        try:
            with open(path, "rb") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        if not text.strip():
            continue
        try:
            table = loads(text).get("offsetTable", {})
        except (BodyError, AttributeError) as err:
            last_error = f"{path}: {err}"
            continue
        return table if isinstance(table, dict) else {}
    if last_error:
        raise StoreReadError(f"rocketmq: cannot parse {last_error}")
    return {}


def _written_units(path: str) -> int:
    """Units before the first empty one in a consume-queue file (binary search over the prefix)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:

        def filled(i: int) -> bool:
            f.seek(i * CQ_UNIT.size)
            raw = f.read(CQ_UNIT.size)
            if len(raw) < CQ_UNIT.size:
                return False
            offset, length, _tags = CQ_UNIT.unpack(raw)
            return bool(offset >= 0 and length > 0)

        lo, hi = 0, size // CQ_UNIT.size
        while lo < hi:
            mid = (lo + hi) // 2
            if filled(mid):
                lo = mid + 1
            else:
                hi = mid
    return lo


def max_offset(store: str, topic: str, queue_id: int) -> int:
    """``getMaxOffsetInQueue`` from the files: the logical offset the next message gets."""
    directory = os.path.join(store, CONSUME_QUEUE_DIR, topic, str(queue_id))
    try:
        names = sorted(n for n in os.listdir(directory) if is_segment_name(n))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    if not names:
        return 0
    last = names[-1]
    return (int(last) + _written_units(os.path.join(directory, last)) * CQ_UNIT.size) // CQ_UNIT.size


def offset_rows(store: str) -> Iterator[tuple[str, str, str, int, int, int, int]]:
    broker = broker_name(store)
    for key, queues in sorted(load_offset_table(store).items()):
        topic, _, group = key.rpartition("@")
        if not isinstance(queues, dict):
            continue
        for qid_text, committed in sorted(queues.items(), key=lambda kv: int(kv[0])):
            qid = int(qid_text)
            top = max_offset(store, topic, qid)
            yield broker, group, topic, qid, int(committed), top, max(0, top - int(committed))


def network_offset_rows(
    namesrv: str, groups: list[str], topics: list[str], timeout_s: float
) -> Iterator[tuple[str, str, str, int, int, int, int]]:
    """Committed offsets and lag of ``groups`` on ``topics`` read from the brokers; raises RemoteError."""
    routes = [r for topic in topics for r in topic_routes(namesrv, topic, timeout_s)]
    by_addr: dict[str, list[QueueRoute]] = {}
    for r in routes:
        by_addr.setdefault(r.addr, []).append(r)
    for addr, queues in sorted(by_addr.items()):
        with Connection(addr, timeout_s) as conn:
            for group in groups:
                for q in queues:
                    committed = consumer_offset(conn, q, group)
                    if committed is not None:
                        top = remote_max_offset(conn, q)
                        yield q.broker, group, q.topic, q.queue_id, committed, top, max(0, top - committed)


class NetworkOffsetsReader(DataSourceReader):
    def __init__(self, namesrv: str, groups: list[str], topics: list[str], timeout_s: float) -> None:
        self.args = (namesrv, groups, topics, timeout_s)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        yield from network_offset_rows(*self.args)


def _network_reader(options: dict[str, str]) -> DataSourceReader:
    unknown = sorted(set(options) - {"namesrvaddr", "groups", "topics", "timeoutms"})
    if unknown:
        raise OptionError(f"rocketmq.offsets: unknown network option {unknown[0]!r}")
    groups = [g.strip() for g in options.get("groups", "").split(",") if g.strip()]
    topics = [t.strip() for t in options.get("topics", "").split(",") if t.strip()]
    if not groups or not topics:
        raise OptionError("rocketmq.offsets: options groups and topics are required with namesrvAddr")
    timeout = options.get("timeoutms", "10000")
    if not timeout.isdigit() or int(timeout) < 1:
        raise OptionError(f"rocketmq.offsets: option timeoutMs must be a positive integer, got {timeout!r}")
    return NetworkOffsetsReader(options["namesrvaddr"], groups, topics, int(timeout) / 1000)


class OffsetsReader(DataSourceReader):
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(p) for p in self.paths]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        yield from offset_rows(partition.value)


class RocketMQOffsetsDataSource(DataSource):
    """``format("rocketmq.offsets")``: one row per committed ``(group, topic, queue)``."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq.offsets"

    def schema(self) -> StructType:
        return OFFSETS_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        options = {k.lower(): v for k, v in dict(self.options).items()}
        if "namesrvaddr" in options:
            try:
                return _network_reader(options)
            except OptionError as err:
                raise err.with_traceback(None) from None
        try:
            unknown = sorted(set(options) - {"path", "paths"})
            if unknown:
                raise StoreReadError(f"rocketmq.offsets: unknown option {unknown[0]!r}")
            return OffsetsReader(store_paths(options))
        except StoreReadError as err:
            raise err.with_traceback(None) from None  # one line for the user (see spark.source)
