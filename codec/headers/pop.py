"""Headers of the POP request codes (200050–200056) and of QUERY_ASSIGNMENT's neighbours.

Mirrors ``PopMessageRequestHeader``, ``PopMessageResponseHeader``, ``AckMessageRequestHeader``,
``ChangeInvisibleTimeRequestHeader``, ``ChangeInvisibleTimeResponseHeader``,
``NotificationRequestHeader``, ``NotificationResponseHeader``, ``PollingInfoRequestHeader`` and
``PollingInfoResponseHeader`` of ``org.apache.rocketmq.remoting.protocol.header``.

``bornTime`` of POP_MESSAGE and NOTIFICATION is declared optional here although Java marks it
``@CFNotNull``: ``PopMessageProcessor`` and ``NotificationProcessor`` put the broker's clock into
the ext fields when the key is absent or ``"0"`` *before* decoding, so a request without it is
never refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from codec.headers.base import CustomHeader, wire

CONSUME_INIT_MODE_MIN = 0  # org.apache.rocketmq.common.constant.ConsumeInitMode.MIN
CONSUME_INIT_MODE_MAX = 1  # ConsumeInitMode.MAX
TIMEOUT_TOO_MUCH_MS = 500  # PopMessageRequestHeader.isTimeoutTooMuch's allowance


@dataclass(slots=True)
class PopMessageRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    max_msg_nums: int = wire("maxMsgNums", int32=True)
    invisible_time: int = wire("invisibleTime")
    poll_time: int = wire("pollTime")
    born_time: int | None = wire("bornTime", required=False)
    init_mode: int = wire("initMode", int32=True)
    exp_type: str | None = wire("expType", required=False)
    exp: str | None = wire("exp", required=False)
    order: bool | None = wire("order", required=False)
    attempt_id: str | None = wire("attemptId", required=False)
    broker_name: str | None = wire("bname", required=False)

    def is_order(self) -> bool:
        return bool(self.order)

    def is_timeout_too_much(self, now_ms: int) -> bool:
        """``isTimeoutTooMuch``: the request spent its poll time before it reached us."""
        born = self.born_time or now_ms
        return now_ms - born - self.poll_time > TIMEOUT_TOO_MUCH_MS


@dataclass(slots=True)
class PopMessageResponseHeader(CustomHeader):
    pop_time: int = wire("popTime")
    invisible_time: int = wire("invisibleTime")
    revive_qid: int = wire("reviveQid", int32=True)
    rest_num: int = wire("restNum")
    start_offset_info: str | None = wire("startOffsetInfo", required=False)
    msg_offset_info: str | None = wire("msgOffsetInfo", required=False)
    order_count_info: str | None = wire("orderCountInfo", required=False)


@dataclass(slots=True)
class AckMessageRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    extra_info: str = wire("extraInfo")
    offset: int = wire("offset")
    broker_name: str | None = wire("bname", required=False)
    lite_topic: str | None = wire("liteTopic", required=False)


@dataclass(slots=True)
class ChangeInvisibleTimeRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    extra_info: str = wire("extraInfo")
    offset: int = wire("offset")
    invisible_time: int = wire("invisibleTime")
    broker_name: str | None = wire("bname", required=False)
    lite_topic: str | None = wire("liteTopic", required=False)


@dataclass(slots=True)
class ChangeInvisibleTimeResponseHeader(CustomHeader):
    pop_time: int = wire("popTime")
    invisible_time: int = wire("invisibleTime")
    revive_qid: int = wire("reviveQid", int32=True)


@dataclass(slots=True)
class NotificationRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    poll_time: int = wire("pollTime")
    born_time: int | None = wire("bornTime", required=False)  # absent or 0: now, as for POP
    order: bool | None = wire("order", required=False)
    attempt_id: str | None = wire("attemptId", required=False)
    broker_name: str | None = wire("bname", required=False)

    def is_order(self) -> bool:
        return bool(self.order)


@dataclass(slots=True)
class NotificationResponseHeader(CustomHeader):
    has_msg: bool = wire("hasMsg")
    polling_full: bool | None = wire("pollingFull", required=False)


@dataclass(slots=True)
class PollingInfoRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    broker_name: str | None = wire("bname", required=False)


@dataclass(slots=True)
class PollingInfoResponseHeader(CustomHeader):
    polling_num: int = wire("pollingNum", int32=True)
