"""Headers of client registration, group membership, offsets, time search and send-back.

HEART_BEAT (34), UNREGISTER_CLIENT (35), CONSUMER_SEND_MSG_BACK (36), GET_CONSUMER_LIST_BY_GROUP
(38), NOTIFY_CONSUMER_IDS_CHANGED (40), QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15),
GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32),
SEARCH_OFFSET_BY_TIMESTAMP (29). HEART_BEAT, CHECK_CLIENT_CONFIG, LOCK_BATCH_MQ and
UNLOCK_BATCH_MQ carry no fields of their own: use :class:`codec.headers.base.EmptyHeader`.
"""

from __future__ import annotations

from dataclasses import dataclass

from codec.headers.base import CustomHeader, wire


@dataclass(slots=True)
class UnregisterClientRequestHeader(CustomHeader):
    client_id: str = wire("clientID")
    producer_group: str | None = wire("producerGroup", required=False)
    consumer_group: str | None = wire("consumerGroup", required=False)


@dataclass(slots=True)
class GetConsumerListByGroupRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")


@dataclass(slots=True)
class NotifyConsumerIdsChangedRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")


@dataclass(slots=True)
class QueryConsumerOffsetRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    set_zero_if_not_found: bool | None = wire("setZeroIfNotFound", required=False)  # 5.x
    broker_name: str | None = wire("bname", required=False)


@dataclass(slots=True)
class UpdateConsumerOffsetRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    commit_offset: int = wire("commitOffset")
    broker_name: str | None = wire("bname", required=False)


@dataclass(slots=True)
class GetMaxOffsetRequestHeader(CustomHeader):
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    committed: bool | None = wire("committed", required=False)  # 5.x, always sent by it
    broker_name: str | None = wire("bname", required=False)


@dataclass(slots=True)
class GetMinOffsetRequestHeader(CustomHeader):
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    broker_name: str | None = wire("bname", required=False)


@dataclass(slots=True)
class GetEarliestMsgStoretimeRequestHeader(CustomHeader):
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    broker_name: str | None = wire("bname", required=False)


@dataclass(slots=True)
class SearchOffsetRequestHeader(CustomHeader):
    """``boundary_type`` is ``"lower"`` (default when absent) or ``"upper"`` (5.1.4+)."""

    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    timestamp: int = wire("timestamp")
    boundary_type: str | None = wire("boundaryType", required=False)
    broker_name: str | None = wire("bname", required=False)

    @property
    def is_upper(self) -> bool:
        """Java decodes ``upper`` case-insensitively and anything else as LOWER."""
        return (self.boundary_type or "").lower() == "upper"


@dataclass(slots=True)
class OffsetResponseHeader(CustomHeader):
    """Response of QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP."""

    offset: int = wire("offset")


@dataclass(slots=True)
class GetEarliestMsgStoretimeResponseHeader(CustomHeader):
    timestamp: int = wire("timestamp")


@dataclass(slots=True)
class ConsumerSendMsgBackRequestHeader(CustomHeader):
    """``offset`` is the commit-log (physical) offset of the message being returned."""

    offset: int = wire("offset")
    group: str = wire("group")
    delay_level: int = wire("delayLevel", int32=True)
    origin_msg_id: str | None = wire("originMsgId", required=False)
    origin_topic: str | None = wire("originTopic", required=False)
    unit_mode: bool = wire("unitMode", required=False, default=False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", required=False, int32=True)
    broker_name: str | None = wire("bname", required=False)
