"""HEART_BEAT, UNREGISTER_CLIENT and CHECK_CLIENT_CONFIG (``ClientManageProcessor``)."""

from __future__ import annotations

import logging
from typing import Any

from broker.client_manager import ClientChannel
from broker.controller import BrokerController
from broker.filter import FilterCompileError, compile_expression, is_tag_type
from broker.topic_config_manager import retry_topic
from codec.bodies.heartbeat import CheckClientRequestBody, HeartbeatData
from codec.bodies.register import PERM_READ, PERM_WRITE
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.base import EmptyHeader
from codec.headers.client import UnregisterClientRequestHeader
from gateway.transport.dispatch import Dispatcher, RequestContext

logger = logging.getLogger(__name__)


class ClientManageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.HEART_BEAT, self.heart_beat, EmptyHeader)
        dispatcher.register(
            RequestCode.UNREGISTER_CLIENT, self.unregister_client, UnregisterClientRequestHeader
        )
        dispatcher.register(RequestCode.CHECK_CLIENT_CONFIG, self.check_client_config, EmptyHeader)

    def heart_beat(self, ctx: RequestContext, request: RemotingCommand, _header: Any) -> RemotingCommand:
        data = HeartbeatData.decode(request.body)
        broker = self.broker
        conn = ctx.connection
        conn.client_id = data.client_id
        channel = ClientChannel(conn, data.client_id, request.language, request.version, broker.now_ms())
        for consumer in data.consumer_data_set:
            group = broker.groups.find(consumer.group_name)
            if group is None:
                logger.warning("heartbeat from %s: unknown group %s ignored", conn, consumer.group_name)
                continue
            order = any(broker.topics.is_order_topic(s.topic) for s in consumer.subscription_data_set)
            broker.topics.create_if_absent(
                retry_topic(consumer.group_name), group.retry_queue_nums, PERM_READ | PERM_WRITE, order=order
            )
            changed = broker.clients.register_consumer(
                consumer, channel, keep_subscriptions=bool(data.without_sub)
            )
            if changed:
                logger.info("consumer group %s changed (client %s)", consumer.group_name, data.client_id)
                broker.notify_consumer_ids_changed(consumer.group_name)
        for producer in data.producer_data_set:
            broker.clients.register_producer(producer.group_name, channel)
        # Heartbeat v2 (fingerprints) is not implemented: saying so makes clients always send full data.
        return request.make_response(
            ResponseCode.SUCCESS, header={"IS_SUPPORT_HEART_BEAT_V2": "false", "IS_SUB_CHANGE": "true"}
        )

    def unregister_client(
        self, ctx: RequestContext, request: RemotingCommand, header: UnregisterClientRequestHeader
    ) -> RemotingCommand:
        clients = self.broker.clients
        if header.producer_group:
            clients.unregister_producer(header.producer_group, ctx.connection)
        if header.consumer_group and clients.unregister_consumer(header.consumer_group, ctx.connection):
            logger.info("consumer %s left group %s", header.client_id, header.consumer_group)
            self.broker.notify_consumer_ids_changed(header.consumer_group)
        return request.make_response(ResponseCode.SUCCESS, header={})

    def check_client_config(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        body = CheckClientRequestBody.decode(request.body) if request.body else CheckClientRequestBody()
        sub = body.subscription_data
        if sub is None or is_tag_type(sub.expression_type):
            return request.make_response(ResponseCode.SUCCESS)
        if not self.broker.config.enable_property_filter:
            raise RocketMQError(
                f"The broker does not support consumer to filter message by {sub.expression_type}",
                response_code=ResponseCode.SYSTEM_ERROR,
            )
        try:
            compile_expression(sub.expression_type, sub.sub_string)
        except FilterCompileError as err:
            logger.warning(
                "Client %s@%s filter message, but failed to compile expression! sub=%s, error=%s",
                body.client_id,
                body.group,
                sub.sub_string,
                err,
            )
            # SUBSCRIPTION_PARSE_FAILED with the parser's message as remark; Java answers a
            # message-less exception with a null remark (no "remark" key in the header).
            err.null_remark = not str(err)
            raise
        return request.make_response(ResponseCode.SUCCESS)
