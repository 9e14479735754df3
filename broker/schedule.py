"""Delay levels (``ScheduleMessageService``).

Delayed records wait in ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1``; each consume-queue unit's
tags code is the delivery time. Every 100 ms the broker app calls :meth:`deliver_all_due`, which
walks each level's queue from its offset (``delayOffset.json``) and re-puts every record that is
due to its ``REAL_TOPIC`` / ``REAL_QID``. As in Java, the delivered record keeps the properties
string it was stored with (``DELAY``, ``REAL_TOPIC`` and ``REAL_QID`` included: Java clears them
from the property map only, after the string was built), and its tags code is computed again from
``TAGS``.

The service reads the store and puts through the callable it is given; it never waits on its own
(the app owns the timer loop).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from codec.errors import CodecError
from codec.message import MessageRecord, MessageSysFlag, decode_record
from codec.properties import DELAY, REAL_QID, REAL_TOPIC, decode_properties, encode_properties
from store.dispatch import SCHEDULE_TOPIC
from store.message_reader import MessageReader
from store.metadata import delay_offsets
from store.results import PutMessageResult

logger = logging.getLogger(__name__)

DELAY_OFFSET_JSON = "delayOffset.json"
POLL_INTERVAL_S = 0.1
FIRST_DELAY_S = 1.0
PERSIST_INTERVAL_S = 10.0
MAX_PER_ROUND = 256  # records moved per level per round, so one busy level cannot starve the loop

#: Appends records of one queue and waits until they are acknowledged (``MessageService.put``):
#: the records, and each record's properties already decoded (``None``: decode them).
PutMessages = Callable[
    [Sequence[MessageRecord], Sequence[dict[str, str]] | None], Awaitable[PutMessageResult]
]


class ScheduleMessageService:
    def __init__(self, store: MessageReader, put: PutMessages, delay_levels_ms: list[int]) -> None:
        self.store = store
        self.put = put
        self.delay_levels_ms = delay_levels_ms
        self.offsets: dict[int, int] = {}  # level -> next offset in its schedule queue
        self.delivered = 0
        self.dirty = False

    @property
    def max_level(self) -> int:
        return len(self.delay_levels_ms)

    def load_obj(self, doc: Any) -> None:
        self.offsets = delay_offsets(doc)

    def to_obj(self) -> dict[str, Any]:
        return {"offsetTable": {str(level): offset for level, offset in sorted(self.offsets.items())}}

    async def deliver_all_due(self, now_ms: int) -> int:
        """Move every due record of every level; returns how many were moved."""
        moved = 0
        for level in range(1, self.max_level + 1):
            moved += await self.deliver_due(level, now_ms)
        return moved

    async def deliver_due(self, level: int, now_ms: int) -> int:
        """Move every due record of ``level``; returns how many were moved."""
        offset = self.offsets.get(level, 0)
        moved = 0
        for unit in self.store.iter_queue_units(SCHEDULE_TOPIC, level - 1, offset):
            if moved >= MAX_PER_ROUND or unit.tags_code > now_ms:
                break
            record = self._real_message(unit.phy_offset)
            if record is not None:
                result = await self.put([record], None)
                if not result.ok:
                    logger.warning(
                        "delayed message at %d not delivered (%s); will retry",
                        unit.phy_offset,
                        result.status.name,
                    )
                    break
                self.delivered += 1
            offset = unit.queue_offset + 1
            moved += 1
        if moved:
            self.offsets[level] = offset
            self.dirty = True
        return moved

    def _real_message(self, phy: int) -> MessageRecord | None:
        found = load_routed(self.store, phy, "delayed")
        if found is None:
            return None
        original, _props, topic, queue_id = found
        return original.to_put_again(topic=topic, queue_id=queue_id, properties=original.properties)


def load_routed(
    store: MessageReader, phy: int, what: str
) -> tuple[MessageRecord, dict[str, str], str, int] | None:
    """The record a delay or timer topic holds at commit-log offset ``phy``, its properties, and the
    ``REAL_TOPIC`` / ``REAL_QID`` it goes back to; ``None`` (logged) when it is gone or unreadable."""
    data = store.look_message_by_offset(phy)
    if data is None:
        logger.warning("%s message at commit-log offset %d is gone; skipped", what, phy)
        return None
    try:
        original = decode_record(data)
        props = decode_properties(original.properties)
        return original, props, props[REAL_TOPIC], int(props[REAL_QID])
    except (CodecError, KeyError, ValueError) as err:
        logger.error("%s message at %d is unreadable (%s); skipped", what, phy, err)
        return None


def apply_delay_level(record: MessageRecord, props: dict[str, str], max_level: int) -> None:
    """Route a record with a positive ``DELAY`` level through ``SCHEDULE_TOPIC_XXXX``
    (``CommitLog``'s delay handling before a put): the level is capped at ``max_level``, the real
    topic and queue go into ``REAL_TOPIC`` / ``REAL_QID`` and the record's properties string is
    re-encoded from ``props``. Only normal and committed messages are delayed."""
    text = props.get(DELAY)
    if not text:
        return
    try:
        level = int(text)
    except ValueError:
        return
    kind = MessageSysFlag.transaction_type(record.sys_flag)
    if level <= 0 or kind not in (
        MessageSysFlag.TRANSACTION_NOT_TYPE,
        MessageSysFlag.TRANSACTION_COMMIT_TYPE,
    ):
        return
    level = min(level, max_level)
    props[DELAY] = str(level)
    props[REAL_TOPIC] = record.topic
    props[REAL_QID] = str(record.queue_id)
    record.properties = encode_properties(props)
    record.topic = SCHEDULE_TOPIC
    record.queue_id = level - 1
