"""Headers of the 5.5 lite admin requests (``LiteManagerProcessor``), from rocketmq-remoting 5.5.0.

Only ``GetParentTopicInfoRequestHeader.topic`` and the ``group`` of the group requests are
``@CFNotNull``; the others may be missing (null in Java).
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
