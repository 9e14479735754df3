"""QUERY_MESSAGE and VIEW_MESSAGE_BY_ID (``QueryMessageProcessor``)."""

from __future__ import annotations

from broker.controller import BrokerController
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.query import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from gateway.transport.dispatch import Dispatcher, RequestContext

UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"


class QueryMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.QUERY_MESSAGE, self.query_message, QueryMessageRequestHeader)
        dispatcher.register(RequestCode.VIEW_MESSAGE_BY_ID, self.view_message_by_id, ViewMessageRequestHeader)

    def query_message(
        self, _ctx: RequestContext, request: RemotingCommand, header: QueryMessageRequestHeader
    ) -> RemotingCommand:
        max_num = header.max_num
        if (request.ext_fields or {}).get(UNIQUE_KEY_QUERY) == "true":
            max_num = self.broker.config.default_query_max_num
        result = self.broker.store.query_message(
            header.topic, header.key, max_num, header.begin_timestamp, header.end_timestamp
        )
        response_header = QueryMessageResponseHeader(
            result.index_last_update_timestamp, result.index_last_update_phyoffset
        )
        if not result.buffers:
            raise RocketMQError(
                "can not find message, maybe time range not correct",
                response_code=ResponseCode.QUERY_NOT_FOUND,
                ext_fields=response_header.to_ext_fields(),
            )
        return request.make_response(ResponseCode.SUCCESS, header=response_header, body=result.body())

    def view_message_by_id(
        self, _ctx: RequestContext, request: RemotingCommand, header: ViewMessageRequestHeader
    ) -> RemotingCommand:
        data = self.broker.store.look_message_by_offset(header.offset)
        if data is None:
            raise RocketMQError(
                f"can not find message by the offset, {header.offset}",
                response_code=ResponseCode.SYSTEM_ERROR,
            )
        return request.make_response(ResponseCode.SUCCESS, body=data)
