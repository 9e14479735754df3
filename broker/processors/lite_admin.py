"""The 5.5 lite admin requests: what ``mqadmin getBrokerLiteInfo``, ``getParentTopicInfo``,
``getLiteTopicInfo``, ``getLiteClientInfo``, ``getLiteGroupInfo`` and ``triggerLiteDispatch`` ask.

Mirrors org.apache.rocketmq.broker.processor.LiteManagerProcessor (5.5.0), over the lite
subscription registry of :mod:`broker.lite` and the LMQ queues of the store:

* GET_BROKER_LITE_INFO: the store type, the LMQ limit and count, the active (client, lite topic)
  subscriptions, the orderly-consumption records of lite queues, the consume-queue table's topics,
  the offset table's entries, the clients that asked for messages, the LITE topics with their
  ``lite.topic.expiration`` and the lite groups by bound topic.
* GET_PARENT_TOPIC_INFO, GET_LITE_TOPIC_INFO, GET_LITE_CLIENT_INFO: refused TOPIC_NOT_EXIST
  (``Topic [P] not exist.``) or INVALID_PARAMETER (``Topic [P] type not match.``) for a parent
  topic that is missing or not LITE; the client request also SUBSCRIPTION_GROUP_NOT_EXIST
  (``Group [G] not exist.``) and INVALID_PARAMETER (``Subscription [G]-[P] not match.``).
* GET_LITE_GROUP_INFO, TRIGGER_LITE_DISPATCH: SUBSCRIPTION_GROUP_NOT_EXIST, or INVALID_PARAMETER
  ``Group [G] is not a LITE group.``. A group is looked up as Java's
  ``findSubscriptionGroupConfig`` does: an unknown group with a valid name is auto-created
  (``autoCreateSubscriptionGroup``), so it is "not a LITE group" rather than "not exist".

The bodies are written as fastjson writes them: fields in name order, nulls left out, sets as
arrays. A group's lag by count comes from its committed offsets of lite queues
(``LiteConsumerLagCalculator.getLagCountTopK``); its lag by time is empty with the earliest
unconsumed time -1, as Java's is with ``liteLagLatencyCollectEnable`` off (its default).
"""

from __future__ import annotations

import logging
from typing import Any

from broker.controller import BrokerController
from broker.lite import (
    LITE_TOPIC_PREFIX,
    is_lite_topic,
    lite_bind_topic,
    lite_topic_expiration,
    split_lmq_name,
    to_lmq_name,
)
from broker.service.services import BrokerServices
from broker.subscription_group_manager import SubscriptionGroupConfig
from codec import fastjson
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from codec.headers.lite import (
    GetLiteClientInfoRequestHeader,
    GetLiteGroupInfoRequestHeader,
    GetLiteTopicInfoRequestHeader,
    GetParentTopicInfoRequestHeader,
    TriggerLiteDispatchRequestHeader,
)
from gateway.transport.dispatch import Dispatcher, RequestContext

logger = logging.getLogger(__name__)

LMQ_PREFIX = "%LMQ%"  # MixAll.LMQ_PREFIX: every LMQ queue, lite or not
STORE_TYPE = "default"  # MessageStoreConfig.storeType: the file-based consume queues
MAX_RETURN_COUNT = 10000  # LiteManagerProcessor.MAX_RETURN_COUNT


def lag_count_top_k(broker: BrokerController, group: str, top_k: int) -> tuple[list[dict[str, Any]], int]:
    """``LiteConsumerLagCalculator.getLagCountTopK``: the ``top_k`` lite topics the group lags
    most on (``LiteLagInfo``: lag count and the store time of the first unconsumed message),
    most first, and the group's total lag over all of its lite queues."""
    store = broker.store
    total = 0
    found: list[dict[str, Any]] = []
    for key, queues in broker.offsets.table.items():
        parts = key.split("@")
        if len(parts) != 2 or parts[1] != group or not parts[0].startswith(LITE_TOPIC_PREFIX):
            continue
        lmq_name, committed = parts[0], queues.get(0)
        if committed is None or committed < 0:
            continue
        lag = max(0, store.get_max_offset_in_queue(lmq_name, 0) - committed)
        if lag <= 0:
            continue
        total += lag
        names = split_lmq_name(lmq_name)
        entry: dict[str, Any] = {
            "earliestUnconsumedTimestamp": store.get_message_store_timestamp(lmq_name, 0, committed),
            "lagCount": lag,
        }
        if names is not None:
            entry["liteTopic"] = names[1]
        found.append(entry)
    found.sort(key=lambda entry: -int(entry["lagCount"]))
    return found[: max(top_k, 0)], total


def _refusal(request: RemotingCommand, code: int, remark: str) -> RemotingCommand:
    return request.make_response(code, remark)


def _success(request: RemotingCommand, body: dict[str, Any] | None) -> RemotingCommand:
    """SUCCESS with the body's fields in name order (fastjson's), or without a body."""
    data = fastjson.dumps(dict(sorted(body.items()))) if body is not None else b""
    return request.make_response(ResponseCode.SUCCESS, body=data)


class LiteManagerProcessor:
    """The six lite admin codes over the broker and its shared services (module docstring)."""

    def __init__(self, broker: BrokerController, services: BrokerServices) -> None:
        self.broker = broker
        self.services = services

    def register(self, dispatcher: Dispatcher) -> None:
        reg = dispatcher.register
        reg(RequestCode.GET_BROKER_LITE_INFO, self.get_broker_lite_info, EmptyHeader)
        reg(RequestCode.GET_PARENT_TOPIC_INFO, self.get_parent_topic_info, GetParentTopicInfoRequestHeader)
        reg(RequestCode.GET_LITE_TOPIC_INFO, self.get_lite_topic_info, GetLiteTopicInfoRequestHeader)
        reg(RequestCode.GET_LITE_CLIENT_INFO, self.get_lite_client_info, GetLiteClientInfoRequestHeader)
        reg(RequestCode.GET_LITE_GROUP_INFO, self.get_lite_group_info, GetLiteGroupInfoRequestHeader)
        reg(RequestCode.TRIGGER_LITE_DISPATCH, self.trigger_lite_dispatch, TriggerLiteDispatchRequestHeader)

    # -- metadata --------------------------------------------------------------------------------

    def _topic_ttl_map(self) -> dict[str, int]:
        """``LiteMetadataUtil.getTopicTtlMap``."""
        return {
            name: lite_topic_expiration(topic.attributes)
            for name, topic in self.broker.topics.table.items()
            if is_lite_topic(topic.attributes)
        }

    def _subscriber_group_map(self) -> dict[str, list[str]]:
        """``LiteMetadataUtil.getSubscriberGroupMap``: the lite groups by their bound topic."""
        found: dict[str, list[str]] = {}
        for name, group in self.broker.groups.table.items():
            bound = lite_bind_topic(group.attributes)
            if bound is not None:
                found.setdefault(bound, []).append(name)
        return {topic: sorted(groups) for topic, groups in found.items()}

    def _lmq_names(self) -> list[str]:
        return [cq.topic for cq in self.broker.store.queues if cq.topic.startswith(LMQ_PREFIX)]

    def _max_offset(self, lmq_name: str) -> int:
        """``LiteLifecycleManager.getMaxOffsetInQueue``: the next offset of the queue, 0 if none."""
        return self.broker.store.get_max_offset_in_queue(lmq_name, 0)

    def _check_parent(self, request: RemotingCommand, topic: str | None) -> RemotingCommand | None:
        config = self.broker.topics.table.get(topic) if topic is not None else None
        if config is None or topic is None:
            return _refusal(request, ResponseCode.TOPIC_NOT_EXIST, f"Topic [{topic}] not exist.")
        if not is_lite_topic(config.attributes):
            return _refusal(request, ResponseCode.INVALID_PARAMETER, f"Topic [{topic}] type not match.")
        return None

    def _lite_group(
        self, request: RemotingCommand, group: str
    ) -> tuple[SubscriptionGroupConfig, str] | RemotingCommand:
        """The group and its bound topic, or the refusal (``findSubscriptionGroupConfig``)."""
        config = self.broker.groups.find(group)
        if config is None:
            return _refusal(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group [{group}] not exist.")
        bound = lite_bind_topic(config.attributes)
        if not bound:
            return _refusal(request, ResponseCode.INVALID_PARAMETER, f"Group [{group}] is not a LITE group.")
        return config, bound

    # -- handlers --------------------------------------------------------------------------------

    def get_broker_lite_info(
        self, _ctx: RequestContext, request: RemotingCommand, _header: EmptyHeader
    ) -> RemotingCommand:
        broker, registry = self.broker, self.services.lite
        orders = self.services.consume.orders.table
        return _success(
            request,
            {
                "cqTableSize": len({cq.topic for cq in broker.store.queues}),
                "currentLmqNum": len(self._lmq_names()),
                "eventMapSize": len(registry.last_access_ms),
                "groupMeta": self._subscriber_group_map(),
                "liteSubscriptionCount": registry.active_count(),
                "maxLmqNum": broker.store.config.max_lmq_consume_queue_num,
                "offsetTableSize": len(broker.offsets.table),
                "orderInfoCount": sum(1 for key in orders if key.startswith(LITE_TOPIC_PREFIX)),
                "storeType": STORE_TYPE,
                "topicMeta": self._topic_ttl_map(),
            },
        )

    def get_parent_topic_info(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetParentTopicInfoRequestHeader
    ) -> RemotingCommand:
        topic = header.topic
        refused = self._check_parent(request, topic)
        if refused is not None:
            return refused
        lmq_names = self._lmq_names()
        body: dict[str, Any] = {}
        groups = self._subscriber_group_map().get(topic)
        if groups is not None:
            body["groups"] = groups
        body["liteTopicCount"] = sum(1 for name in lmq_names if _parent_of(name) == topic)
        body["lmqNum"] = len(lmq_names)
        body["topic"] = topic
        body["ttl"] = lite_topic_expiration(self.broker.topics.table[topic].attributes)
        return _success(request, body)

    def get_lite_topic_info(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetLiteTopicInfoRequestHeader
    ) -> RemotingCommand:
        parent, lite = header.parent_topic, header.lite_topic
        refused = self._check_parent(request, parent)
        if refused is not None:
            return refused
        assert parent is not None
        lmq_name = to_lmq_name(parent, lite or "")
        store = self.broker.store
        max_offset = self._max_offset(lmq_name)
        min_offset = last_update = 0
        if max_offset > 0:
            min_offset = store.get_min_offset_in_queue(lmq_name, 0)
            last_update = store.get_message_store_timestamp(lmq_name, 0, max_offset - 1)
        subscribers = sorted(self.services.lite.subscribers_of(lmq_name))
        body: dict[str, Any] = {}
        if lite is not None:
            body["liteTopic"] = lite
        body["parentTopic"] = parent
        body["shardingToBroker"] = True  # one broker serves every lite topic of its parent topics
        body["subscriber"] = [{"clientId": client, "group": group} for client, group in subscribers]
        body["topicOffset"] = {
            "lastUpdateTimestamp": last_update,
            "maxOffset": max(max_offset, 0),
            "minOffset": max(min_offset, 0),
        }
        return _success(request, body)

    def get_lite_client_info(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetLiteClientInfoRequestHeader
    ) -> RemotingCommand:
        if header.max_count <= 0:  # GetLiteClientInfoRequestHeader.checkFields
            return _refusal(request, ResponseCode.SYSTEM_ERROR, "[maxCount] field invalid")
        parent, group = header.parent_topic, header.group or ""
        refused = self._check_parent(request, parent)
        if refused is not None:
            return refused
        config = self.broker.groups.find(group)
        if config is None:
            return _refusal(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group [{group}] not exist.")
        if lite_bind_topic(config.attributes) != parent:
            return _refusal(
                request, ResponseCode.INVALID_PARAMETER, f"Subscription [{group}]-[{parent}] not match."
            )
        registry = self.services.lite
        client_id = header.client_id or ""
        subscription = registry.by_client.get(client_id)
        body: dict[str, Any] = {}
        if client_id:
            body["clientId"] = client_id
        body["group"] = group
        body["lastAccessTime"] = registry.last_access_ms.get(client_id, -1)
        body["lastConsumeTime"] = 0  # never set by LiteManagerProcessor
        if subscription is not None:
            names = sorted(subscription.lmq_names)
            body["liteTopicCount"] = len(names)
            body["liteTopicSet"] = names[: min(header.max_count, MAX_RETURN_COUNT)]
        else:
            body["liteTopicCount"] = -1
        body["parentTopic"] = parent
        return _success(request, body)

    def get_lite_group_info(
        self, ctx: RequestContext, request: RemotingCommand, header: GetLiteGroupInfoRequestHeader
    ) -> RemotingCommand:
        group, lite = header.group, header.lite_topic
        logger.info(
            "Broker receive request to getLiteGroupInfo, group:%s, liteTopic:%s, caller:%s",
            group, lite, ctx.connection.remote_addr,
        )  # fmt: skip
        found = self._lite_group(request, group)
        if isinstance(found, RemotingCommand):
            return found
        _config, bound = found
        broker = self.broker
        body: dict[str, Any] = {"earliestUnconsumedTimestamp": -1, "group": group, "parentTopic": bound}
        if lite is not None:
            body["liteTopic"] = lite
        if not lite:
            by_count, total = lag_count_top_k(broker, group, header.top_k)
            body["lagCountTopK"] = by_count
            body["lagTimestampTopK"] = []  # liteLagLatencyCollectEnable is off: nothing collected
            body["totalLagCount"] = total
            return _success(request, body)
        lmq_name = to_lmq_name(bound, lite)
        max_offset = self._max_offset(lmq_name)
        body["totalLagCount"] = 0
        if max_offset <= 0:
            body["totalLagCount"] = -1
            return _success(request, body)
        committed = broker.offsets.query(group, lmq_name, 0)
        if committed >= 0:
            store = broker.store
            body["totalLagCount"] = max_offset - committed  # the lite topic's own figures
            body["earliestUnconsumedTimestamp"] = store.get_message_store_timestamp(lmq_name, 0, committed)
            last = store.get_message_store_timestamp(lmq_name, 0, committed - 1) if committed > 0 else 0
            body["liteTopicOffsetWrapper"] = {
                "brokerOffset": max_offset,
                "consumerOffset": committed,
                "lastTimestamp": last,
                "pullOffset": 0,
            }
        return _success(request, body)

    def trigger_lite_dispatch(
        self, ctx: RequestContext, request: RemotingCommand, header: TriggerLiteDispatchRequestHeader
    ) -> RemotingCommand:
        """Java re-queues every subscribed lite topic as an event for the client (or the group's
        clients); a receive here walks all of its lite topics anyway, so this wakes the group's
        waiting receives to look again."""
        group = header.group
        logger.info(
            "Broker receive request to triggerLiteDispatch, group:%s, clientId:%s, caller:%s",
            group, header.client_id, ctx.connection.remote_addr,
        )  # fmt: skip
        found = self._lite_group(request, group)
        if isinstance(found, RemotingCommand):
            return found
        _config, bound = found
        self.services.consume.polling.wake(bound, group, -1)
        return _success(request, None)


def _parent_of(lmq_name: str) -> str | None:
    names = split_lmq_name(lmq_name)
    return names[0] if names is not None else None
