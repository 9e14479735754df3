"""Order-lock bodies of LOCK_BATCH_MQ and UNLOCK_BATCH_MQ, and the MessageQueue value."""

from __future__ import annotations

from dataclasses import dataclass

from codec.bodies.base import JsonBody, jfield


@dataclass(slots=True, frozen=True)
class MessageQueue(JsonBody):
    """``org.apache.rocketmq.common.message.MessageQueue``; hashable, usable as a dict key."""

    topic: str = ""
    broker_name: str = ""
    queue_id: int = 0


@dataclass(slots=True)
class LockBatchRequestBody(JsonBody):
    consumer_group: str = ""
    client_id: str = ""
    only_this_broker: bool = False
    mq_set: list[MessageQueue] = jfield(factory=list)


@dataclass(slots=True)
class LockBatchResponseBody(JsonBody):
    lock_ok_mq_set: list[MessageQueue] = jfield("lockOKMQSet", factory=list)


@dataclass(slots=True)
class UnlockBatchRequestBody(JsonBody):
    consumer_group: str = ""
    client_id: str = ""
    only_this_broker: bool = False
    mq_set: list[MessageQueue] = jfield(factory=list)
