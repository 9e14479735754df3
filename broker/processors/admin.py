"""Admin requests the Java tools and clients send to a broker (``AdminBrokerProcessor``):
topic create/delete/list, topic and consume statistics, consumer connections, runtime
info and config, and the order locks LOCK_BATCH_MQ / UNLOCK_BATCH_MQ.

Bodies keyed by ``MessageQueue`` (``TopicStatsTable``, ``ConsumeStats``) are written in fastjson's
object-key form, which is what ``mqadmin topicStatus`` / ``consumerProgress`` parse.

The work of every request here is bounded by validated state: queue counts enter the topic table
only through :func:`validate_topic_config` (at most ``MAX_QUEUE_NUMS`` per topic), and a consume
stats request names each existing topic at most once, however long its ``topicList``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker.client_manager import ClientChannel
from broker.controller import BrokerController
from broker.stats import BrokerStats
from broker.subscription_group_manager import SubscriptionGroupConfig, alter_group_attributes
from broker.topic_attributes import requested_attributes
from broker.topic_config_manager import (
    validate_group,
    validate_topic,
    validate_topic_config,
)
from codec import fastjson
from codec.bodies.lock import LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody
from codec.bodies.register import TopicConfig
from codec.codes import RequestCode, ResponseCode, language_name
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.admin import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GroupRequestHeader,
    TopicRequestHeader,
)
from codec.headers.base import EmptyHeader
from gateway.transport.dispatch import Dispatcher, RequestContext


def _mq_key(topic: str, broker_name: str, queue_id: int) -> dict[str, Any]:
    return {"brokerName": broker_name, "queueId": queue_id, "topic": topic}


def _connection(channel: ClientChannel) -> dict[str, Any]:
    """``Connection`` of a consumer or producer connection list."""
    return {
        "clientAddr": channel.connection.remote_addr,
        "clientId": channel.client_id,
        "language": language_name(channel.language),
        "version": channel.version,
    }


class AdminBrokerProcessor:
    def __init__(
        self,
        broker: BrokerController,
        stats: BrokerStats,
        clean_lite_topics: Callable[[str], object] | None = None,
    ) -> None:
        """``clean_lite_topics``: deletes the lite topics of a LITE parent topic being deleted
        (``LiteLifecycleManager.cleanByParentTopic``); None: they stay until they expire."""
        self.broker = broker
        self.stats = stats
        self.clean_lite_topics = clean_lite_topics

    def register(self, dispatcher: Dispatcher) -> None:
        reg = dispatcher.register
        reg(RequestCode.UPDATE_AND_CREATE_TOPIC, self.update_and_create_topic, CreateTopicRequestHeader)
        reg(RequestCode.DELETE_TOPIC_IN_BROKER, self.delete_topic, TopicRequestHeader)
        reg(RequestCode.GET_ALL_TOPIC_CONFIG, self.get_all_topic_config, None)
        reg(RequestCode.GET_TOPIC_CONFIG, self.get_topic_config, TopicRequestHeader)
        reg(RequestCode.GET_TOPIC_STATS_INFO, self.get_topic_stats_info, TopicRequestHeader)
        reg(RequestCode.GET_CONSUME_STATS, self.get_consume_stats, GetConsumeStatsRequestHeader)
        reg(
            RequestCode.GET_CONSUMER_CONNECTION_LIST,
            self.get_consumer_connection_list,
            GetConsumerConnectionListRequestHeader,
        )
        reg(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, self.query_topic_consume_by_who, TopicRequestHeader)
        reg(RequestCode.QUERY_TOPICS_BY_CONSUMER, self.query_topics_by_consumer, GroupRequestHeader)
        reg(
            RequestCode.GET_PRODUCER_CONNECTION_LIST,
            self.get_producer_connection_list,
            GetProducerConnectionListRequestHeader,
        )
        reg(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, self.update_subscription_group, None)
        reg(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, self.get_all_subscription_groups, None)
        reg(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, self.get_subscription_group, GroupRequestHeader)
        reg(
            RequestCode.DELETE_SUBSCRIPTIONGROUP,
            self.delete_subscription_group,
            DeleteSubscriptionGroupRequestHeader,
        )
        reg(RequestCode.GET_ALL_CONSUMER_OFFSET, self.get_all_consumer_offset, None)
        reg(RequestCode.GET_ALL_DELAY_OFFSET, self.get_all_delay_offset, None)
        reg(RequestCode.LOCK_BATCH_MQ, self.lock_batch_mq, EmptyHeader)
        reg(RequestCode.UNLOCK_BATCH_MQ, self.unlock_batch_mq, EmptyHeader)

    # -- topics ----------------------------------------------------------------------------------

    def update_and_create_topic(
        self, _ctx: RequestContext, request: RemotingCommand, header: CreateTopicRequestHeader
    ) -> RemotingCommand:
        validate_topic(header.topic)  # refusals raise TopicValidationError (INVALID_PARAMETER)
        self.broker.topics.refuse_system(header.topic)
        existing = self.broker.topics.select(header.topic)
        topic = TopicConfig(
            header.topic,
            header.read_queue_nums,
            header.write_queue_nums,
            header.perm,
            header.topic_filter_type,
            header.topic_sys_flag or 0,
            header.order,
        )
        topic.attributes = requested_attributes(
            header.attributes, existing, self.broker.config.followed.message_types
        )
        validate_topic_config(topic)  # refusals raise TopicValidationError (INVALID_PARAMETER)
        self.broker.topics.update(topic)
        return request.make_response(ResponseCode.SUCCESS)

    def delete_topic(
        self, _ctx: RequestContext, request: RemotingCommand, header: TopicRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        if not header.topic.strip():
            raise RocketMQError("The specified topic is blank.", response_code=ResponseCode.INVALID_PARAMETER)
        broker.topics.refuse_system(header.topic)
        if self.clean_lite_topics is not None:
            self.clean_lite_topics(header.topic)
        broker.topics.delete(header.topic)
        broker.offsets.remove_topic(header.topic)
        return request.make_response(ResponseCode.SUCCESS)

    def get_all_topic_config(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        doc = self.broker.topics.to_obj()
        doc["mappingDataVersion"] = doc["dataVersion"]
        doc["topicQueueMappingDetailMap"] = {}
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(doc))

    def get_topic_config(
        self, _ctx: RequestContext, request: RemotingCommand, header: TopicRequestHeader
    ) -> RemotingCommand:
        """``TopicConfigAndQueueMapping``: the topic config (no static-topic mapping here)."""
        topic = self.broker.topics.select(header.topic)
        if topic is None:
            raise RocketMQError(
                f"No topic in this broker. topic: {header.topic}", response_code=ResponseCode.TOPIC_NOT_EXIST
            )
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(topic.to_obj()))

    def get_topic_stats_info(
        self, _ctx: RequestContext, request: RemotingCommand, header: TopicRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        topic = broker.topics.select(header.topic)
        if topic is None:
            raise RocketMQError(
                f"topic[{header.topic}] not exist", response_code=ResponseCode.TOPIC_NOT_EXIST
            )
        store = broker.store
        entries = []
        for queue_id in range(max(topic.read_queue_nums, topic.write_queue_nums)):
            min_offset = store.get_min_offset_in_queue(header.topic, queue_id)
            max_offset = store.get_max_offset_in_queue(header.topic, queue_id)
            last = 0
            if max_offset > 0:
                last = store.get_message_store_timestamp(header.topic, queue_id, max_offset - 1)
            entries.append(
                (
                    _mq_key(header.topic, broker.config.broker_name, queue_id),
                    {"lastUpdateTimestamp": max(last, 0), "maxOffset": max_offset, "minOffset": min_offset},
                )
            )
        body = b'{"offsetTable":' + fastjson.dumps_object_keys(entries) + b',"topicPutTps":0.0}'
        return request.make_response(ResponseCode.SUCCESS, body=body)

    # -- consumers -------------------------------------------------------------------------------

    def get_consume_stats(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetConsumeStatsRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        group = header.consumer_group
        if header.topic_list:
            # Each topic once, and only topics this broker has: the work is bounded by the table.
            topics = [t for t in dict.fromkeys(header.topic_list.split(",")) if t in broker.topics.table]
        elif header.topic:
            topics = [header.topic]
        else:
            topics = broker.offsets.topics_of_group(group)
        info = broker.clients.consumers.get(group)
        if info is not None and info.subscriptions:
            topics = [t for t in topics if t in info.subscriptions or header.topic == t]
        store = broker.store
        entries = []
        for name in topics:
            topic = broker.topics.select(name)
            if topic is None:
                continue
            for queue_id in range(topic.read_queue_nums):
                broker_offset = store.get_max_offset_in_queue(name, queue_id)
                consumer_offset = max(broker.offsets.query(group, name, queue_id), 0)
                last = 0
                if consumer_offset > 0:
                    last = max(store.get_message_store_timestamp(name, queue_id, consumer_offset - 1), 0)
                entries.append(
                    (
                        _mq_key(name, broker.config.broker_name, queue_id),
                        {
                            "brokerOffset": broker_offset,
                            "consumerOffset": consumer_offset,
                            "lastTimestamp": last,
                            "pullOffset": consumer_offset,
                        },
                    )
                )
        tps = repr(sum(self.stats.group_get_tps(group, t) for t in topics)).encode()
        body = b'{"consumeTps":' + tps + b',"offsetTable":' + fastjson.dumps_object_keys(entries) + b"}"
        return request.make_response(ResponseCode.SUCCESS, body=body)

    def query_topic_consume_by_who(
        self, _ctx: RequestContext, request: RemotingCommand, header: TopicRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        groups = set(broker.clients.groups_subscribing(header.topic))
        groups.update(broker.offsets.groups_of_topic(header.topic))
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps({"groupList": sorted(groups)}))

    def query_topics_by_consumer(
        self, _ctx: RequestContext, request: RemotingCommand, header: GroupRequestHeader
    ) -> RemotingCommand:
        topics = sorted(set(self.broker.offsets.topics_of_group(header.group)))
        body = {"brokerAddr": self.broker.config.broker_addr, "topicList": topics}
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(body))

    def get_producer_connection_list(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetProducerConnectionListRequestHeader
    ) -> RemotingCommand:
        channels = self.broker.clients.producers.get(header.producer_group)
        if not channels:
            raise RocketMQError(
                f"the producer group[{header.producer_group}] not exist",
                response_code=ResponseCode.SYSTEM_ERROR,
            )
        body = {"connectionSet": [_connection(c) for c in channels.values()]}
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(body))

    # -- subscription groups ---------------------------------------------------------------------

    def update_subscription_group(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        group = SubscriptionGroupConfig.decode(request.body)
        validate_group(group.group_name)
        current = self.broker.groups.find(group.group_name, create=False)
        group.attributes = alter_group_attributes(current.attributes if current else {}, group.attributes)
        self.broker.groups.update(group)
        return request.make_response(ResponseCode.SUCCESS)

    def get_all_subscription_groups(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(self.broker.groups.to_obj()))

    def get_subscription_group(
        self, _ctx: RequestContext, request: RemotingCommand, header: GroupRequestHeader
    ) -> RemotingCommand:
        group = self.broker.groups.find(header.group, create=False)
        if group is None:
            raise RocketMQError(
                f"group {header.group} not exist", response_code=ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
            )
        return request.make_response(ResponseCode.SUCCESS, body=group.encode())

    def delete_subscription_group(
        self, _ctx: RequestContext, request: RemotingCommand, header: DeleteSubscriptionGroupRequestHeader
    ) -> RemotingCommand:
        self.broker.groups.delete(header.group_name)
        if header.clean_offset:
            self.broker.offsets.remove_group(header.group_name)
        return request.make_response(ResponseCode.SUCCESS)

    def get_all_consumer_offset(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(self.broker.offsets.to_obj()))

    def get_all_delay_offset(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(self.broker.schedule.to_obj()))

    def get_consumer_connection_list(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetConsumerConnectionListRequestHeader
    ) -> RemotingCommand:
        info = self.broker.clients.consumers.get(header.consumer_group)
        if info is None or not info.channels:
            raise RocketMQError(
                f"the consumer group[{header.consumer_group}] not online",
                response_code=ResponseCode.CONSUMER_NOT_ONLINE,
            )
        connections = [_connection(c) for c in info.channels.values()]
        doc = {
            "connectionSet": connections,
            "consumeFromWhere": info.consume_from_where,
            "consumeType": info.consume_type,
            "messageModel": info.message_model,
            "subscriptionTable": {t: s.to_obj() for t, s in info.subscriptions.items()},
        }
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(doc))

    # -- broker ----------------------------------------------------------------------------------

    # -- order locks -----------------------------------------------------------------------------

    def lock_batch_mq(self, _ctx: RequestContext, request: RemotingCommand, _header: Any) -> RemotingCommand:
        body = LockBatchRequestBody.decode(request.body)
        granted = self.broker.locks.try_lock_batch(
            body.consumer_group, body.mq_set, body.client_id, self.broker.now_ms()
        )
        return request.make_response(ResponseCode.SUCCESS, body=LockBatchResponseBody(granted).encode())

    def unlock_batch_mq(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        body = UnlockBatchRequestBody.decode(request.body)
        self.broker.locks.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        return request.make_response(ResponseCode.SUCCESS)
