"""Admin requests the broker answers by acting on consumers: offset resets and the calls it
forwards to a client (``AdminBrokerProcessor.resetOffset`` / ``callConsumer``, ``Broker2Client``).

* INVOKE_BROKER_TO_RESET_OFFSET (``resetOffsetByTime``, ``skipAccumulatedMessage``): the
  server-side reset of 5.x (``useServerSideResetOffset``, on by default): the group's offsets of
  every queue (or one queue, or to an explicit offset) are set to the first message stored at or
  after the timestamp (−1: the max offset) and answered as a ``ResetOffsetBody``. It works with no
  consumer online. Java then hands the reset offset to the next pull of each queue; here the
  committed offsets change at once and every live consumer of the group is sent
  RESET_CONSUMER_CLIENT_OFFSET with the new offsets (``Broker2Client.resetOffset``), which makes
  its client drop its in-flight queues and pull from there.
* GET_CONSUMER_RUNNING_INFO (``consumerStatus``, ``consumerProgress -s``) and
  CONSUME_MESSAGE_DIRECTLY (``queryMsgByUniqueKey -d``): forwarded to the named client's
  connection and its answer relayed, with Java's errors when it is not online or times out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.controller import BrokerController
from codec import fastjson
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import CodecError, RocketMQError
from codec.headers.admin import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    ResetOffsetRequestHeader,
)
from codec.message_id import decode_offset_msg_id
from codec.versions import VERSION_NAMES, version_desc
from gateway.transport.dispatch import Dispatcher, RequestContext

logger = logging.getLogger(__name__)

CALL_CLIENT_TIMEOUT_S = 10.0  # Broker2Client.callClient: invokeSync(channel, request, 10000)
V3_1_8_SNAPSHOT = VERSION_NAMES.index("V3_1_8_SNAPSHOT")  # oldest client callConsumer serves


def reset_offset_body(topic: str, broker_name: str, offsets: dict[int, int]) -> bytes:
    """``ResetOffsetBody``: ``{"offsetTable": {MessageQueue: offset}}`` in fastjson's object-key form."""
    entries = [
        ({"brokerName": broker_name, "queueId": q, "topic": topic}, offset)
        for q, offset in sorted(offsets.items())
    ]
    return b'{"offsetTable":' + fastjson.dumps_object_keys(entries) + b"}"


def push_reset(broker: BrokerController, topic: str, group: str, timestamp: int, body: bytes) -> None:
    """RESET_CONSUMER_CLIENT_OFFSET to every live consumer of the group (oneway, as Java)."""
    info = broker.clients.consumers.get(group)
    if info is None:
        return
    header = ResetOffsetRequestHeader(group=group, topic=topic, timestamp=timestamp, is_force=True)
    for channel in info.channels.values():
        peer = channel.connection.peer
        if peer is None:
            continue
        notice = RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header, body=body)
        if peer.try_invoke_oneway(notice):
            logger.info(
                "[reset-offset] reset offset success. topic=%s, group=%s, clientId=%s",
                topic, group, channel.client_id,
            )  # fmt: skip
        else:
            logger.warning("[reset-offset] could not notify %s of group %s", channel.client_id, group)


def reset_notifier(broker: BrokerController) -> Callable[[str, str, dict[int, int]], None]:
    """Tells a group's live remoting consumers their new offsets on a topic (:func:`push_reset`
    with a ``ResetOffsetBody``): how :func:`broker.service.rewind.rewind` reaches them."""

    def notify(topic: str, group: str, offsets: dict[int, int]) -> None:
        push_reset(broker, topic, group, -1, reset_offset_body(topic, broker.config.broker_name, offsets))

    return notify


class ClientOpsProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, dispatcher: Dispatcher) -> None:
        reg = dispatcher.register
        reg(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.reset_offset, ResetOffsetRequestHeader)
        reg(
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            self.get_consumer_running_info,
            GetConsumerRunningInfoRequestHeader,
        )
        reg(
            RequestCode.CONSUME_MESSAGE_DIRECTLY,
            self.consume_message_directly,
            ConsumeMessageDirectlyResultRequestHeader,
        )

    # -- offset reset ----------------------------------------------------------------------------

    def _search_offset(self, topic: str, queue_id: int, timestamp: int) -> int:
        store = self.broker.store
        if timestamp < 0:
            return store.get_max_offset_in_queue(topic, queue_id)
        return store.get_offset_in_queue_by_time(topic, queue_id, timestamp)

    def reset_offset(
        self, ctx: RequestContext, request: RemotingCommand, header: ResetOffsetRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        topic, group = header.topic, header.group
        logger.info(
            "[reset-offset] reset offset started by %s. topic=%s, group=%s, timestamp=%d, isForce=%s",
            ctx.connection.remote_addr, topic, group, header.timestamp, header.is_force,
        )  # fmt: skip
        config = broker.topics.select(topic)
        if config is None:
            raise RocketMQError(f"Topic {topic} does not exist", response_code=ResponseCode.TOPIC_NOT_EXIST)
        if broker.groups.find(group, create=False) is None:
            raise RocketMQError(
                f"Group {group} does not exist", response_code=ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
            )
        store = broker.store
        offsets: dict[int, int] = {}
        if header.queue_id >= 0:
            offset = header.offset
            if offset is not None and offset != -1:
                low = store.get_min_offset_in_queue(topic, header.queue_id)
                high = store.get_max_offset_in_queue(topic, header.queue_id)
                if (low >= 0 and offset < low) or offset > high + 1:
                    raise RocketMQError(
                        f"Target offset {offset} not in consume queue range [{low}-{high}]",
                        response_code=ResponseCode.SYSTEM_ERROR,
                    )
            else:
                offset = self._search_offset(topic, header.queue_id, header.timestamp)
            offsets[header.queue_id] = offset
        else:
            for queue_id in range(config.read_queue_nums):
                offsets[queue_id] = self._search_offset(topic, queue_id, header.timestamp)
        if not offsets:
            raise RocketMQError("No queues to reset.", response_code=ResponseCode.SYSTEM_ERROR)
        for queue_id, offset in offsets.items():
            broker.offsets.commit(group, topic, queue_id, offset)
        body = reset_offset_body(topic, broker.config.broker_name, offsets)
        self._push_reset(topic, group, header.timestamp, body)
        logger.info("Reset offset, topic=%s, group=%s, queues=%s", topic, group, offsets)
        return request.make_response(ResponseCode.SUCCESS, body=body)

    def _push_reset(self, topic: str, group: str, timestamp: int, body: bytes) -> None:
        push_reset(self.broker, topic, group, timestamp, body)

    # -- calls forwarded to a consumer -----------------------------------------------------------

    async def get_consumer_running_info(
        self, _ctx: RequestContext, request: RemotingCommand, header: GetConsumerRunningInfoRequestHeader
    ) -> RemotingCommand:
        return await self._call_consumer(
            RequestCode.GET_CONSUMER_RUNNING_INFO, request, header.consumer_group, header.client_id
        )

    async def consume_message_directly(
        self,
        _ctx: RequestContext,
        request: RemotingCommand,
        header: ConsumeMessageDirectlyResultRequestHeader,
    ) -> RemotingCommand:
        """Adds ``brokerName``, the topic's and group's sys flags and the stored message (found by
        its offset message id) to the request, as ``consumeMessageDirectly`` does."""
        broker = self.broker
        fields = dict(request.ext_fields or {})
        fields["brokerName"] = broker.config.broker_name
        if header.topic:
            topic = broker.topics.select(header.topic)
            if topic is not None:
                fields["topicSysFlag"] = str(topic.topic_sys_flag)
        if header.consumer_group:
            group = broker.groups.find(header.consumer_group, create=False)
            if group is not None:
                fields["groupSysFlag"] = str(group.group_sys_flag)
        body = request.body
        if header.msg_id:
            try:
                _host, _port, offset = decode_offset_msg_id(header.msg_id)
                body = broker.store.look_message_by_offset(offset) or b""
            except (CodecError, ValueError):
                pass  # Java ignores an undecodable id (UnknownHostException) and sends no body
        forwarded = RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, fields, body=body)
        return await self._call_consumer_with(
            forwarded, request, header.consumer_group, header.client_id or ""
        )

    async def _call_consumer(
        self, code: int, request: RemotingCommand, group: str, client_id: str
    ) -> RemotingCommand:
        forwarded = RemotingCommand.request(code, dict(request.ext_fields or {}), body=request.body)
        return await self._call_consumer_with(forwarded, request, group, client_id)

    async def _call_consumer_with(
        self, forwarded: RemotingCommand, request: RemotingCommand, group: str, client_id: str
    ) -> RemotingCommand:
        info = self.broker.clients.consumers.get(group)
        channel = next(
            (c for c in info.channels.values() if c.client_id == client_id), None
        ) if info is not None else None  # fmt: skip
        if channel is None or channel.connection.peer is None:
            raise RocketMQError(
                f"The Consumer <{group}> <{client_id}> not online", response_code=ResponseCode.SYSTEM_ERROR
            )
        if channel.version < V3_1_8_SNAPSHOT:
            raise RocketMQError(
                f"The Consumer <{client_id}> Version <{version_desc(channel.version)}> too low to finish, "
                "please upgrade it to V3_1_8_SNAPSHOT",
                response_code=ResponseCode.SYSTEM_ERROR,
            )
        try:
            answer = await channel.connection.peer.invoke(forwarded, CALL_CLIENT_TIMEOUT_S)
        except Exception as err:  # the peer's timeout or closed-connection error
            if "Timeout" in type(err).__name__:
                raise RocketMQError(
                    f"consumer <{group}> <{client_id}> Timeout: {err}",
                    response_code=ResponseCode.CONSUME_MSG_TIMEOUT,
                ) from err
            raise RocketMQError(
                f"invoke consumer <{group}> <{client_id}> Exception: {err}",
                response_code=ResponseCode.SYSTEM_ERROR,
            ) from err
        return request.make_response(answer.code, answer.remark, header=answer.ext_fields, body=answer.body)
