"""Headers of QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33)."""

from __future__ import annotations

from dataclasses import dataclass

from codec.headers.base import CustomHeader, wire

UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"  # ext key: "true" when `key` is a UNIQ_KEY


@dataclass(slots=True)
class QueryMessageRequestHeader(CustomHeader):
    topic: str = wire("topic")
    key: str = wire("key")
    max_num: int = wire("maxNum", int32=True)
    begin_timestamp: int = wire("beginTimestamp")
    end_timestamp: int = wire("endTimestamp")
    broker_name: str | None = wire("bname", required=False)


@dataclass(slots=True)
class QueryMessageResponseHeader(CustomHeader):
    index_last_update_timestamp: int = wire("indexLastUpdateTimestamp")
    index_last_update_phyoffset: int = wire("indexLastUpdatePhyoffset")


@dataclass(slots=True)
class ViewMessageRequestHeader(CustomHeader):
    offset: int = wire("offset")
    topic: str | None = wire("topic", required=False)  # 5.x
