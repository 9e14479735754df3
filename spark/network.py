"""Network mode of ``format("rocketmq")``: read a running cluster (ours or Apache RocketMQ's) through
its NameServer and brokers, as Spark's Kafka source reads Kafka.

``spark.read.format("rocketmq").option("namesrvAddr", "127.0.0.1:9876").option("topics", "A,B").load()``

* Planning (driver): the routes of every topic (GET_ROUTEINFO_BY_TOPIC) give one message queue per
  ``(master broker, queue id)``; each queue's offset range ``[start, end)`` comes from GET_MIN_OFFSET
  / GET_MAX_OFFSET and the options below, and is cut into partitions of at most
  ``maxRowsPerPartition`` offsets (:func:`split_ranges`).
* Reading (executors): :mod:`spark.pulling` pulls each range from its broker.

=======================  ==========  ===========================================================
option                   default     meaning
=======================  ==========  ===========================================================
``namesrvAddr``          required    NameServer ``host:port`` (several separated by ``;``)
``topics``               required    comma-separated topic names
``startingOffsets``      earliest    ``earliest``, ``latest`` or JSON per queue (below)
``endingOffsets``        latest      ``earliest``, ``latest`` or JSON per queue; exclusive
``startingTimestamp``    none        store time (epoch ms): first offset stored at or after it
``endingTimestamp``      none        store time (epoch ms): end before the first offset stored at or after it
``tags``                 ``*``       TAG subscription expression (``a || b``) sent with each pull
``maxRowsPerPartition``  100000      queue offsets per partition
``includeBody``          true        false: ``body`` is null
``timeoutMs``            10000       per request to a NameServer or broker
``pushFilters``          false       take ``tags = x`` / ``tags IN (...)`` from Spark into the pull
``maxMessagesPerTrigger`` none       streaming: messages per micro-batch (:mod:`spark.netstream`)
=======================  ==========  ===========================================================

Per-queue JSON names a queue ``"<brokerName>:<queueId>"`` under its topic, with ``-2`` for earliest
and ``-1`` for latest as in Kafka: ``{"TopicA": {"broker-a:0": 12, "broker-b:1": -2}}``. A queue the
JSON does not name gets the default. Timestamps win over offsets when both are given. Offsets are
clamped to the queue's ``[min, max]`` range.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from spark.options import OptionError, lower_keys
from spark.remote import Connection, QueueRoute, max_offset, min_offset, search_offset, topic_routes

EARLIEST, LATEST = -2, -1  # Kafka's sentinel offsets in the per-queue JSON
DEFAULT_MAX_ROWS_PER_PARTITION = 100_000
NAMES = (
    "namesrvAddr", "topics", "startingOffsets", "endingOffsets", "startingTimestamp", "endingTimestamp",
    "tags", "maxRowsPerPartition", "includeBody", "timeoutMs", "pushFilters", "maxMessagesPerTrigger",
)  # fmt: skip
_SPELLING = {name.lower(): name for name in NAMES}  # option keys arrive lower-cased: messages use these
KNOWN = frozenset(_SPELLING)


@dataclass(frozen=True)
class NetworkOptions:
    namesrv: str
    topics: tuple[str, ...]
    starting: str | dict[str, dict[str, int]]
    ending: str | dict[str, dict[str, int]]
    starting_ms: int | None
    ending_ms: int | None
    tags: frozenset[str] | None  # None: every tag (``*``)
    max_rows: int
    include_body: bool
    timeout_s: float
    push_filters: bool
    max_per_trigger: int | None  # streaming only


@dataclass(frozen=True)
class QueueRange:
    """Queue offsets ``[start, end)`` of one message queue: the work of one partition."""

    route: QueueRoute
    start: int
    end: int


def is_network(options: Any) -> bool:
    return "namesrvaddr" in lower_keys(options)


def parse_network_options(raw: Any) -> NetworkOptions:
    """Check and convert the network-mode options; raises :class:`OptionError`."""
    options = lower_keys(raw)
    unknown = sorted(set(options) - KNOWN)
    if unknown:
        known = ", ".join(NAMES)
        raise OptionError(f"rocketmq: unknown network option {unknown[0]!r} (known: {known})")
    topics = tuple(t.strip() for t in options.get("topics", "").split(",") if t.strip())
    if not topics:
        raise OptionError("rocketmq: option topics is required with namesrvAddr")
    max_rows = _number(options, "maxrowsperpartition", DEFAULT_MAX_ROWS_PER_PARTITION)
    timeout_ms = _number(options, "timeoutms", 10_000)
    if max_rows < 1 or timeout_ms < 1:
        raise OptionError("rocketmq: options maxRowsPerPartition and timeoutMs must be positive")
    start_ms = _number(options, "startingtimestamp", None)
    end_ms = _number(options, "endingtimestamp", None)
    if start_ms is not None and end_ms is not None and end_ms <= start_ms:
        raise OptionError("rocketmq: option endingTimestamp must be after startingTimestamp")
    return NetworkOptions(
        namesrv=options["namesrvaddr"],
        topics=topics,
        starting=_offsets_spec(options, "startingoffsets", "earliest"),
        ending=_offsets_spec(options, "endingoffsets", "latest"),
        starting_ms=start_ms,
        ending_ms=end_ms,
        tags=parse_tags(options.get("tags", "*")),
        max_rows=max_rows,
        include_body=_flag(options, "includebody", True),
        timeout_s=timeout_ms / 1000,
        push_filters=_flag(options, "pushfilters", False),
        max_per_trigger=_number(options, "maxmessagespertrigger", None),
    )


def parse_tags(expression: str) -> frozenset[str] | None:
    """``FilterAPI.build`` for TAG expressions: ``*`` (or empty) is every tag, else ``a || b``."""
    text = expression.strip()
    if not text or text == "*":
        return None
    tags = frozenset(t.strip() for t in text.split("||") if t.strip())
    if not tags:
        raise OptionError(f"rocketmq: option tags has no tag in {expression!r}")
    return tags


def subscription(tags: frozenset[str] | None) -> str:
    return "*" if tags is None else " || ".join(sorted(tags))


def _number(options: dict[str, str], key: str, default: int | None) -> Any:
    value = options.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise OptionError(f"rocketmq: option {_SPELLING[key]} must be an integer, got {value!r}") from None


def _flag(options: dict[str, str], key: str, default: bool) -> bool:
    value = options.get(key, str(default)).lower()
    if value not in ("true", "false"):
        raise OptionError(f"rocketmq: option {_SPELLING[key]} must be true or false, got {value!r}")
    return value == "true"


def _offsets_spec(options: dict[str, str], key: str, default: str) -> str | dict[str, dict[str, int]]:
    value = options.get(key, default).strip()
    if value.lower() in ("earliest", "latest"):
        return value.lower()
    try:
        spec = json.loads(value)
    except ValueError:
        spec = None
    valid = isinstance(spec, dict) and all(
        isinstance(queues, dict)
        and all(_queue_key(k) and type(v) is int and v >= EARLIEST for k, v in queues.items())
        for queues in spec.values()
    )
    if not valid:
        raise OptionError(
            f"rocketmq: option {_SPELLING[key]} must be earliest, latest or JSON like "
            f'{{"TopicA": {{"broker-a:0": 12}}}} (offset >= 0, -2 earliest, -1 latest), got {value!r}'
        )
    return dict(spec)


def _queue_key(key: str) -> bool:
    broker, sep, qid = key.rpartition(":")
    return bool(broker and sep and qid.isdigit())


def queue_key(route: QueueRoute) -> str:
    return f"{route.broker}:{route.queue_id}"


def _wanted(spec: str | dict[str, dict[str, int]], route: QueueRoute, default: int) -> int:
    if spec == "earliest":
        return EARLIEST
    if spec == "latest":
        return LATEST
    assert isinstance(spec, dict)
    return spec.get(route.topic, {}).get(queue_key(route), default)


def _resolve(wanted: int, lo: int, hi: int) -> int:
    if wanted == EARLIEST:
        return lo
    if wanted == LATEST:
        return hi
    return min(max(wanted, lo), hi)


def plan_queues(options: NetworkOptions) -> list[QueueRange]:
    """One :class:`QueueRange` per master queue of every topic (before splitting); asks the cluster."""
    routes = [r for topic in options.topics for r in topic_routes(options.namesrv, topic, options.timeout_s)]
    ranges = []
    by_addr: dict[str, list[QueueRoute]] = {}
    for r in routes:
        by_addr.setdefault(r.addr, []).append(r)
    for addr, queues in by_addr.items():
        with Connection(addr, options.timeout_s) as conn:
            for q in queues:
                lo, hi = min_offset(conn, q), max_offset(conn, q)
                if options.starting_ms is not None:
                    start = _resolve(search_offset(conn, q, options.starting_ms), lo, hi)
                else:
                    start = _resolve(_wanted(options.starting, q, EARLIEST), lo, hi)
                if options.ending_ms is not None:
                    end = _resolve(search_offset(conn, q, options.ending_ms), lo, hi)
                else:
                    end = _resolve(_wanted(options.ending, q, LATEST), lo, hi)
                ranges.append(QueueRange(q, start, max(start, end)))
    return sorted(ranges, key=lambda r: (r.route.topic, r.route.broker, r.route.queue_id))


def split_ranges(queues: Iterable[QueueRange], max_rows: int) -> list[QueueRange]:
    """Cut each queue's range into pieces of at most ``max_rows`` offsets; empty ranges get none."""
    out = []
    for q in queues:
        pos = q.start
        while pos < q.end:
            out.append(QueueRange(q.route, pos, min(q.end, pos + max_rows)))
            pos += max_rows
    return out


def ending_offsets(ranges: Sequence[QueueRange]) -> dict[str, dict[str, int]]:
    """The per-queue JSON of the planned ends (what a following read would start from)."""
    out: dict[str, dict[str, int]] = {}
    for r in ranges:
        out.setdefault(r.route.topic, {})[queue_key(r.route)] = r.end
    return out
