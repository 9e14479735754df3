"""Delay levels (``ScheduleMessageService``), spec 6.4.

Delayed records wait in ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1``; each consume-queue unit's
tags code is the delivery time. Every 100 ms this service walks each level's queue from its
offset (``delayOffset.json``) and re-puts every record that is due to its ``REAL_TOPIC`` /
``REAL_QID``. As in Java, the delivered record keeps the properties string it was stored with
(``DELAY``, ``REAL_TOPIC`` and ``REAL_QID`` included: Java clears them from the property map only,
after the string was built), and its tags code is computed again from ``TAGS``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from codec.errors import CodecError
from codec.message import MessageRecord, decode_record
from codec.properties import REAL_QID, REAL_TOPIC, decode_properties
from store.dispatch import SCHEDULE_TOPIC
from store.metadata import delay_offsets

if TYPE_CHECKING:
    from broker.controller import BrokerController

logger = logging.getLogger(__name__)

DELAY_OFFSET_JSON = "delayOffset.json"
POLL_INTERVAL_S = 0.1
FIRST_DELAY_S = 1.0
PERSIST_INTERVAL_S = 10.0
MAX_PER_ROUND = 256  # records moved per level per round, so one busy level cannot starve the loop


class ScheduleMessageService:
    def __init__(self, broker: BrokerController, delay_levels_ms: list[int]) -> None:
        self.broker = broker
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

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await trio.sleep(FIRST_DELAY_S)
        while True:
            for level in range(1, self.max_level + 1):
                await self.deliver_due(level, self.broker.now_ms())
            await trio.sleep(POLL_INTERVAL_S)

    async def deliver_due(self, level: int, now_ms: int) -> int:
        """Move every due record of ``level``; returns how many were moved."""
        store = self.broker.store
        cq = store.queues.find(SCHEDULE_TOPIC, level - 1)
        if cq is None:
            return 0
        offset = max(self.offsets.get(level, 0), cq.min_offset)
        moved = 0
        while offset < cq.max_offset and moved < MAX_PER_ROUND:
            unit = cq.get(offset)
            if unit is None:
                offset = cq.roll_next_file(offset)
                continue
            phy, _size, deliver_ms = unit
            if deliver_ms > now_ms:
                break
            record = self._real_message(phy)
            if record is not None:
                result = await self.broker.messages.put([record])
                if not result.ok:
                    logger.warning(
                        "delayed message at %d not delivered (%s); will retry", phy, result.status.name
                    )
                    break
                self.delivered += 1
            offset += 1
            moved += 1
        if moved:
            self.offsets[level] = offset
            self.dirty = True
        return moved

    def _real_message(self, phy: int) -> MessageRecord | None:
        data = self.broker.store.look_message_by_offset(phy)
        if data is None:
            logger.warning("delayed message at commit-log offset %d is gone; skipped", phy)
            return None
        try:
            original = decode_record(data)
            props = decode_properties(original.properties)
            topic = props[REAL_TOPIC]
            queue_id = int(props[REAL_QID])
        except (CodecError, KeyError, ValueError) as err:
            logger.error("delayed message at %d is unreadable (%s); skipped", phy, err)
            return None
        return MessageRecord(
            topic=topic,
            queue_id=queue_id,
            body=original.body,
            properties=original.properties,
            flag=original.flag,
            sys_flag=original.sys_flag,
            born_timestamp=original.born_timestamp,
            born_host=original.born_host,
            born_port=original.born_port,
            store_host=original.store_host,
            store_port=original.store_port,
            reconsume_times=original.reconsume_times,
        )
