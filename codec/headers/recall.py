"""Headers of RECALL_MESSAGE (370, 5.3.x): ``RecallMessageRequestHeader`` and
``RecallMessageResponseHeader``."""

from __future__ import annotations

from dataclasses import dataclass

from codec.headers.base import CustomHeader, wire


@dataclass(slots=True)
class RecallMessageRequestHeader(CustomHeader):
    topic: str = wire("topic")
    recall_handle: str = wire("recallHandle")
    producer_group: str | None = wire("producerGroup", required=False)
    broker_name: str | None = wire("bname", required=False)


@dataclass(slots=True)
class RecallMessageResponseHeader(CustomHeader):
    msg_id: str = wire("msgId")
