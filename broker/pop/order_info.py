"""Orderly POP's per-queue state (``ConsumerOrderInfoManager`` and its ``OrderInfo``).

An orderly pop keeps its messages in their queue: no checkpoint, no retry topic. The queue's last
batch is remembered (pop time, invisible time, offsets as the first offset then distances from it,
acked bits, per-offset next visible times and delivery counts); the queue stays blocked for every
other attempt while an unacked message of the batch is still invisible, and the consumer offset
moves to the first unacked offset as acks come in (``commitAndNext``). Persisted as
``config/consumerOrderInfo.json`` in fastjson's form: ``{"table":{"topic@group":{"0":{"a":…,
"cm":…,"i":…,"l":…,"o":[…],"oc":{…},"ot":{…},"popTime":…}}}}``; entries idle for 24 h or of
deleted topics and groups are dropped when it is written (``autoClean``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from codec.extra_info import offset_order_count_entry, queue_order_count_entry

CLEAN_SPAN_FROM_LAST_MS = 24 * 3600 * 1000
CONSUMER_ORDER_INFO_JSON = "consumerOrderInfo.json"
ILLEGAL = -1  # commitAndNext: the offset is not in the batch
STALE = -2  # commitAndNext: the handle's pop time is not the batch's


class OrderInfo:
    __slots__ = (
        "attempt_id",
        "commit_bits",
        "consumed",
        "invisible_time",
        "last_consume",
        "next_visible",
        "offsets",
        "pop_time",
    )

    def __init__(
        self,
        attempt_id: str | None,
        pop_time: int,
        invisible_time: int | None,
        offsets: list[int],
        last_consume: int,
        commit_bits: int = 0,
    ) -> None:
        self.attempt_id = attempt_id
        self.pop_time = pop_time
        self.invisible_time = invisible_time
        self.offsets = offsets  # absolute queue offsets of the batch
        self.last_consume = last_consume
        self.commit_bits = commit_bits
        self.next_visible: dict[int, int] = {}
        self.consumed: dict[int, int] = {}

    def is_not_acked(self, index: int) -> bool:
        return not self.commit_bits >> index & 1

    def need_block(self, attempt_id: str | None, invisible_time: int, now_ms: int) -> bool:
        if not self.offsets or (self.attempt_id is not None and self.attempt_id == attempt_id):
            return False
        if self.invisible_time is None or self.invisible_time <= 0:
            self.invisible_time = invisible_time
        return any(
            self.is_not_acked(i)
            and now_ms < self.next_visible.get(offset, self.pop_time + (self.invisible_time or 0))
            for i, offset in enumerate(self.offsets)
        )

    def unblock_time(self) -> int:
        """When the last unacked message of the batch becomes visible (0: not blocked at all)."""
        times = [
            self.next_visible.get(offset, self.pop_time + (self.invisible_time or 0))
            for i, offset in enumerate(self.offsets)
            if self.is_not_acked(i)
        ]
        return max(times, default=0)

    def next_offset(self) -> int:
        for i, offset in enumerate(self.offsets):
            if self.is_not_acked(i):
                return offset
        return self.offsets[-1] + 1

    def merge_consumed(self, previous: OrderInfo) -> None:
        """``mergeOffsetConsumedCount``: offsets delivered again count one more delivery."""
        if previous.attempt_id is not None and previous.attempt_id == self.attempt_id:
            self.consumed = previous.consumed
            return
        before = set(previous.offsets)
        self.consumed = {o: previous.consumed.get(o, 0) + 1 for o in self.offsets if o in before}

    def to_obj(self) -> dict[str, Any]:
        first = self.offsets[0] if self.offsets else 0
        compact = [first] + [o - first for o in self.offsets[1:]] if self.offsets else []
        obj: dict[str, Any] = {
            "cm": self.commit_bits,
            "l": self.last_consume,
            "o": compact,
            "popTime": self.pop_time,
        }
        if self.attempt_id is not None:
            obj["a"] = self.attempt_id
        if self.invisible_time is not None:
            obj["i"] = self.invisible_time
        if self.consumed:
            obj["oc"] = {str(k): v for k, v in self.consumed.items()}
        if self.next_visible:
            obj["ot"] = {str(k): v for k, v in self.next_visible.items()}
        return dict(sorted(obj.items()))

    @classmethod
    def from_obj(cls, obj: dict[str, Any]) -> OrderInfo:
        compact = [int(x) for x in obj.get("o") or []]
        offsets = [compact[0]] + [compact[0] + d for d in compact[1:]] if compact else []
        invisible = obj.get("i")
        info = cls(
            obj.get("a"),
            int(obj.get("popTime", 0)),
            None if invisible is None else int(invisible),
            offsets,
            int(obj.get("l", 0)),
            int(obj.get("cm", 0)),
        )
        info.next_visible = {int(k): int(v) for k, v in (obj.get("ot") or {}).items()}
        info.consumed = {int(k): int(v) for k, v in (obj.get("oc") or {}).items()}
        return info


class ConsumerOrderInfoManager:
    def __init__(self, now_ms: Callable[[], int], load: Callable[[], object] | None = None) -> None:
        """``load()`` reads the persisted table into this manager (through :meth:`load_obj`) the
        first time the table is needed: the store is open by then."""
        self.now_ms = now_ms
        self._load = load
        self._table: dict[str, dict[int, OrderInfo]] = {}
        self.dirty = False

    @property
    def table(self) -> dict[str, dict[int, OrderInfo]]:
        if self._load is not None:
            load, self._load = self._load, None
            load()
        return self._table

    @staticmethod
    def key(topic: str, group: str) -> str:
        return f"{topic}@{group}"

    def get(self, topic: str, group: str, queue_id: int) -> OrderInfo | None:
        return self.table.get(self.key(topic, group), {}).get(queue_id)

    def update(
        self,
        attempt_id: str | None,
        topic: str,
        group: str,
        queue_id: int,
        pop_time: int,
        invisible_time: int,
        offsets: list[int],
    ) -> list[str]:
        """Remember a popped batch; the ``orderCountInfo`` entries of this queue (per offset delivered
        before, then the queue's minimum)."""
        queues = self.table.setdefault(self.key(topic, group), {})
        info = OrderInfo(attempt_id, pop_time, invisible_time, list(offsets), self.now_ms())
        previous = queues.get(queue_id)
        if previous is not None:
            info.merge_consumed(previous)
        queues[queue_id] = info
        self.dirty = True
        entries = [offset_order_count_entry(topic, queue_id, o, n) for o, n in info.consumed.items()]
        minimum = min(info.consumed.values(), default=0) if len(info.consumed) == len(info.offsets) else 0
        entries.append(queue_order_count_entry(topic, queue_id, minimum))
        return entries

    def check_block(
        self, attempt_id: str | None, topic: str, group: str, queue_id: int, invisible_time: int
    ) -> bool:
        info = self.get(topic, group, queue_id)
        return info is not None and info.need_block(attempt_id, invisible_time, self.now_ms())

    def unblock_time(self, topic: str, group: str, queue_id: int) -> int:
        info = self.get(topic, group, queue_id)
        return info.unblock_time() if info is not None else 0

    def clear_block(self, topic: str, group: str, queue_id: int) -> None:
        queues = self.table.get(self.key(topic, group))
        if queues is not None and queues.pop(queue_id, None) is not None:
            self.dirty = True

    def commit_and_next(self, topic: str, group: str, queue_id: int, offset: int, pop_time: int) -> int:
        """The consumer offset after acking ``offset``; ``ILLEGAL`` or ``STALE`` as Java answers."""
        info = self.get(topic, group, queue_id)
        if info is None:
            return offset + 1
        if not info.offsets:
            return ILLEGAL
        if pop_time != info.pop_time:
            return STALE
        try:
            index = info.offsets.index(offset)
        except ValueError:
            return ILLEGAL
        info.commit_bits |= 1 << index
        self.dirty = True
        return info.next_offset()

    def update_next_visible_time(
        self, topic: str, group: str, queue_id: int, offset: int, pop_time: int, next_visible: int
    ) -> None:
        info = self.get(topic, group, queue_id)
        if info is None or pop_time != info.pop_time:
            return
        info.next_visible[offset] = next_visible
        self.dirty = True

    def to_obj(self, exists: Callable[[str, str, int], bool]) -> dict[str, Any]:
        """The persisted form; ``exists(topic, group, queue_id)`` drops entries of what is gone."""
        now = self.now_ms()
        table: dict[str, dict[str, Any]] = {}
        for key, queues in list(self.table.items()):
            topic, _, group = key.partition("@")
            for queue_id, info in list(queues.items()):
                if not exists(topic, group, queue_id) or now - info.last_consume > CLEAN_SPAN_FROM_LAST_MS:
                    del queues[queue_id]
            if queues:
                table[key] = {str(q): info.to_obj() for q, info in queues.items()}
            else:
                del self.table[key]
        return {"table": table}

    def load_obj(self, obj: Any) -> None:
        """Raises ``ValueError``/``TypeError``/``AttributeError`` for a malformed document."""
        table = obj.get("table") or {}
        self._table = {
            str(key): {int(q): OrderInfo.from_obj(info) for q, info in queues.items()}
            for key, queues in table.items()
        }
