"""Headers of SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and their response.

Mirrors ``SendMessageRequestHeader``, ``SendMessageRequestHeaderV2`` (one-letter keys, chosen by
Java to shrink every send) and ``SendMessageResponseHeader``.
"""

from __future__ import annotations

from dataclasses import dataclass

from codec.headers.base import CustomHeader, wire


@dataclass(slots=True)
class SendMessageRequestHeader(CustomHeader):
    """The v1 send header with long key names (code 10, or what V2 converts into)."""

    producer_group: str = wire("producerGroup")
    topic: str = wire("topic")
    default_topic: str = wire("defaultTopic")
    default_topic_queue_nums: int = wire("defaultTopicQueueNums", int32=True)
    queue_id: int = wire("queueId", int32=True)
    sys_flag: int = wire("sysFlag", int32=True)
    born_timestamp: int = wire("bornTimestamp")
    flag: int = wire("flag", int32=True)
    properties: str | None = wire("properties", required=False)
    reconsume_times: int | None = wire("reconsumeTimes", required=False, int32=True)
    unit_mode: bool | None = wire("unitMode", required=False)
    batch: bool | None = wire("batch", required=False)
    max_reconsume_times: int | None = wire("maxReconsumeTimes", required=False, int32=True)
    broker_name: str | None = wire("bname", required=False)


@dataclass(slots=True)
class SendMessageRequestHeaderV2(CustomHeader):
    """The V2 send header: the same fields under the keys ``a`` … ``n``."""

    producer_group: str = wire("a")
    topic: str = wire("b")
    default_topic: str = wire("c")
    default_topic_queue_nums: int = wire("d", int32=True)
    queue_id: int = wire("e", int32=True)
    sys_flag: int = wire("f", int32=True)
    born_timestamp: int = wire("g")
    flag: int = wire("h", int32=True)
    properties: str | None = wire("i", required=False)
    reconsume_times: int | None = wire("j", required=False, int32=True)
    unit_mode: bool | None = wire("k", required=False)
    max_reconsume_times: int | None = wire("l", required=False, int32=True)
    batch: bool | None = wire("m", required=False)
    broker_name: str | None = wire("n", required=False)

    def to_v1(self) -> SendMessageRequestHeader:
        return SendMessageRequestHeader(
            producer_group=self.producer_group,
            topic=self.topic,
            default_topic=self.default_topic,
            default_topic_queue_nums=self.default_topic_queue_nums,
            queue_id=self.queue_id,
            sys_flag=self.sys_flag,
            born_timestamp=self.born_timestamp,
            flag=self.flag,
            properties=self.properties,
            reconsume_times=self.reconsume_times,
            unit_mode=self.unit_mode,
            batch=self.batch,
            max_reconsume_times=self.max_reconsume_times,
            broker_name=self.broker_name,
        )


@dataclass(slots=True)
class SendMessageResponseHeader(CustomHeader):
    """Send response. ``msg_id`` is the offset message id (comma-joined for a batch)."""

    msg_id: str = wire("msgId")
    queue_id: int = wire("queueId", int32=True)
    queue_offset: int = wire("queueOffset")
    transaction_id: str | None = wire("transactionId", required=False)
    batch_uniq_id: str | None = wire("batchUniqId", required=False)
    recall_handle: str | None = wire("recallHandle", required=False)
