"""Options of ``format("rocketmq")`` and the filters Spark pushes down, turned into a :class:`RowFilter`.

=======================  ==========  ===========================================================
option                   default     meaning
=======================  ==========  ===========================================================
``topics``               all         comma-separated topic names (system topics allowed if named)
``includeSystemTopics``  false       also return ``TopicValidator`` system topics (``rmq_sys_*``, ...)
``startTime``            none        store time >= this (ISO-8601, naive = UTC, or epoch ms)
``endTime``              none        store time < this
``includeBody``          true        false: ``body`` is null and body bytes are not read
``checkCRC``             includeBody verify BODYCRC (reads the body bytes) as ``checkCRCOnRecover``
``maxBytesPerPartition`` 134217728   bytes of commit log per partition
``pushFilters``          false       use ``pushFilters`` (needs ``spark.sql.python.filterPushdown.enabled``)
``startingOffsets``      earliest    streaming only: ``earliest`` or ``latest``
=======================  ==========  ===========================================================

Option names are case-insensitive like Spark's. A bad value raises :class:`OptionError` with a one-line
message naming the option.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from spark.columns import RowFilter
from spark.scan import DEFAULT_MAX_BYTES_PER_PARTITION

KNOWN = {
    "path", "paths", "topics", "includesystemtopics", "starttime", "endtime", "includebody", "checkcrc",
    "maxbytesperpartition", "pushfilters", "startingoffsets",
}  # fmt: skip


class OptionError(ValueError):
    """A bad option value; the message is one line meant for the user."""


@dataclasses.dataclass
class ScanOptions:
    row_filter: RowFilter
    include_body: bool
    check_crc: bool
    max_bytes: int
    push_filters: bool
    starting_offsets: str


def lower_keys(options: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in dict(options).items()}


def parse_options(raw: Any) -> ScanOptions:
    """Check and convert the reader options; raises :class:`OptionError`."""
    options = lower_keys(raw)
    unknown = sorted(set(options) - KNOWN)
    if unknown:
        raise OptionError(f"rocketmq: unknown option {unknown[0]!r} (known: {', '.join(sorted(KNOWN))})")
    topics = None
    if options.get("topics"):
        topics = frozenset(t.strip() for t in options["topics"].split(",") if t.strip())
    start = _time(options, "starttime")
    end = _time(options, "endtime")
    if start is not None and end is not None and end <= start:
        raise OptionError("rocketmq: option endTime must be after startTime")
    row_filter = RowFilter(
        topics=topics,
        include_system=_bool(options, "includesystemtopics", False),
        store_ms=(start, None if end is None else end - 1),
    )
    include_body = _bool(options, "includebody", True)
    max_bytes = _int(options, "maxbytesperpartition", DEFAULT_MAX_BYTES_PER_PARTITION)
    if max_bytes < 4096:
        raise OptionError(f"rocketmq: option maxBytesPerPartition must be at least 4096, got {max_bytes}")
    starting = options.get("startingoffsets", "earliest").lower()
    if starting not in ("earliest", "latest"):
        raise OptionError(f"rocketmq: option startingOffsets must be earliest or latest, got {starting!r}")
    return ScanOptions(
        row_filter=row_filter,
        include_body=include_body,
        check_crc=_bool(options, "checkcrc", include_body),
        max_bytes=max_bytes,
        push_filters=_bool(options, "pushfilters", False),
        starting_offsets=starting,
    )


def _bool(options: dict[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    if value is None:
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise OptionError(f"rocketmq: option {key} must be true or false, got {value!r}")


def _int(options: dict[str, str], key: str, default: int) -> int:
    value = options.get(key)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise OptionError(f"rocketmq: option {key} must be an integer, got {value!r}") from None


def _time(options: dict[str, str], key: str) -> int | None:
    """Milliseconds since the epoch of an ISO-8601 time (naive = UTC) or of a plain integer."""
    value = options.get(key)
    if value is None or value == "":
        return None
    if value.lstrip("-").isdigit():
        return int(value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise OptionError(f"rocketmq: option {key} must be ISO-8601 or epoch ms, got {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)
