"""NameServer request handlers (mirrors ``DefaultRequestProcessor`` and ``ClientRequestProcessor``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from codec import fastjson
from codec.bodies.register import DataVersion, RegisterBrokerBody
from codec.bodies.route import KVTable, TopicList, TopicRouteData
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.config_fields import apply_properties
from codec.errors import RocketMQError
from codec.hashing import body_crc32
from codec.headers import namesrv as h
from codec.headers.base import EmptyHeader
from codec.java_properties import format_properties, parse_properties
from gateway.transport.dispatch import Dispatcher, RequestContext
from namesrv.config import NamesrvConfig
from namesrv.kv_config import KVConfigManager
from namesrv.route_info import RouteInfo

logger = logging.getLogger(__name__)

ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"
CONFIG_BLACK_LIST = frozenset({"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"})
# TopicSysFlag bits: unit topic (0x1) and "has unit subscription" (0x2).
UNIT_LISTS = {
    RequestCode.GET_UNIT_TOPIC_LIST: lambda f: bool(f & 0x1),
    RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: lambda f: bool(f & 0x2),
    RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: lambda f: bool(f & 0x2) and not f & 0x1,
}
FAQ = "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."  # FAQUrl.APPLY_TOPIC_URL


class NamesrvProcessor:
    def __init__(
        self, config: NamesrvConfig, routes: RouteInfo, kv: KVConfigManager, now_ms: Callable[[], int]
    ) -> None:
        self.config = config
        self.routes = routes
        self.kv = kv
        self.now_ms = now_ms

    def register(self, d: Dispatcher) -> None:
        d.register(RequestCode.REGISTER_BROKER, self.register_broker, h.RegisterBrokerRequestHeader)
        d.register(RequestCode.UNREGISTER_BROKER, self.unregister_broker, h.UnregisterBrokerRequestHeader)
        d.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, self.route_by_topic, h.GetRouteInfoRequestHeader)
        d.register(RequestCode.GET_BROKER_CLUSTER_INFO, self.cluster_info, EmptyHeader)
        d.register(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, self.all_topics, EmptyHeader)
        d.register(
            RequestCode.GET_TOPICS_BY_CLUSTER, self.topics_by_cluster, h.GetTopicsByClusterRequestHeader
        )
        d.register(
            RequestCode.DELETE_TOPIC_IN_NAMESRV, self.delete_topic, h.DeleteTopicFromNamesrvRequestHeader
        )
        d.register(RequestCode.PUT_KV_CONFIG, self.put_kv, h.PutKVConfigRequestHeader)
        d.register(RequestCode.GET_KV_CONFIG, self.get_kv, h.KVConfigKeyRequestHeader)
        d.register(RequestCode.DELETE_KV_CONFIG, self.delete_kv, h.KVConfigKeyRequestHeader)
        d.register(RequestCode.GET_KVLIST_BY_NAMESPACE, self.kv_list, h.GetKVListByNamespaceRequestHeader)
        d.register(RequestCode.WIPE_WRITE_PERM_OF_BROKER, self.wipe_write_perm, h.BrokerNameRequestHeader)
        d.register(RequestCode.ADD_WRITE_PERM_OF_BROKER, self.add_write_perm, h.BrokerNameRequestHeader)
        d.register(RequestCode.QUERY_DATA_VERSION, self.query_data_version, h.QueryDataVersionRequestHeader)
        d.register(RequestCode.BROKER_HEARTBEAT, self.broker_heartbeat, h.BrokerHeartbeatRequestHeader)
        d.register(RequestCode.REGISTER_TOPIC_IN_NAMESRV, self.register_topic, h.RegisterTopicRequestHeader)
        d.register(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, self.system_topics, EmptyHeader)
        for code, flag in UNIT_LISTS.items():
            d.register(code, self._unit_topics(flag), EmptyHeader)
        d.register(
            RequestCode.GET_BROKER_MEMBER_GROUP, self.member_group, h.GetBrokerMemberGroupRequestHeader
        )
        d.register(RequestCode.UPDATE_NAMESRV_CONFIG, self.update_config, EmptyHeader)
        d.register(RequestCode.GET_NAMESRV_CONFIG, self.get_config, EmptyHeader)

    def register_broker(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.RegisterBrokerRequestHeader
    ) -> RemotingCommand:
        if hd.body_crc32 and hd.body_crc32 != body_crc32(req.body):
            raise RocketMQError("crc32 not match", response_code=ResponseCode.SYSTEM_ERROR)
        if hd.compressed:
            body = RegisterBrokerBody.decode_compressed(req.body, req.version)
        else:
            body = RegisterBrokerBody.decode(req.body) if req.body else RegisterBrokerBody()
        wrapper = body.topic_config_serialize_wrapper
        ha_addr, master_addr = self.routes.register_broker(
            hd.cluster_name,
            hd.broker_addr,
            hd.broker_name,
            hd.broker_id,
            hd.ha_server_addr,
            wrapper.topic_config_table,
            wrapper.data_version,
            self.now_ms(),
            ctx.connection.id,
            hd.heartbeat_timeout_millis or self.config.broker_channel_expired_time,
        )
        resp_body = b""
        if self.config.return_order_topic_config_to_broker:
            order = self.kv.namespace(ORDER_TOPIC_CONFIG)
            if order:
                resp_body = KVTable(order).encode()
        header = h.RegisterBrokerResponseHeader(ha_server_addr=ha_addr, master_addr=master_addr)
        return req.make_response(ResponseCode.SUCCESS, header=header, body=resp_body)

    def unregister_broker(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.UnregisterBrokerRequestHeader
    ) -> RemotingCommand:
        self.routes.unregister_broker(hd.cluster_name, hd.broker_addr, hd.broker_name, hd.broker_id)
        return req.make_response(ResponseCode.SUCCESS)

    def route_by_topic(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.GetRouteInfoRequestHeader
    ) -> RemotingCommand:
        route = self.routes.route(hd.topic)
        if route is None:
            raise RocketMQError(
                f"No topic route info in name server for the topic: {hd.topic}\n{FAQ}",
                response_code=ResponseCode.TOPIC_NOT_EXIST,
            )
        if self.config.order_message_enable:
            route.order_topic_conf = self.kv.get(ORDER_TOPIC_CONFIG, hd.topic)
        return req.make_response(ResponseCode.SUCCESS, body=route.encode())

    def cluster_info(self, ctx: RequestContext, req: RemotingCommand, _: Any) -> RemotingCommand:
        return req.make_response(ResponseCode.SUCCESS, body=self.routes.cluster_info().encode())

    def all_topics(self, ctx: RequestContext, req: RemotingCommand, _: Any) -> RemotingCommand:
        if not self.config.enable_all_topic_list:
            raise RocketMQError("disable", response_code=ResponseCode.SYSTEM_ERROR)
        return req.make_response(ResponseCode.SUCCESS, body=TopicList(self.routes.topics()).encode())

    def topics_by_cluster(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.GetTopicsByClusterRequestHeader
    ) -> RemotingCommand:
        if not self.config.enable_topic_list:
            raise RocketMQError("disable", response_code=ResponseCode.SYSTEM_ERROR)
        return req.make_response(
            ResponseCode.SUCCESS, body=TopicList(self.routes.topics(hd.cluster)).encode()
        )

    def delete_topic(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.DeleteTopicFromNamesrvRequestHeader
    ) -> RemotingCommand:
        self.routes.delete_topic(hd.topic, hd.cluster_name)
        return req.make_response(ResponseCode.SUCCESS)

    def put_kv(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.PutKVConfigRequestHeader
    ) -> RemotingCommand:
        self.kv.put(hd.namespace, hd.key, hd.value)
        return req.make_response(ResponseCode.SUCCESS)

    def get_kv(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.KVConfigKeyRequestHeader
    ) -> RemotingCommand:
        value = self.kv.get(hd.namespace, hd.key)
        if value is None:
            raise RocketMQError(
                f"No config item, Namespace: {hd.namespace} Key: {hd.key}",
                response_code=ResponseCode.QUERY_NOT_FOUND,
            )
        return req.make_response(ResponseCode.SUCCESS, header=h.GetKVConfigResponseHeader(value))

    def delete_kv(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.KVConfigKeyRequestHeader
    ) -> RemotingCommand:
        self.kv.delete(hd.namespace, hd.key)
        return req.make_response(ResponseCode.SUCCESS)

    def kv_list(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.GetKVListByNamespaceRequestHeader
    ) -> RemotingCommand:
        table = self.kv.namespace(hd.namespace)
        if not table:
            raise RocketMQError(
                f"No config item, Namespace: {hd.namespace}", response_code=ResponseCode.QUERY_NOT_FOUND
            )
        return req.make_response(ResponseCode.SUCCESS, body=KVTable(table).encode())

    def wipe_write_perm(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.BrokerNameRequestHeader
    ) -> RemotingCommand:
        count = self.routes.change_write_perm(hd.broker_name, wipe=True)
        return req.make_response(ResponseCode.SUCCESS, header=h.WipeWritePermOfBrokerResponseHeader(count))

    def add_write_perm(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.BrokerNameRequestHeader
    ) -> RemotingCommand:
        count = self.routes.change_write_perm(hd.broker_name, wipe=False)
        return req.make_response(ResponseCode.SUCCESS, header=h.AddWritePermOfBrokerResponseHeader(count))

    def query_data_version(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.QueryDataVersionRequestHeader
    ) -> RemotingCommand:
        theirs = DataVersion.decode(req.body) if req.body else DataVersion()
        live = self.routes.live.get(hd.broker_addr)
        changed = live is None or live.data_version != theirs
        self.routes.touch(hd.broker_addr, self.now_ms())
        body = live.data_version.encode() if live is not None else b""
        return req.make_response(
            ResponseCode.SUCCESS, header=h.QueryDataVersionResponseHeader(changed), body=body
        )

    def broker_heartbeat(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.BrokerHeartbeatRequestHeader
    ) -> RemotingCommand:
        self.routes.touch(hd.broker_addr, self.now_ms())
        return req.make_response(ResponseCode.SUCCESS)

    def register_topic(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.RegisterTopicRequestHeader
    ) -> RemotingCommand:
        route = TopicRouteData.decode(req.body) if req.body else TopicRouteData()
        self.routes.register_topic(hd.topic, route.queue_datas)
        return req.make_response(ResponseCode.SUCCESS)

    def system_topics(self, ctx: RequestContext, req: RemotingCommand, _: Any) -> RemotingCommand:
        names = set(self.routes.clusters)
        for brokers in self.routes.clusters.values():
            names |= brokers
        addr = next((a for b in self.routes.brokers.values() for a in b.broker_addrs.values()), None)
        return req.make_response(ResponseCode.SUCCESS, body=TopicList(sorted(names), addr).encode())

    def _unit_topics(
        self, wanted: Callable[[int], bool]
    ) -> Callable[[RequestContext, RemotingCommand, Any], RemotingCommand]:
        def handler(ctx: RequestContext, req: RemotingCommand, _: Any) -> RemotingCommand:
            topics = [
                t
                for t, queues in self.routes.topic_queues.items()
                if any(wanted(q.topic_sys_flag) for q in queues.values())
            ]
            return req.make_response(ResponseCode.SUCCESS, body=TopicList(topics).encode())

        return handler

    def member_group(
        self, ctx: RequestContext, req: RemotingCommand, hd: h.GetBrokerMemberGroupRequestHeader
    ) -> RemotingCommand:
        data = self.routes.brokers.get(hd.broker_name)
        group = {
            "cluster": hd.cluster_name,
            "brokerName": hd.broker_name,
            "brokerAddrs": {str(k): v for k, v in (data.broker_addrs if data else {}).items()},
        }
        return req.make_response(ResponseCode.SUCCESS, body=fastjson.dumps({"brokerMemberGroup": group}))

    def update_config(self, ctx: RequestContext, req: RemotingCommand, _: Any) -> RemotingCommand:
        props = parse_properties(req.body.decode("utf-8", "replace"))
        refused = CONFIG_BLACK_LIST & set(props)
        if refused:
            raise RocketMQError(
                f"Can not update config in black list: {sorted(refused)}",
                response_code=ResponseCode.NO_PERMISSION,
            )
        self.config.extra.update(apply_properties(self.config, props))
        return req.make_response(ResponseCode.SUCCESS)

    def get_config(self, ctx: RequestContext, req: RemotingCommand, _: Any) -> RemotingCommand:
        return req.make_response(
            ResponseCode.SUCCESS, body=format_properties(self.config.to_properties()).encode()
        )
