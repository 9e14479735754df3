"""CONSUMER_SEND_MSG_BACK: the remoting door of the send-back service
(``SendMessageProcessor.consumerSendMsgBack``).

The header becomes a :class:`~broker.service.send_back.SendBackRequest` for
:class:`SendBackService` (see :mod:`broker.service.send_back`). What only the remoting protocol
has stays here: the request version that says whether a client's ``maxReconsumeTimes`` counts
(after 3.4.9).
"""

from __future__ import annotations

from broker.controller import BrokerController
from broker.processors.send import V3_4_9
from broker.service.send_back import SendBackRequest, SendBackService
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.client import ConsumerSendMsgBackRequestHeader
from gateway.transport.dispatch import Dispatcher, RequestContext


class SendMessageBackProcessor:
    def __init__(self, broker: BrokerController, service: SendBackService | None = None) -> None:
        self.broker = broker
        self.service = service if service is not None else SendBackService(broker)

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(
            RequestCode.CONSUMER_SEND_MSG_BACK, self.consumer_send_msg_back, ConsumerSendMsgBackRequestHeader
        )

    async def consumer_send_msg_back(
        self, ctx: RequestContext, request: RemotingCommand, header: ConsumerSendMsgBackRequestHeader
    ) -> RemotingCommand:
        await self.service.send_back(
            SendBackRequest(
                group=header.group,
                offset=header.offset,
                delay_level=header.delay_level,
                max_reconsume_times=header.max_reconsume_times if request.version > V3_4_9 else None,
                origin_msg_id=header.origin_msg_id,
                origin_topic=header.origin_topic,
            )
        )
        return request.make_response(ResponseCode.SUCCESS)
