"""What a consumer group consumed, as JSON, for a test to check: offsets and lag per queue, the
messages waiting for a retry, the dead letters.

* :func:`group_offsets`: each queue's broker offset (the next queue offset), the group's
  committed offset (-1: none yet), the lag between them and the store time of the last message
  consumed, as ``mqadmin consumerProgress`` shows them (``AdminBrokerProcessor.getConsumeStats``).
  A push consumer commits its offsets every ``persistConsumerOffsetInterval`` (5 s by default),
  so a test waits for the lag it expects (:meth:`gateway.testing.inprocess.InProcessGateway.group_offsets`
  with ``max_lag``) rather than reading once.
* :func:`retry_messages`: the messages sent back for a retry: in the group's retry topic
  (``%RETRY%group``, and the POP retry topics ``%RETRY%group_topic`` / ``%RETRY%group+topic`` of
  5.x consumers) and, still waiting for their delay, in the delay-level queues
  (``SCHEDULE_TOPIC_XXXX``) and the timer wheel, shown under the retry topic they are bound for
  with ``"delayed": true``.
* :func:`dlq_messages`: the group's dead-letter topic ``%DLQ%group``.

Reads only (through :mod:`gateway.control.messages`); run in the broker's thread.
"""

from __future__ import annotations

from typing import Any

from broker.controller import BrokerController
from broker.topic_config_manager import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    TIMER_TOPIC,
)
from codec.extra_info import build_pop_retry_topic
from gateway.control.messages import DEFAULT_LIMIT, stored_messages


class UnknownGroupError(LookupError):
    """The broker has never heard of the group (no config, no offsets, no consumer)."""


def knows_group(controller: BrokerController, group: str) -> bool:
    return (
        group in controller.groups.table
        or bool(controller.offsets.topics_of_group(group))
        or controller.clients.consumers.get(group) is not None
    )


def group_offsets(controller: BrokerController, group: str, topic: str | None = None) -> dict[str, Any]:
    """``{"group", "lag", "topics": [{"topic", "lag", "queues": [{"queueId", "brokerOffset",
    "consumerOffset", "lag", "lastTimestamp"}]}]}`` for ``topic`` or every topic the group has
    offsets on or subscribes to. Raises :class:`UnknownGroupError`."""
    if not knows_group(controller, group):
        raise UnknownGroupError(f"no consumer group {group!r} on this broker")
    if topic is not None:
        names = [topic]
    else:
        info = controller.clients.consumers.get(group)
        subscribed = list(info.subscriptions) if info is not None else []
        names = list(dict.fromkeys([*controller.offsets.topics_of_group(group), *subscribed]))
    topics = [_topic_offsets(controller, group, name) for name in sorted(names)]
    return {"group": group, "lag": sum(t["lag"] for t in topics), "topics": topics}


def _topic_offsets(controller: BrokerController, group: str, topic: str) -> dict[str, Any]:
    store = controller.store
    config = controller.topics.select(topic)
    count = config.read_queue_nums if config is not None else 0
    queues = []
    for queue_id in range(count):
        broker_offset = max(store.get_max_offset_in_queue(topic, queue_id), 0)
        committed = controller.offsets.query(group, topic, queue_id)
        consumed = max(committed, 0)
        last = 0
        if consumed > 0:
            last = max(store.get_message_store_timestamp(topic, queue_id, consumed - 1), 0)
        queues.append(
            {
                "queueId": queue_id,
                "brokerOffset": broker_offset,
                "consumerOffset": committed,
                "lag": max(broker_offset - consumed, 0),
                "lastTimestamp": last,
            }
        )
    return {"topic": topic, "lag": sum(q["lag"] for q in queues), "queues": queues}


def retry_topics(controller: BrokerController, group: str) -> list[str]:
    """``%RETRY%group`` and the POP retry topics of ``group`` this broker has."""
    names = [RETRY_GROUP_TOPIC_PREFIX + group]
    for topic in controller.topics.table:
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            continue
        names += [build_pop_retry_topic(topic, group), build_pop_retry_topic(topic, group, v2=True)]
    return [name for name in names if name in controller.topics.table or _has_queues(controller, name)]


def _has_queues(controller: BrokerController, topic: str) -> bool:
    return any(cq.topic == topic for cq in controller.store.queues)


def retry_messages(
    controller: BrokerController, group: str, limit: int = DEFAULT_LIMIT
) -> list[dict[str, Any]]:
    """The group's messages sent back for a retry, delayed ones first (module docstring)."""
    bound_for = {RETRY_GROUP_TOPIC_PREFIX + group, *retry_topics(controller, group)}
    delayed = []
    for holder in (SCHEDULE_TOPIC, TIMER_TOPIC):
        for message in stored_messages(controller.store, holder, limit):
            real = message["properties"].get("REAL_TOPIC")
            if real in bound_for:
                delayed.append({**message, "topic": real, "delayed": True})
    ready = [
        {**message, "delayed": False}
        for topic in sorted(bound_for)
        for message in stored_messages(controller.store, topic, limit)
    ]
    return (delayed + ready)[:limit]


def dlq_messages(
    controller: BrokerController, group: str, limit: int = DEFAULT_LIMIT
) -> list[dict[str, Any]]:
    """The messages of ``%DLQ%group`` in store order."""
    return stored_messages(controller.store, DLQ_GROUP_TOPIC_PREFIX + group, limit)
