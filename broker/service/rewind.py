"""Deliver again: move a consumer group back over messages it already got, so its next pull, pop
or receive returns them once more (a test tool, reached from the control endpoint).

For each queue of the topic the group has an offset on, the committed offset goes back ``count``
messages (not below the queue's first); the POP service forgets the offset after its newest
popped batch there, so the next POP (and gRPC ReceiveMessage) starts at the rewound offset, and
wakes the POPs waiting there (long polling) to read it; and
``notify`` tells the group's live clients the new offsets: the wiring passes the remoting
RESET_CONSUMER_CLIENT_OFFSET notice that ``mqadmin resetOffsetByTime`` makes the broker send
(:func:`broker.processors.client_ops.push_reset`), so a push consumer drops what it holds and
pulls from there. The messages come again with their
msgId; POP hands out new receipt handles, and the handles of the first delivery stay valid.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.controller import BrokerController
from broker.service.consume import ConsumeService
from codec.extra_info import polling_key

logger = logging.getLogger(__name__)


class RewindError(LookupError):
    """No such topic, or no offset of the group on it."""


#: Tells a group's live clients their offsets on a topic moved: (topic, group, queue id → offset).
Notify = Callable[[str, str, dict[int, int]], None]


def rewind(
    controller: BrokerController,
    consume: ConsumeService | None,
    group: str,
    topic: str,
    count: int,
    notify: Notify | None = None,
) -> dict[int, int]:
    """Rewind ``group`` on ``topic`` by ``count`` messages per queue; the new offset of each queue
    (only queues the group has an offset on). Raises :class:`RewindError` for an unknown topic or
    a group without offsets there, ValueError for a count below 1. Call in the servers' thread."""
    if count < 1:
        raise ValueError(f"count: {count} is below 1")
    config = controller.topics.select(topic)
    if config is None:
        raise RewindError(f"no topic {topic!r}")
    store = controller.store
    offsets: dict[int, int] = {}
    for queue_id in range(config.read_queue_nums):
        committed = controller.offsets.query(group, topic, queue_id)
        if committed < 0:
            continue
        offset = max(store.get_min_offset_in_queue(topic, queue_id), committed - count, 0)
        offsets[queue_id] = offset
        controller.offsets.commit(group, topic, queue_id, offset)
        if consume is not None:
            consume.state.clear_latest_offset(polling_key(topic, group, queue_id))
            consume.polling.wake(topic, group, queue_id)
    if not offsets:
        raise RewindError(f"group {group!r} has no offset on topic {topic!r}")
    if notify is not None:
        notify(topic, group, offsets)
    logger.info("group %s rewound on %s by %d: %s (injected redelivery)", group, topic, count, offsets)
    return offsets
