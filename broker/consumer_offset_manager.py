"""Committed consumer offsets (consumerOffset.json): ``topic@group`` → queue id → next offset.

Mirrors ``org.apache.rocketmq.broker.offset.ConsumerOffsetManager``. Reads both Java forms (bare
integer queue keys as 5.x and 4.9.x brokers write them, and quoted keys); writes quoted keys.
"""

from __future__ import annotations

import time
from typing import Any

from codec.bodies.register import DataVersion

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetManager:
    def __init__(self) -> None:
        self.table: dict[str, dict[int, int]] = {}
        self.data_version = DataVersion(timestamp=int(time.time() * 1000))
        self.dirty = False

    @staticmethod
    def key(topic: str, group: str) -> str:
        return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed one for this queue."""
        return self.table.get(self.key(topic, group), {}).get(queue_id, -1)

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.table.setdefault(self.key(topic, group), {})[queue_id] = offset
        self.dirty = True

    def offsets(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(self.key(topic, group), {}))

    def topics_of_group(self, group: str) -> list[str]:
        suffix = TOPIC_GROUP_SEPARATOR + group
        return [k[: -len(suffix)] for k in self.table if k.endswith(suffix)]

    def groups_of_topic(self, topic: str) -> list[str]:
        prefix = topic + TOPIC_GROUP_SEPARATOR
        return [k[len(prefix) :] for k in self.table if k.startswith(prefix)]

    def remove_topic(self, topic: str) -> None:
        prefix = topic + TOPIC_GROUP_SEPARATOR
        for key in [k for k in self.table if k.startswith(prefix)]:
            del self.table[key]
        self.dirty = True

    def remove_group(self, group: str) -> None:
        suffix = TOPIC_GROUP_SEPARATOR + group
        for key in [k for k in self.table if k.endswith(suffix)]:
            del self.table[key]
        self.dirty = True

    def to_obj(self) -> dict[str, Any]:
        groups: dict[str, list[str]] = {}
        for key in self.table:
            topic, _, group = key.rpartition(TOPIC_GROUP_SEPARATOR)
            groups.setdefault(group, []).append(topic)
        return {
            "dataVersion": self.data_version.to_obj(),
            "groupTopicMap": groups,
            "offsetTable": {k: {str(q): o for q, o in v.items()} for k, v in self.table.items()},
        }

    def load_obj(self, obj: Any) -> None:
        if not isinstance(obj, dict):
            return
        table = obj.get("offsetTable") or {}
        self.table = {
            str(k): {int(q): int(o) for q, o in v.items()} for k, v in table.items() if isinstance(v, dict)
        }
        if isinstance(obj.get("dataVersion"), dict):
            self.data_version = DataVersion.from_obj(obj["dataVersion"])
