"""Handing back a message a consumer could not consume: a :class:`SendBackRequest` in
(``SendMessageProcessor.consumerSendMsgBack``; 5.x: ``AbstractSendMessageProcessor``).

The original record is looked up by its commit-log offset and stored again in the group's retry
topic ``%RETRY%group`` with a growing delay level (``3 + reconsumeTimes`` unless the client names
one), or in the dead-letter topic ``%DLQ%group`` once ``maxReconsumeTimes`` is reached or the
client asks for it with a negative level. ``ORIGIN_MESSAGE_ID`` and ``RETRY_TOPIC`` keep the
message's origin. A refusal raises :class:`RocketMQError` with Java's code and remark.

Both front doors adapt onto :class:`SendBackService`: CONSUMER_SEND_MSG_BACK
(:mod:`broker.processors.send_back`) and gRPC's ForwardMessageToDeadLetterQueue
(:mod:`broker.grpc.consumer`), which sends back with ``max_reconsume_times`` 0.
"""

from __future__ import annotations

import logging
import random

from broker.controller import BrokerController
from broker.schedule import apply_delay_level
from broker.topic_config_manager import DLQ_GROUP_TOPIC_PREFIX, dlq_topic, retry_topic
from codec.bodies.register import PERM_READ, PERM_WRITE
from codec.codes import ResponseCode
from codec.errors import RocketMQError
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

logger = logging.getLogger(__name__)


class SendBackRequest:
    """The message at commit-log ``offset`` handed back by consumer ``group``: ``delay_level`` 0
    for the next retry level, negative for the DLQ at once; ``max_reconsume_times`` the client's
    own limit, None for the group's; ``origin_msg_id`` and ``origin_topic`` as the client names
    them."""

    __slots__ = ("delay_level", "group", "max_reconsume_times", "offset", "origin_msg_id", "origin_topic")

    def __init__(
        self,
        *,
        group: str,
        offset: int,
        delay_level: int = 0,
        max_reconsume_times: int | None = None,
        origin_msg_id: str | None = None,
        origin_topic: str | None = None,
    ) -> None:
        self.group = group
        self.offset = offset
        self.delay_level = delay_level
        self.max_reconsume_times = max_reconsume_times
        self.origin_msg_id = origin_msg_id
        self.origin_topic = origin_topic


class SendBackService:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    async def send_back(self, request: SendBackRequest) -> None:
        """Store the message again in the retry or dead-letter topic; raises :class:`RocketMQError`."""
        broker = self.broker
        group_config = broker.groups.find(request.group)
        if group_config is None:
            raise RocketMQError(
                f"subscription group not exist, {request.group}",
                response_code=ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            )
        if not broker.config.broker_permission & PERM_WRITE:
            raise RocketMQError(
                f"the broker[{broker.config.broker_ip1}] sending message is forbidden",
                response_code=ResponseCode.NO_PERMISSION,
            )
        if group_config.retry_queue_nums <= 0:
            return
        original = broker.look_message(request.offset)
        if original is None:
            raise RocketMQError(
                f"look message by offset failed, {request.offset}", response_code=ResponseCode.SYSTEM_ERROR
            )
        props = decode_properties(original.properties)
        props.setdefault(RETRY_TOPIC, original.topic)
        max_times = group_config.retry_max_times
        if request.max_reconsume_times is not None:
            max_times = request.max_reconsume_times
        delay_level = request.delay_level
        if original.reconsume_times >= max_times or delay_level < 0:
            topic = dlq_topic(request.group)
            broker.topics.create_if_absent(topic, 1, PERM_READ | PERM_WRITE)
            queue_id = 0
            props.pop(DELAY, None)
        else:
            topic = retry_topic(request.group)
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
            logger.info("message %s of group %s moved to %s", props.get(UNIQ_KEY), request.group, topic)
        result = await broker.put_messages([record], None)
        if not result.ok:
            raise RocketMQError(result.status.name, response_code=ResponseCode.SYSTEM_ERROR)
