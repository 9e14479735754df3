"""Priority messages (RocketMQ 5.4+): a message's priority picks its queue, a POP reads high first.

Mirrors what the 5.5.0 broker does with them on remoting:

* ``SendMessageProcessor.sendMessage``: a single message whose type, as
  ``TopicMessageType.parseFromMessageProperty`` reads its properties, is PRIORITY (it carries
  :data:`PROPERTY_PRIORITY` and none of the transaction, delay or sharding-key properties that
  come first in that order) is stored in queue ``min(priority, writeQueueNums - 1)``, whatever
  queue the request named and whatever the topic's ``message.type``. A message of another type
  loses the property. A batch is left alone.
* ``PopMessageProcessor.processRequest``: a non-orderly POP of a topic whose ``message.type`` is
  PRIORITY, with a random percent below the group's ``priority.factor`` attribute
  (``SubscriptionGroupAttributes.PRIORITY_FACTOR_ATTRIBUTE``, 0..100, default 100), is in
  priority mode: it reads the retry topic first with ``popFromRetryProbabilityForPriority``
  (default 0) instead of ``popFromRetryProbability``, and ``popMsgFromTopic`` reads the queues
  from the highest id down (``priorityOrderAsc``, default true), each from its offset, until the
  batch is full. Outside priority mode the queues are read from a random one, as before.

``priorityOrderAsc=false`` (queue 0 first) is not offered: the queues of a priority topic are
read highest first.
"""

from __future__ import annotations

from collections.abc import Mapping

from codec.properties import DELAY

PROPERTY_PRIORITY = "_SYS_MSG_PRIORITY_"  # MessageConst.PROPERTY_PRIORITY
PRIORITY_TYPE = "PRIORITY"  # TopicMessageType.PRIORITY
PRIORITY_FACTOR = "priority.factor"  # SubscriptionGroupAttributes.PRIORITY_FACTOR_ATTRIBUTE
DEFAULT_PRIORITY_FACTOR = 100
# MessageConst names parseFromMessageProperty checks before PROPERTY_PRIORITY.
_TRANSACTION_PREPARED = "TRAN_MSG"
_TIMER_PROPERTIES = ("TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS")
_SHARDING_KEY = "__SHARDINGKEY"


def message_priority(props: Mapping[str, str]) -> int:
    """``Message.getPriority``: the property as an int (``NumberUtils.toInt``), -1 without one."""
    text = props.get(PROPERTY_PRIORITY)
    try:
        return int(text) if text is not None and text.strip() == text else -1
    except ValueError:
        return -1


def is_priority_message(props: Mapping[str, str]) -> bool:
    """``TopicMessageType.parseFromMessageProperty(props) == PRIORITY``."""
    if props.get(_TRANSACTION_PREPARED, "").lower() == "true":
        return False
    if DELAY in props or any(name in props for name in _TIMER_PROPERTIES) or _SHARDING_KEY in props:
        return False
    return PROPERTY_PRIORITY in props


def priority_queue(props: dict[str, str], queue_id: int, write_queue_nums: int) -> int:
    """The queue a single message is stored in: ``min(priority, writeQueueNums - 1)`` for a
    priority message, else ``queue_id``, the property removed from a message of another type."""
    priority = message_priority(props)
    if priority < 0:
        return queue_id
    if is_priority_message(props):
        return min(priority, write_queue_nums - 1)
    del props[PROPERTY_PRIORITY]
    return queue_id


def priority_factor(group_attributes: Mapping[str, str]) -> int:
    """``SubscriptionGroupConfig.getPriorityFactor``: the attribute, else (or unreadable) 100.

    The attribute is read under its plain name and under the ``+`` form an update request gives
    it, as this broker stores a group's attributes as they came."""
    text = group_attributes.get(PRIORITY_FACTOR, group_attributes.get("+" + PRIORITY_FACTOR))
    try:
        return int(text) if text is not None else DEFAULT_PRIORITY_FACTOR
    except ValueError:
        return DEFAULT_PRIORITY_FACTOR


def is_priority_topic(topic_attributes: Mapping[str, str]) -> bool:
    """``TopicConfig.getTopicMessageType() == PRIORITY``."""
    return topic_attributes.get("message.type") == PRIORITY_TYPE


def priority_queue_order(read_queue_nums: int) -> list[int]:
    """The queues a POP in priority mode reads, in order: the highest id first."""
    return list(range(read_queue_nums - 1, -1, -1))
