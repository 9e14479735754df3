"""What each remoting request must be allowed: the resource and actions per request code.

Mirrors ``org.apache.rocketmq.auth.authorization.builder.DefaultAuthorizationContextBuilder.build
(ChannelHandlerContext, RemotingCommand)``: a hand-written rule for the client codes (send, pull,
heartbeat, offsets, locks …) and, for every other code, the ``@RocketMQAction`` /
``@RocketMQResource`` annotations of the request header class Java registers for it
(``RequestHeaderRegistry``), copied into :data:`ANNOTATED` below in the fields' declaration order.

Java's quirks are kept, since clients see them: a request without ext fields needs nothing; a
code without an annotated header (``LITE_PULL_MESSAGE``, ``UPDATE_AND_CREATE_SUBSCRIPTIONGROUP``,
``UPDATE_BROKER_CONFIG``, ``GET_BROKER_CLUSTER_INFO`` …) needs nothing beyond authentication; a
retry topic is authorized as its group; an annotated class-level ``Cluster`` resource applies when
no field named a resource.
"""

from __future__ import annotations

from collections.abc import Mapping

from broker.auth.models import Action, Resource, ResourcePattern, ResourceType, is_retry_topic
from codec.bodies.heartbeat import HeartbeatData
from codec.bodies.lock import LockBatchRequestBody
from codec.codes import RequestCode

Need = tuple[Resource, tuple[Action, ...]]

_T, _G, _C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
Actions = tuple[Action, ...]
PUB: Actions = (Action.PUB,)
SUB: Actions = (Action.SUB,)
GET: Actions = (Action.GET,)
UPDATE: Actions = (Action.UPDATE,)
SUB_GET: Actions = (Action.SUB, Action.GET)

#: code → (class-level resource type or None, actions, ((field, resource type, splitter), …))
ANNOTATED: dict[
    int, tuple[ResourceType | None, tuple[Action, ...], tuple[tuple[str, ResourceType, str], ...]]
] = {
    RequestCode.ACK_MESSAGE: (None, SUB, (("consumerGroup", _G, ""), ("topic", _T, ""))),
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME: (None, SUB, (("consumerGroup", _G, ""), ("topic", _T, ""))),
    RequestCode.CHECK_ROCKSDB_CQ_WRITE_PROGRESS: (None, GET, (("topic", _T, ""),)),
    RequestCode.CLONE_GROUP_OFFSET: (None, UPDATE, (("destGroup", _G, ""), ("topic", _T, ""))),
    RequestCode.AUTH_CREATE_USER: (_C, UPDATE, ()),
    RequestCode.AUTH_UPDATE_USER: (_C, UPDATE, ()),
    RequestCode.AUTH_DELETE_USER: (_C, UPDATE, ()),
    RequestCode.AUTH_GET_USER: (_C, GET, ()),
    RequestCode.AUTH_LIST_USER: (_C, GET, ()),
    RequestCode.AUTH_CREATE_ACL: (_C, UPDATE, ()),
    RequestCode.AUTH_UPDATE_ACL: (_C, UPDATE, ()),
    RequestCode.AUTH_DELETE_ACL: (_C, UPDATE, ()),
    RequestCode.AUTH_GET_ACL: (_C, GET, ()),
    RequestCode.AUTH_LIST_ACL: (_C, GET, ()),
    RequestCode.UPDATE_AND_CREATE_TOPIC_LIST: (None, (Action.CREATE,), ()),
    RequestCode.UPDATE_AND_CREATE_TOPIC: (None, (Action.CREATE,), (("topic", _T, ""),)),
    RequestCode.DELETE_SUBSCRIPTIONGROUP: (None, (Action.DELETE,), (("groupName", _G, ""),)),
    RequestCode.DELETE_TOPIC_IN_BROKER: (None, (Action.DELETE,), (("topic", _T, ""),)),
    RequestCode.EXPORT_ROCKSDB_CONFIG_TO_JSON: (_C, GET, ()),
    RequestCode.GET_ALL_PRODUCER_INFO: (_C, GET, ()),
    RequestCode.GET_ALL_TOPIC_CONFIG: (_T, (Action.LIST,), ()),
    RequestCode.GET_BROKER_CONSUME_STATS: (_C, GET, ()),
    RequestCode.GET_CONSUME_STATS: (
        None,
        GET,
        (("consumerGroup", _G, ""), ("topic", _T, ""), ("topicList", _T, ",")),
    ),
    RequestCode.GET_CONSUMER_CONNECTION_LIST: (None, GET, (("consumerGroup", _G, ""),)),
    RequestCode.GET_CONSUMER_RUNNING_INFO: (None, GET, (("consumerGroup", _G, ""),)),
    RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: (None, GET, (("topic", _T, ""), ("group", _G, ""))),
    RequestCode.GET_EARLIEST_MSG_STORETIME: (None, GET, (("topic", _T, ""),)),
    RequestCode.GET_MAX_OFFSET: (None, GET, (("topic", _T, ""),)),
    RequestCode.GET_MIN_OFFSET: (None, GET, (("topic", _T, ""),)),
    RequestCode.GET_PRODUCER_CONNECTION_LIST: (_C, GET, ()),
    RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: (None, GET, (("group", _G, ""),)),
    RequestCode.GET_TOPIC_CONFIG: (None, GET, (("topic", _T, ""),)),
    RequestCode.GET_TOPIC_STATS_INFO: (None, GET, (("topic", _T, ""),)),
    RequestCode.GET_TOPICS_BY_CLUSTER: (_T, (Action.LIST,), ()),
    RequestCode.NOTIFICATION: (None, SUB, (("consumerGroup", _G, ""), ("topic", _T, ""))),
    RequestCode.PEEK_MESSAGE: (None, SUB, (("topic", _T, ""), ("consumerGroup", _G, ""))),
    RequestCode.POLLING_INFO: (None, GET, (("consumerGroup", _G, ""), ("topic", _T, ""))),
    RequestCode.POP_MESSAGE: (None, SUB, (("consumerGroup", _G, ""), ("topic", _T, ""))),
    RequestCode.QUERY_CONSUME_QUEUE: (None, GET, (("topic", _T, ""), ("consumerGroup", _G, ""))),
    RequestCode.QUERY_CONSUME_TIME_SPAN: (None, GET, (("topic", _T, ""), ("group", _G, ""))),
    RequestCode.QUERY_CORRECTION_OFFSET: (
        None,
        GET,
        (("filterGroups", _G, ","), ("compareGroup", _G, ""), ("topic", _T, "")),
    ),
    RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER: (None, GET, (("group", _G, ""), ("topic", _T, ""))),
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: (None, GET, (("topic", _T, ""),)),
    RequestCode.QUERY_TOPICS_BY_CONSUMER: (None, GET, (("group", _G, ""),)),
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: (None, UPDATE, (("group", _G, ""), ("topic", _T, ""))),
    RequestCode.RESUME_CHECK_HALF_MESSAGE: (None, UPDATE, (("topic", _T, ""),)),
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: (None, GET, (("topic", _T, ""),)),
    RequestCode.UPDATE_AND_GET_GROUP_FORBIDDEN: (None, UPDATE, (("group", _G, ""), ("topic", _T, ""))),
    RequestCode.VIEW_BROKER_STATS_DATA: (_C, GET, ()),
    RequestCode.VIEW_MESSAGE_BY_ID: (None, GET, (("topic", _T, ""),)),
}


def _topic_or_group(topic: str | None, actions: tuple[Action, ...]) -> Need:
    return (Resource.group(topic), actions) if is_retry_topic(topic) else (Resource.topic(topic), actions)


def _send(topic: str | None, group: str | None) -> list[Need]:
    if is_retry_topic(topic):
        return [(Resource.group(group if group and group.strip() else topic), SUB)]
    return [(Resource.topic(topic), PUB)]


def _topic_and_group(topic: str | None, group: str | None, actions: tuple[Action, ...]) -> list[Need]:
    needs = [] if is_retry_topic(topic) else [(Resource.topic(topic), actions)]
    return [*needs, (Resource.group(group), actions)]


def _lock(body: bytes | None) -> list[Need]:
    request = LockBatchRequestBody.decode(body or b"{}")
    needs = [(Resource.group(request.consumer_group), SUB)]
    return needs + [(Resource.topic(mq.topic), SUB) for mq in request.mq_set if not is_retry_topic(mq.topic)]


def _heartbeat(body: bytes | None) -> list[Need]:
    needs: list[Need] = []
    for consumer in HeartbeatData.decode(body or b"{}").consumer_data_set:
        needs.append((Resource.group(consumer.group_name), SUB))
        needs += [
            (Resource.topic(s.topic), SUB)
            for s in consumer.subscription_data_set
            if not is_retry_topic(s.topic)
        ]
    return needs


def _annotated(code: int, fields: Mapping[str, str], cluster_name: str) -> list[Need]:
    spec = ANNOTATED.get(code)
    if spec is None:
        return []
    class_type, actions, resource_fields = spec
    needs: list[Need] = []
    for key, resource_type, splitter in resource_fields:
        value = fields.get(key)
        if value is None:
            continue
        values = [v for v in value.split(splitter) if v] if splitter else [value]
        for item in values:
            if resource_type is _T and is_retry_topic(item):
                needs.append((Resource.group(item), actions))
            else:
                needs.append((Resource(resource_type, item, ResourcePattern.LITERAL), actions))
    if not needs and class_type is _C:
        needs.append((Resource.cluster(cluster_name), actions))
    return needs


def required_permissions(
    code: int, fields: Mapping[str, str], body: bytes | None, cluster_name: str
) -> list[Need]:
    """What ``code`` with these ext fields and body needs; raises ``CodecError`` for a body the
    rule must read (heartbeat, lock) that cannot be decoded."""
    if not fields:
        return []
    get = fields.get
    if code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
        topic = get("topic")
        if is_retry_topic(topic):
            return [(Resource.group(topic), SUB_GET)]
        return [(Resource.topic(topic), (Action.PUB, Action.SUB, Action.GET))]
    if code == RequestCode.SEND_MESSAGE:
        return _send(get("topic"), get("group"))
    if code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        return _send(get("b"), get("a"))
    if code == RequestCode.RECALL_MESSAGE:
        return [(Resource.topic(get("topic")), PUB)]
    if code == RequestCode.END_TRANSACTION:
        topic = get("topic")
        return [(Resource.topic(topic), PUB)] if topic and topic.strip() else []
    if code == RequestCode.CONSUMER_SEND_MSG_BACK:
        return [(Resource.group(get("group")), SUB)]
    if code == RequestCode.PULL_MESSAGE:
        return _topic_and_group(get("topic"), get("consumerGroup"), SUB)
    if code == RequestCode.QUERY_MESSAGE:
        return [(Resource.topic(get("topic")), SUB_GET)]
    if code == RequestCode.HEART_BEAT:
        return _heartbeat(body)
    if code == RequestCode.UNREGISTER_CLIENT:
        group = get("consumerGroup")
        return [(Resource.group(group), SUB)] if group and group.strip() else []
    if code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
        return [(Resource.group(get("consumerGroup")), SUB_GET)]
    if code == RequestCode.QUERY_CONSUMER_OFFSET:
        return _topic_and_group(get("topic"), get("consumerGroup"), SUB_GET)
    if code == RequestCode.UPDATE_CONSUMER_OFFSET:
        return _topic_and_group(get("topic"), get("consumerGroup"), (Action.SUB, Action.UPDATE))
    if code in (RequestCode.LOCK_BATCH_MQ, RequestCode.UNLOCK_BATCH_MQ):
        return _lock(body)
    return _annotated(code, fields, cluster_name)
