"""``spark.readStream.format("rocketmq").option("namesrvAddr", ...)``: the network mode as a stream,
as Spark's Kafka source streams Kafka.

The source offset is ``{"offsets": {topic: {"<brokerName>:<queueId>": next queue offset}}}`` (the
same keys as the per-queue JSON of :mod:`spark.network`). Each trigger asks the NameServer for the
routes and each master for its queues' max offsets, so a queue that appears later (a topic's queue
count raised, a new broker) joins at its min offset; a micro-batch reads exactly ``[start, end)``
of every queue, so a query restarted from its checkpoint neither skips nor repeats a message.

``maxMessagesPerTrigger`` (``ReadMaxRows``) spreads its budget over the queues that have new
messages, round-robin. When the cluster cannot be reached, planning retries ``PLAN_ATTEMPTS``
times, ``PLAN_PAUSE_S`` apart, then fails the query with the one-line error; a pull that fails
reconnects and retries the same offset (:func:`spark.pulling.pull_records`), so nothing is skipped.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows

from spark.network import NetworkOptions, QueueRange, plan_queues, queue_key, split_ranges, subscription
from spark.pulling import arrow_schema, read_queue_range
from spark.remote import QueueRoute, RemoteError

PLAN_ATTEMPTS = 5
PLAN_PAUSE_S = 2.0
_T = TypeVar("_T")
Offsets = dict[str, dict[str, int]]


def with_retries(what: Callable[[], _T], attempts: int = PLAN_ATTEMPTS, pause_s: float = PLAN_PAUSE_S) -> _T:
    """``what()``, again after a pause while it raises :class:`RemoteError`; the last error is raised."""
    for attempt in range(1, attempts + 1):
        try:
            return what()
        except RemoteError as err:
            if attempt == attempts:
                raise err.with_traceback(None) from None
            time.sleep(pause_s)
    raise AssertionError("unreachable")


def budget(spans: list[tuple[str, str, int]], max_rows: int) -> dict[tuple[str, str], int]:
    """How many of each queue's ``(topic, key, available)`` to read within ``max_rows``, round-robin."""
    take = {(t, k): 0 for t, k, _ in spans}
    left = max_rows
    open_spans = [s for s in spans if s[2] > 0]
    while left > 0 and open_spans:
        share = max(1, left // len(open_spans))
        still = []
        for t, k, n in open_spans:
            grant = min(share, n - take[(t, k)], left)
            take[(t, k)] += grant
            left -= grant
            if take[(t, k)] < n:
                still.append((t, k, n))
            if left == 0:
                break
        open_spans = still
    return take


class NetworkStreamReader(DataSourceStreamReader):
    """See the module docstring."""

    def __init__(self, options: NetworkOptions, schema: Any, max_per_trigger: int | None) -> None:
        self.options = options
        self.schema = schema
        self.max_per_trigger = max_per_trigger
        self._routes: dict[tuple[str, str], QueueRoute] = {}

    def _queues(self, starting: bool) -> list[QueueRange]:
        """Every queue now, ``[start, max)``: the options' start, or (``starting=False``) its min."""
        opts = self.options if starting else dataclasses.replace(self.options, starting="earliest")
        opts = dataclasses.replace(opts, ending="latest", ending_ms=None)
        if not starting:
            opts = dataclasses.replace(opts, starting_ms=None)
        queues = with_retries(lambda: plan_queues(opts))
        self._routes.update({(q.route.topic, queue_key(q.route)): q.route for q in queues})
        return queues

    def initialOffset(self) -> dict[str, Any]:
        offsets: Offsets = {}
        for q in self._queues(starting=True):
            offsets.setdefault(q.route.topic, {})[queue_key(q.route)] = q.start
        return {"offsets": offsets}

    def getDefaultReadLimit(self) -> ReadLimit:
        from pyspark.sql.streaming.datasource import ReadAllAvailable

        return ReadAllAvailable() if self.max_per_trigger is None else ReadMaxRows(self.max_per_trigger)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin: Offsets = start["offsets"]
        end: Offsets = {t: dict(qs) for t, qs in begin.items()}
        spans = []
        for q in self._queues(starting=False):
            key = queue_key(q.route)
            first = begin.get(q.route.topic, {}).get(key, q.start)  # a new queue: from its min
            spans.append((q.route.topic, key, max(0, q.end - first)))
            end.setdefault(q.route.topic, {})[key] = first
        if isinstance(limit, ReadMaxRows):
            grants = budget(spans, limit.max_rows)
        else:
            grants = {(t, k): n for t, k, n in spans}
        for (t, k), n in grants.items():
            end[t][k] += n
        return {"offsets": end}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        ranges = []
        for topic, queues in end["offsets"].items():
            for key, hi in queues.items():
                lo = start["offsets"].get(topic, {}).get(key)
                if lo is None:  # joined in this batch: latestOffset started it at its min offset
                    lo = self._min_of(topic, key)
                if hi > lo:
                    ranges.append(QueueRange(self._route(topic, key), lo, hi))
        return [InputPartition(r) for r in split_ranges(ranges, self.options.max_rows)]

    def _route(self, topic: str, key: str) -> QueueRoute:
        if (topic, key) not in self._routes:  # after a restart, before any latestOffset
            self._queues(starting=False)
        route = self._routes.get((topic, key))
        if route is None:
            raise RemoteError(f"rocketmq: queue {key} of {topic} has no route any more").with_traceback(None)
        return route

    def _min_of(self, topic: str, key: str) -> int:
        for q in self._queues(starting=False):
            if (q.route.topic, queue_key(q.route)) == (topic, key):
                return q.start
        raise RemoteError(f"rocketmq: queue {key} of {topic} has no route any more").with_traceback(None)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        r: QueueRange = partition.value
        tags = self.options.tags
        yield from read_queue_range(
            r,
            arrow_schema(self.schema),
            subscription(tags),
            tags,
            self.options.include_body,
            self.options.timeout_s,
        )

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release, and nothing is committed to the brokers: the reader stays read-only."""
