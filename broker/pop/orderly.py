"""The orderly halves of ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME (revive queue 999).

Mirrors ``AckMessageProcessor.ackOrderly`` and
``ChangeInvisibleTimeProcessor.processChangeInvisibleTimeForOrder``:
an ack below the committed offset is already done; otherwise the batch's bit is set and the consumer
offset moves to the first unacked offset (``commitAndNext``), waking the pops waiting on the queue
once it is no longer blocked; an offset outside the batch is ``MESSAGE_ILLEGAL``, a handle of an
older batch (another pop time) is ignored with ``SUCCESS``. A change of invisible time sets the
message's next visible time and answers the batch's own pop time.
"""

from __future__ import annotations

from collections.abc import Callable

from broker.controller import BrokerController
from broker.pop.order_info import ILLEGAL, ConsumerOrderInfoManager
from codec.codes import ResponseCode
from codec.errors import RocketMQError
from codec.extra_info import ExtraInfo, polling_key
from codec.headers.pop import ChangeInvisibleTimeResponseHeader

Wake = Callable[[str, str, int], None]


def ack_orderly(
    broker: BrokerController,
    orders: ConsumerOrderInfoManager,
    wake: Wake,
    topic: str,
    group: str,
    queue_id: int,
    offset: int,
    info: ExtraInfo,
) -> None:
    """Raises RocketMQError(MESSAGE_ILLEGAL) for an offset that is not in the queue's batch."""
    old = broker.offsets.query(group, topic, queue_id)
    if offset < old:
        return
    next_offset = orders.commit_and_next(topic, group, queue_id, offset, info.pop_time)
    if next_offset >= 0:
        broker.offsets.commit(group, topic, queue_id, next_offset)
        if not orders.check_block(None, topic, group, queue_id, info.invisible_time):
            wake(topic, group, queue_id)
    elif next_offset == ILLEGAL:
        raise RocketMQError(
            f"offset is illegal, key:{polling_key(topic, group, queue_id)}, old:{old}, commit:{offset}, "
            f"next:{next_offset}",
            response_code=ResponseCode.MESSAGE_ILLEGAL,
        )


def change_orderly(
    broker: BrokerController,
    orders: ConsumerOrderInfoManager,
    topic: str,
    group: str,
    queue_id: int,
    offset: int,
    info: ExtraInfo,
    invisible_time: int,
) -> ChangeInvisibleTimeResponseHeader:
    """The response header; all zero (Java's unset header) when the message was consumed already."""
    if broker.offsets.query(group, topic, queue_id) > offset:
        return ChangeInvisibleTimeResponseHeader(0, 0, 0)
    next_visible = broker.now_ms() + invisible_time
    orders.update_next_visible_time(topic, group, queue_id, offset, info.pop_time, next_visible)
    return ChangeInvisibleTimeResponseHeader(info.pop_time, next_visible - info.pop_time, info.revive_qid)
