"""``spark.read.format("rocketmq")`` and ``spark.readStream.format("rocketmq")``: PySpark 4.x Python
Data Source readers of RocketMQ store directories (ours and Apache RocketMQ's: the files are the same),
and, with option ``namesrvAddr``, a batch reader of a running cluster (:mod:`spark.network`).

Register once per session with :func:`spark.register`, then ``spark.read.format("rocketmq").load(DIR)``
(or a list or glob of directories, one per broker). One row per stored message, schema
:data:`MESSAGE_SCHEMA`; rows leave :meth:`StoreReader.read` as Arrow record batches.

* Partitions: :func:`spark.scan.plan_ranges` (the driver lists files and finds where each segment's
  data ends, reading only its last non-zero page or its zero tail, never the records).
* Column pruning: the Python Data Source API gives the reader the schema it must produce, which is
  the user's schema when one is given (``.schema("topic string, size int")``): only those columns
  are decoded, and without ``body`` no body byte is copied.
* Filters: with option ``pushFilters=true`` (and ``spark.sql.python.filterPushdown.enabled``, the
  4.1+ API) equality/``IN`` on ``topic`` and ``queue_id`` and ranges on ``queue_offset`` and
  ``commit_log_offset`` are applied while decoding (commit-log ranges also prune partitions);
  ranges on ``store_timestamp`` prune rows too but are still re-checked by Spark.
* Streaming: offsets are ``{store dir: commit-log offset}`` (:mod:`spark.follow`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark.columns import SYSTEM_TOPIC_PREFIX, SYSTEM_TOPICS, Projection
from spark.follow import first_offset, valid_end
from spark.layout import StoreReadError, broker_name, store_paths
from spark.network import (
    NetworkOptions,
    is_network,
    parse_network_options,
    plan_queues,
    split_ranges,
    subscription,
)
from spark.options import OptionError, ScanOptions, parse_options
from spark.pulling import arrow_schema as arrow_schema  # file mode uses it too; tests import it here
from spark.pulling import read_queue_range
from spark.scan import Range, plan_ranges, read_range

_S, _I, _L, _T = StringType(), IntegerType(), LongType(), TimestampType()
MESSAGE_SCHEMA = StructType(
    [
        StructField(name, kind)
        for name, kind in (
            ("broker", _S), ("topic", _S), ("queue_id", _I), ("queue_offset", _L), ("commit_log_offset", _L),
            ("size", _I), ("sys_flag", _I), ("flag", _I), ("body_crc", _I), ("born_timestamp", _T),
            ("store_timestamp", _T), ("born_host", _S), ("store_host", _S), ("reconsume_times", _I),
            ("prepared_transaction_offset", _L), ("msg_id", _S), ("uniq_key", _S), ("keys", _S), ("tags", _S),
            ("properties", MapType(_S, _S)), ("body", BinaryType()),
        )
    ]
)  # fmt: skip
_TIME_SLACK = timedelta(days=1)  # pushed timestamp literals may be in the session time zone


class RangePartition(InputPartition):
    """One :class:`spark.scan.Range`, picklable."""

    def __init__(self, value: Range | None) -> None:
        super().__init__(value)


class StoreReader(DataSourceReader):
    """Batch reader without filter pushdown (the default: it needs no Spark setting)."""

    def __init__(self, paths: list[str], options: ScanOptions, schema: StructType) -> None:
        self.paths = paths
        self.options = options
        self.schema = schema
        self.commit_log_range: tuple[int | None, int | None] = (None, None)

    def partitions(self) -> Sequence[InputPartition]:
        lo, hi = self.commit_log_range
        parts: list[InputPartition] = [
            RangePartition(r)
            for path in self.paths
            for r in plan_ranges(
                path, broker_name(path), self.options.max_bytes, lo, None if hi is None else hi + 1
            )
        ]
        return parts or [RangePartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        r = partition.value
        if r is None:
            return
        projection = Projection(
            names=self.schema.fieldNames(),
            schema=arrow_schema(self.schema),
            include_body=self.options.include_body,
            check_crc=self.options.check_crc,
        )
        yield from read_range(r, projection, self.options.row_filter)


class PushdownReader(StoreReader):
    """:class:`StoreReader` that also takes filters from Spark (``pushFilters``, Spark 4.1+)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        rf = self.options.row_filter
        for f in filters:
            column = f.attribute[0] if hasattr(f, "attribute") and len(f.attribute) == 1 else None
            if column == "topic" and isinstance(f, EqualTo | In):
                values = {f.value} if isinstance(f, EqualTo) else set(f.value)
                if rf.topics is None and not rf.include_system:
                    values = {v for v in values if not _is_system(v)}
                rf.topics = frozenset(values) if rf.topics is None else rf.topics & values
            elif column == "queue_id" and isinstance(f, EqualTo | In):
                ids = {f.value} if isinstance(f, EqualTo) else set(f.value)
                rf.queue_ids = frozenset(ids) if rf.queue_ids is None else rf.queue_ids & ids
            elif column in ("queue_offset", "commit_log_offset") and _bound(f) is not None:
                lo, hi = _bound(f) or (None, None)
                if column == "queue_offset":
                    rf.queue_offset = _narrow(rf.queue_offset, lo, hi)
                else:
                    rf.commit_log_offset = _narrow(rf.commit_log_offset, lo, hi)
                    self.commit_log_range = rf.commit_log_offset
            elif column == "store_timestamp" and _bound(f) is not None:
                lo, hi = _bound(f) or (None, None)
                rf.store_ms = _narrow(rf.store_ms, _ms(lo, -_TIME_SLACK), _ms(hi, _TIME_SLACK))
                yield f  # pruned generously here, checked exactly by Spark
            else:
                yield f


def _is_system(topic: object) -> bool:
    return isinstance(topic, str) and (topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX))


def _bound(f: Filter) -> tuple[Any, Any] | None:
    """Inclusive ``(lo, hi)`` of a comparison filter on an integer or timestamp; None for others."""
    value = getattr(f, "value", None)
    if not isinstance(value, int | datetime) or isinstance(value, bool):
        return None
    step: Any = 1 if isinstance(value, int) else timedelta(microseconds=1)
    if isinstance(f, EqualTo):
        return value, value
    if isinstance(f, GreaterThan):
        return value + step, None
    if isinstance(f, GreaterThanOrEqual):
        return value, None
    if isinstance(f, LessThan):
        return None, value - step
    if isinstance(f, LessThanOrEqual):
        return None, value
    return None


def _ms(moment: datetime | None, slack: timedelta) -> int | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int((moment + slack).timestamp() * 1000)


def _narrow(
    current: tuple[int | None, int | None], lo: int | None, hi: int | None
) -> tuple[int | None, int | None]:
    a, b = current
    return (
        lo if a is None else a if lo is None else max(a, lo),
        hi if b is None else b if hi is None else min(b, hi),
    )


class StoreStreamReader(DataSourceStreamReader):
    """Follows the commit logs of the store directories; offsets ``{"offsets": {dir: offset}}``."""

    def __init__(self, paths: list[str], options: ScanOptions, schema: StructType) -> None:
        self.paths = paths
        self.options = options
        self.schema = schema
        self._last: dict[str, Any] | None = None

    def initialOffset(self) -> dict[str, Any]:
        if self.options.starting_offsets == "latest":
            offsets = {p: valid_end(p, first_offset(p), self.options.check_crc) for p in self.paths}
        else:
            offsets = {p: first_offset(p) for p in self.paths}
        return {"offsets": offsets}

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, Any]:
        """The end of the whole records now present (``limit`` is ignored: every new record is read)."""
        begin = start or self._last or self.initialOffset()
        offsets = {
            p: valid_end(p, int(begin["offsets"].get(p, first_offset(p))), self.options.check_crc)
            for p in self.paths
        }
        self._last = {"offsets": offsets}
        return self._last

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        parts: list[InputPartition] = []
        for p in self.paths:
            lo = int(start["offsets"].get(p, first_offset(p)))
            hi = int(end["offsets"][p])
            if hi > lo:
                ranges = plan_ranges(
                    p, broker_name(p), self.options.max_bytes, lo, hi, exact_lo=True, trim_zeros=False
                )
                parts.extend(RangePartition(r) for r in ranges)
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return StoreReader.read(self, partition)  # type: ignore[arg-type]

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the reader holds no state per offset."""


class NetworkReader(DataSourceReader):
    """Batch reader of a running cluster (:mod:`spark.network`); ``pushFilters`` takes tag filters."""

    def __init__(self, options: NetworkOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.tags = options.tags

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Equality/``IN`` on ``tags`` narrows the pull's subscription; Spark still checks the rows."""
        for f in filters:
            column = f.attribute[0] if hasattr(f, "attribute") and len(f.attribute) == 1 else None
            if self.options.push_filters and column == "tags" and isinstance(f, EqualTo | In):
                values = {f.value} if isinstance(f, EqualTo) else set(f.value)
                wanted = frozenset(v for v in values if isinstance(v, str))
                self.tags = wanted if self.tags is None else self.tags & wanted
            yield f

    def partitions(self) -> Sequence[InputPartition]:
        try:
            ranges = split_ranges(plan_queues(self.options), self.options.max_rows)
        except OptionError as err:
            raise err.with_traceback(None) from None
        return [InputPartition(r) for r in ranges] or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        r = partition.value
        if r is None or self.tags == frozenset():
            return
        yield from read_queue_range(
            r, arrow_schema(self.schema), subscription(self.tags), self.tags, self.options.include_body,
            self.options.timeout_s,
        )  # fmt: skip


class RocketMQDataSource(DataSource):
    """``format("rocketmq")``: messages of one or more store directories."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> StructType:
        return MESSAGE_SCHEMA

    def _setup(self) -> tuple[list[str], ScanOptions]:
        options = parse_options(self.options)
        return store_paths({k.lower(): v for k, v in dict(self.options).items()}), options

    # Spark shows the traceback of whatever the reader factories raise: a user error is re-raised
    # without its inner frames, so the user reads one line ("StoreReadError: rocketmq: ...").

    def reader(self, schema: StructType) -> DataSourceReader:
        try:
            if is_network(self.options):
                return NetworkReader(parse_network_options(self.options), schema)
            paths, options = self._setup()
        except (StoreReadError, OptionError) as err:
            raise err.with_traceback(None) from None
        cls = PushdownReader if options.push_filters else StoreReader
        return cls(paths, options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        try:
            if is_network(self.options):
                from spark.netstream import NetworkStreamReader

                network = parse_network_options(self.options)
                return NetworkStreamReader(network, schema, network.max_per_trigger)
            paths, options = self._setup()
        except (StoreReadError, OptionError) as err:
            raise err.with_traceback(None) from None
        return StoreStreamReader(paths, options, schema)
