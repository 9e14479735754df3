"""SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325) (``ReplyMessageProcessor``).

A consumer answers a request message (``MessageUtil.createReplyMessage``) with a reply whose
``REPLY_TO_CLIENT`` property names the requesting producer's client id. The broker pushes it to
that producer's connection as PUSH_REPLY_MESSAGE_TO_CLIENT (326) and waits for its answer (10 s,
``Broker2Client.callClient``); with ``storeReplyMessageEnable`` (Java's default) it also stores
the reply in its topic (``<cluster>_REPLY_TOPIC``). The send checks are those of a send
(``msgCheck``). The answer: SUCCESS with ``msgId`` ``0`` and ``queueOffset`` 0 when the push
worked (then the store's msgId and offset if stored), else SYSTEM_ERROR with Java's remark.
"""

from __future__ import annotations

import logging

from broker.controller import BrokerController
from broker.processors.send import SendMessageProcessor
from broker.service.send_values import SendRefused
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.hashing import java_hashmap_order
from codec.headers.send import SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader
from codec.message_id import encode_offset_msg_id
from codec.properties import encode_properties
from gateway.transport.dispatch import Dispatcher, Peer, RequestContext

logger = logging.getLogger(__name__)

REPLY_TO_CLIENT = "REPLY_TO_CLIENT"  # MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT
PUSH_REPLY_TIME = "PUSH_REPLY_TIME"  # MessageConst.PROPERTY_PUSH_REPLY_TIME
PUSH_TIMEOUT_S = 10.0  # Broker2Client.callClient: invokeSync(channel, request, 10000)
_PROPERTIES_MAP_CAPACITY = 128  # MessageDecoder.string2messageProperties: new HashMap<>(128)


class ReplyMessageProcessor:
    def __init__(self, broker: BrokerController, send: SendMessageProcessor | None = None) -> None:
        """``send``: the send processor whose checks and records a reply shares."""
        self.broker = broker
        self._send = send if send is not None else SendMessageProcessor(broker)
        self.pushed = 0

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.SEND_REPLY_MESSAGE, self.reply, SendMessageRequestHeader)
        dispatcher.register(RequestCode.SEND_REPLY_MESSAGE_V2, self.reply_v2, SendMessageRequestHeaderV2)

    async def reply_v2(
        self, ctx: RequestContext, request: RemotingCommand, header: SendMessageRequestHeaderV2
    ) -> RemotingCommand:
        return await self.reply(ctx, request, header.to_v1())

    async def reply(
        self, ctx: RequestContext, request: RemotingCommand, header: SendMessageRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        send = self._send.send_request(ctx, request, header)
        try:
            topic_config, queue_id = self._send.service.check(send)
        except SendRefused as err:
            raise self._send.refusal(err) from None
        props = send.properties
        record = self._send.service.base_record(send, topic_config, queue_id, bytes(request.body))
        record.sys_flag = header.sys_flag  # the reply is stored as sent (no MULTI_TAGS stamp)
        record.properties = header.properties or ""
        fields = self._send.extras()
        remark = await self._push(ctx, header, props, record.body)
        if remark is None:
            fields.update(
                SendMessageResponseHeader(msg_id="0", queue_id=queue_id, queue_offset=0).to_ext_fields()
            )
        if broker.config.store_reply_message_enable:
            result = await broker.put_messages([record], [props])
            if result.ok and result.append_result is not None:
                fields.update(
                    SendMessageResponseHeader(
                        msg_id=encode_offset_msg_id(
                            broker.store_host, broker.store_port, record.physical_offset
                        ),
                        queue_id=queue_id,
                        queue_offset=result.append_result.logics_offset,
                    ).to_ext_fields()
                )
            else:
                logger.warning("reply message not stored: %s", result.status.name)
        if remark is not None:  # the reply is stored even when the push failed, as in Java
            raise RocketMQError(remark, response_code=ResponseCode.SYSTEM_ERROR, ext_fields=fields)
        return request.make_response(ResponseCode.SUCCESS, header=fields)

    def _find_channel(self, client_id: str) -> Peer | None:
        """``ProducerManager.findChannel``: the connection of a producer by its client id."""
        for channels in self.broker.clients.producers.values():
            for channel in channels.values():
                if channel.client_id == client_id and channel.connection.peer is not None:
                    return channel.connection.peer
        return None

    async def _push(
        self, ctx: RequestContext, header: SendMessageRequestHeader, props: dict[str, str], body: bytes
    ) -> str | None:
        """``pushReplyMessage``: None when the producer took the reply, else the remark."""
        sender = props.get(REPLY_TO_CLIENT)
        if sender is None:
            logger.warning("%s is null, can not reply message", REPLY_TO_CLIENT)
            return f"reply message properties[{REPLY_TO_CLIENT}] is null"
        peer = self._find_channel(sender)
        if peer is None:
            remark = f"push reply message fail, channel of <{sender}> not found."
            logger.warning(remark)
            return remark
        pushed = dict(props)
        pushed[PUSH_REPLY_TIME] = str(self.broker.now_ms())
        ordered = {k: pushed[k] for k in java_hashmap_order(list(pushed), _PROPERTIES_MAP_CAPACITY)}
        fields = {
            "bornHost": ctx.connection.remote_addr,
            "storeHost": self.broker.config.broker_addr,
            "storeTimestamp": str(self.broker.now_ms()),
            "producerGroup": header.producer_group,
            "topic": header.topic,
            "defaultTopic": header.default_topic,
            "defaultTopicQueueNums": str(header.default_topic_queue_nums),
            "queueId": str(header.queue_id),
            "sysFlag": str(header.sys_flag),
            "bornTimestamp": str(header.born_timestamp),
            "flag": str(header.flag),
            "properties": encode_properties(ordered),
            "reconsumeTimes": str(header.reconsume_times or 0),
            "unitMode": "true" if header.unit_mode else "false",
        }
        request = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, fields, body=body)
        try:
            answer = await peer.invoke(request, PUSH_TIMEOUT_S)
        except RocketMQError as err:
            logger.warning("push reply message to <%s> fail: %s", sender, err)
            return f"push reply message to {sender}fail."
        if answer.code != ResponseCode.SUCCESS:
            logger.warning(
                "push reply message to <%s> return fail, response remark: %s", sender, answer.remark
            )
            return f"push reply message to {sender}fail."
        self.pushed += 1
        return None
