"""Headers of the admin requests handled by the broker (``AdminBrokerProcessor``) and of the broker-to-client
calls (``Broker2Client``)."""

from __future__ import annotations

from dataclasses import dataclass

from codec.headers.base import CustomHeader, wire


@dataclass(slots=True)
class CreateTopicRequestHeader(CustomHeader):
    """UPDATE_AND_CREATE_TOPIC; ``attributes`` looks like ``+key=value,+k2=v2,-k3``."""

    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic")
    read_queue_nums: int = wire("readQueueNums", int32=True)
    write_queue_nums: int = wire("writeQueueNums", int32=True)
    perm: int = wire("perm", int32=True)
    topic_filter_type: str = wire("topicFilterType")
    order: bool = wire("order")
    topic_sys_flag: int | None = wire("topicSysFlag", required=False, int32=True)
    attributes: str | None = wire("attributes", required=False)
    force: bool | None = wire("force", required=False)


@dataclass(slots=True)
class TopicRequestHeader(CustomHeader):
    """DELETE_TOPIC_IN_BROKER, GET_TOPIC_CONFIG, GET_TOPIC_STATS_INFO, QUERY_TOPIC_CONSUME_BY_WHO."""

    topic: str = wire("topic")


@dataclass(slots=True)
class DeleteSubscriptionGroupRequestHeader(CustomHeader):
    group_name: str = wire("groupName")
    clean_offset: bool = wire("cleanOffset", required=False, default=False)


@dataclass(slots=True)
class GroupRequestHeader(CustomHeader):
    """GET_SUBSCRIPTIONGROUP_CONFIG and QUERY_TOPICS_BY_CONSUMER (key ``group``)."""

    group: str = wire("group")


@dataclass(slots=True)
class GetConsumeStatsRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")
    topic: str | None = wire("topic", required=False)
    topic_list: str | None = wire("topicList", required=False)  # comma separated


@dataclass(slots=True)
class GetConsumerConnectionListRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")


@dataclass(slots=True)
class GetProducerConnectionListRequestHeader(CustomHeader):
    producer_group: str = wire("producerGroup")


@dataclass(slots=True)
class ResetOffsetRequestHeader(CustomHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET (admin to broker) and RESET_CONSUMER_CLIENT_OFFSET (broker to client).

    ``timestamp`` −1 means "the max offset"; ``queue_id`` −1 means every queue.
    """

    group: str = wire("group")
    topic: str = wire("topic")
    timestamp: int = wire("timestamp")
    is_force: bool = wire("isForce")
    queue_id: int = wire("queueId", required=False, default=-1, int32=True)
    offset: int | None = wire("offset", required=False)


@dataclass(slots=True)
class QueryConsumeQueueRequestHeader(CustomHeader):
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    index: int = wire("index")
    count: int = wire("count", int32=True)
    consumer_group: str | None = wire("consumerGroup", required=False)


@dataclass(slots=True)
class ViewBrokerStatsDataRequestHeader(CustomHeader):
    stats_name: str = wire("statsName")
    stats_key: str = wire("statsKey")


@dataclass(slots=True)
class GetConsumerRunningInfoRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")
    client_id: str = wire("clientId")
    jstack_enable: bool = wire("jstackEnable", required=False, default=False)


@dataclass(slots=True)
class ConsumeMessageDirectlyResultRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")
    client_id: str | None = wire("clientId", required=False)
    msg_id: str | None = wire("msgId", required=False)
    broker_name: str | None = wire("brokerName", required=False)
    topic: str | None = wire("topic", required=False)
    topic_sys_flag: int | None = wire("topicSysFlag", required=False, int32=True)
    group_sys_flag: int | None = wire("groupSysFlag", required=False, int32=True)
