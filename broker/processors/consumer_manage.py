"""Consumer membership and offsets (``ConsumerManageProcessor`` and the offset part of
``AdminBrokerProcessor``)."""

from __future__ import annotations

from broker.controller import BrokerController
from codec.bodies.heartbeat import ConsumerListBody
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.client import (
    GetConsumerListByGroupRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from gateway.transport.dispatch import Dispatcher, RequestContext


class ConsumerManageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(
            RequestCode.GET_CONSUMER_LIST_BY_GROUP,
            self.get_consumer_list,
            GetConsumerListByGroupRequestHeader,
        )
        dispatcher.register(
            RequestCode.QUERY_CONSUMER_OFFSET, self.query_consumer_offset, QueryConsumerOffsetRequestHeader
        )
        dispatcher.register(
            RequestCode.UPDATE_CONSUMER_OFFSET, self.update_consumer_offset, UpdateConsumerOffsetRequestHeader
        )
        dispatcher.register(RequestCode.GET_MAX_OFFSET, self.get_max_offset, GetMaxOffsetRequestHeader)
        dispatcher.register(RequestCode.GET_MIN_OFFSET, self.get_min_offset, GetMinOffsetRequestHeader)
        dispatcher.register(
            RequestCode.GET_EARLIEST_MSG_STORETIME,
            self.get_earliest_msg_storetime,
            GetEarliestMsgStoretimeRequestHeader,
        )
        dispatcher.register(
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, self.search_offset_by_timestamp, SearchOffsetRequestHeader
        )

    def get_consumer_list(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetConsumerListByGroupRequestHeader
    ) -> RemotingCommand:
        info = self.broker.clients.consumers.get(header.consumer_group)
        ids = info.client_ids() if info else []
        if not ids:
            raise RocketMQError(
                f"no consumer for this group, {header.consumer_group}",
                response_code=ResponseCode.SYSTEM_ERROR,
            )
        return request.make_response(ResponseCode.SUCCESS, header={}, body=ConsumerListBody(ids).encode())

    def query_consumer_offset(
        self, _ctx: RequestContext, request: RemotingCommand, header: QueryConsumerOffsetRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        offset = broker.offsets.query(header.consumer_group, header.topic, header.queue_id)
        if offset < 0 and header.set_zero_if_not_found is not False:
            store = broker.store
            if store.get_min_offset_in_queue(
                header.topic, header.queue_id
            ) <= 0 and broker.first_message_in_memory(header.topic, header.queue_id):
                offset = 0
        if offset < 0:
            raise RocketMQError(
                "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
                response_code=ResponseCode.QUERY_NOT_FOUND,
            )
        return request.make_response(ResponseCode.SUCCESS, header=OffsetResponseHeader(offset))

    def update_consumer_offset(
        self, _ctx: RequestContext, request: RemotingCommand, header: UpdateConsumerOffsetRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        if broker.groups.find(header.consumer_group, create=False) is None:
            raise RocketMQError(
                f"subscription group not exist, {header.consumer_group}",
                response_code=ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            )
        if broker.topics.select(header.topic) is None:
            raise RocketMQError(
                f"topic not exist, {header.topic}", response_code=ResponseCode.TOPIC_NOT_EXIST
            )
        broker.offsets.commit(header.consumer_group, header.topic, header.queue_id, header.commit_offset)
        return request.make_response(ResponseCode.SUCCESS, header={})

    def get_max_offset(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetMaxOffsetRequestHeader
    ) -> RemotingCommand:
        offset = self.broker.store.get_max_offset_in_queue(header.topic, header.queue_id)
        return request.make_response(ResponseCode.SUCCESS, header=OffsetResponseHeader(offset))

    def get_min_offset(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetMinOffsetRequestHeader
    ) -> RemotingCommand:
        offset = self.broker.store.get_min_offset_in_queue(header.topic, header.queue_id)
        return request.make_response(ResponseCode.SUCCESS, header=OffsetResponseHeader(offset))

    def get_earliest_msg_storetime(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetEarliestMsgStoretimeRequestHeader
    ) -> RemotingCommand:
        timestamp = self.broker.store.get_earliest_message_time(header.topic, header.queue_id)
        return request.make_response(
            ResponseCode.SUCCESS, header=GetEarliestMsgStoretimeResponseHeader(timestamp)
        )

    def search_offset_by_timestamp(
        self, _ctx: RequestContext, request: RemotingCommand, header: SearchOffsetRequestHeader
    ) -> RemotingCommand:
        offset = self.broker.store.get_offset_in_queue_by_time(
            header.topic, header.queue_id, header.timestamp, header.is_upper
        )
        return request.make_response(ResponseCode.SUCCESS, header=OffsetResponseHeader(offset))
