"""CONSUMER_SEND_MSG_BACK: a consumer hands back a message it could not consume.

Mirrors ``SendMessageProcessor.consumerSendMsgBack`` (5.x: ``AbstractSendMessageProcessor``): the
original record is looked up by its commit-log offset and stored again in the group's retry topic
``%RETRY%group`` with a growing delay level (``3 + reconsumeTimes`` unless the client names one),
or in the dead-letter topic ``%DLQ%group`` once ``maxReconsumeTimes`` is reached or the client asks
for it with a negative level. ``ORIGIN_MESSAGE_ID`` and ``RETRY_TOPIC`` keep the message's origin.
"""

from __future__ import annotations

import logging
import random

from broker.controller import BrokerController
from broker.processors.send import V3_4_9
from broker.schedule import apply_delay_level
from broker.topic_config_manager import DLQ_GROUP_TOPIC_PREFIX, dlq_topic, retry_topic
from codec.bodies.register import PERM_READ, PERM_WRITE
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.client import ConsumerSendMsgBackRequestHeader
from codec.message_id import encode_offset_msg_id
from codec.properties import (
    DELAY,
    MAX_RECONSUME_TIMES,
    ORIGIN_MESSAGE_ID,
    RECONSUME_TIME,
    RETRY_TOPIC,
    UNIQ_KEY,
    decode_properties,
    encode_properties,
)
from gateway.transport.dispatch import Dispatcher, RequestContext

logger = logging.getLogger(__name__)


class SendMessageBackProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(
            RequestCode.CONSUMER_SEND_MSG_BACK, self.consumer_send_msg_back, ConsumerSendMsgBackRequestHeader
        )

    async def consumer_send_msg_back(
        self, ctx: RequestContext, request: RemotingCommand, header: ConsumerSendMsgBackRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        group_config = broker.groups.find(header.group)
        if group_config is None:
            raise RocketMQError(
                f"subscription group not exist, {header.group}",
                response_code=ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            )
        if not broker.config.broker_permission & PERM_WRITE:
            raise RocketMQError(
                f"the broker[{broker.config.broker_ip1}] sending message is forbidden",
                response_code=ResponseCode.NO_PERMISSION,
            )
        if group_config.retry_queue_nums <= 0:
            return request.make_response(ResponseCode.SUCCESS)
        original = broker.look_message(header.offset)
        if original is None:
            raise RocketMQError(
                f"look message by offset failed, {header.offset}", response_code=ResponseCode.SYSTEM_ERROR
            )
        props = decode_properties(original.properties)
        props.setdefault(RETRY_TOPIC, original.topic)
        max_times = group_config.retry_max_times
        if request.version > V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        delay_level = header.delay_level
        if original.reconsume_times >= max_times or delay_level < 0:
            topic = dlq_topic(header.group)
            broker.topics.create_if_absent(topic, 1, PERM_READ | PERM_WRITE)
            queue_id = 0
            props.pop(DELAY, None)
        else:
            topic = retry_topic(header.group)
            config = broker.topics.create_if_absent(
                topic, group_config.retry_queue_nums, PERM_READ | PERM_WRITE
            )
            queue_id = random.randrange(max(config.write_queue_nums, 1))
            if delay_level == 0:
                delay_level = 3 + original.reconsume_times
            props[DELAY] = str(delay_level)
        if ORIGIN_MESSAGE_ID not in props:
            props[ORIGIN_MESSAGE_ID] = encode_offset_msg_id(
                original.store_host, original.store_port, original.physical_offset
            )
        props.pop(RECONSUME_TIME, None)
        props.pop(MAX_RECONSUME_TIMES, None)
        record = original.to_put_again(
            topic=topic,
            queue_id=queue_id,
            properties=encode_properties(props),
            store_host=broker.store_host,
            store_port=broker.store_port,
            reconsume_times=original.reconsume_times + 1,
        )
        apply_delay_level(record, props, broker.schedule.max_level)
        if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
            logger.info("message %s of group %s moved to %s", props.get(UNIQ_KEY), header.group, topic)
        result = await broker.put_messages([record], None)
        if result.ok:
            return request.make_response(ResponseCode.SUCCESS)
        raise RocketMQError(result.status.name, response_code=ResponseCode.SYSTEM_ERROR)
