"""GET_CONSUMER_LIST_BY_GROUP (``ConsumerManageProcessor``); offsets arrive with the store."""

from __future__ import annotations

from broker.controller import BrokerController
from codec.bodies.heartbeat import ConsumerListBody
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.client import GetConsumerListByGroupRequestHeader
from gateway.dispatch import Dispatcher, RequestContext


class ConsumerManageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(
            RequestCode.GET_CONSUMER_LIST_BY_GROUP,
            self.get_consumer_list,
            GetConsumerListByGroupRequestHeader,
        )

    def get_consumer_list(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetConsumerListByGroupRequestHeader
    ) -> RemotingCommand:
        info = self.broker.clients.consumers.get(header.consumer_group)
        ids = info.client_ids() if info else []
        if not ids:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}"
            )
        return request.make_response(ResponseCode.SUCCESS, header={}, body=ConsumerListBody(ids).encode())
