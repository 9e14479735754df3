"""Client bodies: HEART_BEAT data, consumer lists and CHECK_CLIENT_CONFIG.

Mirrors ``HeartbeatData``, ``ConsumerData``, ``ProducerData``, ``SubscriptionData``,
``GetConsumerListByGroupResponseBody`` and ``CheckClientRequestBody``. Enum values (consume type,
message model, consume-from-where, expression type) are their Java names as strings.
"""

from __future__ import annotations

from dataclasses import dataclass

from codec.bodies.base import JsonBody, jfield
from codec.hashing import java_string_hash

SUB_ALL = "*"
EXPRESSION_TAG = "TAG"
EXPRESSION_SQL92 = "SQL92"
CLUSTERING = "CLUSTERING"
BROADCASTING = "BROADCASTING"
CONSUME_ACTIVELY = "CONSUME_ACTIVELY"
CONSUME_PASSIVELY = "CONSUME_PASSIVELY"


@dataclass(slots=True)
class SubscriptionData(JsonBody):
    topic: str = ""
    sub_string: str = SUB_ALL
    tags_set: list[str] = jfield(factory=list)
    code_set: list[int] = jfield(factory=list)
    sub_version: int = 0
    expression_type: str = EXPRESSION_TAG
    class_filter_mode: bool = False

    @classmethod
    def build(cls, topic: str, expression: str | None, sub_version: int = 0) -> SubscriptionData:
        """A TAG subscription as ``FilterAPI.buildSubscriptionData`` builds it."""
        text = (expression or "").strip()
        if not text or text == SUB_ALL:
            return cls(topic=topic, sub_string=SUB_ALL, sub_version=sub_version)
        tags = [t.strip() for t in text.split("||") if t.strip()]
        return cls(
            topic=topic,
            sub_string=text,
            tags_set=tags,
            code_set=[java_string_hash(t) for t in tags],
            sub_version=sub_version,
        )


@dataclass(slots=True)
class ConsumerData(JsonBody):
    group_name: str = ""
    consume_type: str = CONSUME_PASSIVELY
    message_model: str = CLUSTERING
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscription_data_set: list[SubscriptionData] = jfield(factory=list)
    unit_mode: bool = False


@dataclass(slots=True)
class ProducerData(JsonBody):
    group_name: str = ""


@dataclass(slots=True)
class HeartbeatData(JsonBody):
    client_id: str = jfield("clientID", default="")
    producer_data_set: list[ProducerData] = jfield(factory=list)
    consumer_data_set: list[ConsumerData] = jfield(factory=list)
    heartbeat_fingerprint: int | None = None  # 5.1.3+
    without_sub: bool | None = None  # 5.1.3+


@dataclass(slots=True)
class ConsumerListBody(JsonBody):
    """``GetConsumerListByGroupResponseBody``."""

    consumer_id_list: list[str] = jfield(factory=list)


@dataclass(slots=True)
class CheckClientRequestBody(JsonBody):
    client_id: str | None = None
    group: str | None = None
    namespace: str | None = None
    subscription_data: SubscriptionData | None = None
