"""RECALL_MESSAGE (370, 5.3.x): the remoting door of the recall service
(``RecallMessageProcessor``).

The header becomes a :class:`~broker.service.recall.RecallRequest`; :class:`RecallService` checks
the handle and writes the delete marker (see :mod:`broker.service.recall`). The answer's ``msgId``
is the recalled message's unique key; every answer, refusals included, carries ``MSG_REGION``.
"""

from __future__ import annotations

from broker.controller import BrokerController
from broker.service.recall import RecallRefused, RecallRequest, RecallService
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.recall import RecallMessageRequestHeader
from codec.properties import MSG_REGION
from gateway.transport.dispatch import Dispatcher, RequestContext


class RecallMessageProcessor:
    def __init__(self, broker: BrokerController, service: RecallService | None = None) -> None:
        self.broker = broker
        self.service = service if service is not None else RecallService(broker)

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.RECALL_MESSAGE, self.recall, RecallMessageRequestHeader)

    async def recall(
        self, ctx: RequestContext, request: RemotingCommand, header: RecallMessageRequestHeader
    ) -> RemotingCommand:
        recall = RecallRequest(
            header.topic, header.recall_handle, header.producer_group, ctx.connection.remote_addr
        )
        try:
            outcome = await self.service.recall(recall)
        except RecallRefused as err:
            raise RocketMQError(
                str(err), response_code=err.response_code, ext_fields=self._extras()
            ) from None
        fields = {"msgId": outcome.message_id, **self._extras()}
        return request.make_response(ResponseCode.SUCCESS, None, header=fields)

    def _extras(self) -> dict[str, str]:
        return {MSG_REGION: self.broker.config.region_id}  # on every answer, errors included
