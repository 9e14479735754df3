"""Headers of the 5.5 lite requests: the lite admin requests (``LiteManagerProcessor``), the lite
POP (``PopLiteMessageProcessor``) and the broker's NOTIFY_UNSUBSCRIBE_LITE, from rocketmq-remoting 5.5.0.

Of the admin headers only ``GetParentTopicInfoRequestHeader.topic`` and the ``group`` of the group
requests are ``@CFNotNull``; their others may be missing (null in Java).
"""

from __future__ import annotations

from dataclasses import dataclass

from codec.headers.base import CustomHeader, wire

DEFAULT_MAX_COUNT = 1000  # GetLiteClientInfoRequestHeader.maxCount


@dataclass(slots=True)
class GetParentTopicInfoRequestHeader(CustomHeader):
    """GET_PARENT_TOPIC_INFO."""

    topic: str = wire("topic")


@dataclass(slots=True)
class GetLiteTopicInfoRequestHeader(CustomHeader):
    """GET_LITE_TOPIC_INFO."""

    parent_topic: str | None = wire("parentTopic", required=False)
    lite_topic: str | None = wire("liteTopic", required=False)


@dataclass(slots=True)
class GetLiteClientInfoRequestHeader(CustomHeader):
    """GET_LITE_CLIENT_INFO; ``checkFields`` refuses a ``maxCount`` of 0 or less."""

    parent_topic: str | None = wire("parentTopic", required=False)
    group: str | None = wire("group", required=False)
    client_id: str | None = wire("clientId", required=False)
    max_count: int = wire("maxCount", required=False, default=DEFAULT_MAX_COUNT, int32=True)


@dataclass(slots=True)
class GetLiteGroupInfoRequestHeader(CustomHeader):
    """GET_LITE_GROUP_INFO; ``topK`` is a Java ``int`` (0 when missing)."""

    group: str = wire("group")
    lite_topic: str | None = wire("liteTopic", required=False)
    top_k: int = wire("topK", required=False, default=0, int32=True)


@dataclass(slots=True)
class TriggerLiteDispatchRequestHeader(CustomHeader):
    """TRIGGER_LITE_DISPATCH."""

    group: str = wire("group")
    client_id: str | None = wire("clientId", required=False)


@dataclass(slots=True)
class PopLiteMessageRequestHeader(CustomHeader):
    """POP_LITE_MESSAGE (``PopLiteMessageRequestHeader``): every field but ``attemptId`` is
    ``@CFNotNull``; ``bornTime`` is optional here because ``PopLiteMessageProcessor`` puts the
    broker's clock into the ext fields when it is absent or ``"0"`` before decoding."""

    client_id: str = wire("clientId")
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    max_msg_num: int = wire("maxMsgNum", int32=True)
    invisible_time: int = wire("invisibleTime")
    poll_time: int = wire("pollTime")
    born_time: int | None = wire("bornTime", required=False)
    attempt_id: str | None = wire("attemptId", required=False)


@dataclass(slots=True)
class PopLiteMessageResponseHeader(CustomHeader):
    """POP_LITE_MESSAGE's answer (``PopLiteMessageResponseHeader``); the 5.5.0 broker never sets
    ``startOffsetInfo`` and ``msgOffsetInfo`` (one pop reads several LMQ queues)."""

    pop_time: int = wire("popTime")
    invisible_time: int = wire("invisibleTime")
    revive_qid: int = wire("reviveQid", int32=True)
    start_offset_info: str | None = wire("startOffsetInfo", required=False)
    msg_offset_info: str | None = wire("msgOffsetInfo", required=False)
    order_count_info: str | None = wire("orderCountInfo", required=False)


@dataclass(slots=True)
class NotifyUnsubscribeLiteRequestHeader(CustomHeader):
    """NOTIFY_UNSUBSCRIBE_LITE, broker to client (``NotifyUnsubscribeLiteRequestHeader``): the
    lite topic (not its LMQ name) the broker dropped from the client's subscription."""

    lite_topic: str = wire("liteTopic")
    consumer_group: str = wire("consumerGroup")
    client_id: str = wire("clientId")
