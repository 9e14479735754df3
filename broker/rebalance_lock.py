"""Order locks (``RebalanceLockManager``, asked for with LOCK_BATCH_MQ / UNLOCK_BATCH_MQ).

A queue is locked by one client id of a group; the lock lasts ``lockMaxLiveTime`` (60 s) after
its last refresh, and a client asking for a queue it holds, or one whose lock expired, gets it.
"""

from __future__ import annotations

from collections.abc import Iterable

from codec.bodies.lock import MessageQueue

LOCK_MAX_LIVE_TIME_MS = 60_000  # rocketmq.broker.rebalance.lockMaxLiveTime


class LockEntry:
    __slots__ = ("client_id", "last_update_ms")

    def __init__(self, client_id: str, now_ms: int) -> None:
        self.client_id = client_id
        self.last_update_ms = now_ms

    def expired(self, now_ms: int, max_live_ms: int) -> bool:
        return now_ms - self.last_update_ms > max_live_ms


class RebalanceLockManager:
    def __init__(self, max_live_ms: int = LOCK_MAX_LIVE_TIME_MS) -> None:
        self.max_live_ms = max_live_ms
        self.table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def try_lock_batch(
        self, group: str, queues: Iterable[MessageQueue], client_id: str, now_ms: int
    ) -> list[MessageQueue]:
        """Lock what can be locked for ``client_id``; returns the granted queues."""
        locks = self.table.setdefault(group, {})
        granted = []
        for mq in queues:
            entry = locks.get(mq)
            if entry is None or entry.client_id == client_id or entry.expired(now_ms, self.max_live_ms):
                locks[mq] = LockEntry(client_id, now_ms)
                granted.append(mq)
        return granted

    def unlock_batch(self, group: str, queues: Iterable[MessageQueue], client_id: str) -> None:
        locks = self.table.get(group)
        if not locks:
            return
        for mq in queues:
            entry = locks.get(mq)
            if entry is not None and entry.client_id == client_id:
                del locks[mq]
        if not locks:
            del self.table[group]

    def holds_any(self, group: str, now_ms: int) -> bool:
        """Whether ``group`` holds an unexpired lock (it then counts as an orderly group)."""
        locks = self.table.get(group)
        if not locks:
            return False
        return any(not e.expired(now_ms, self.max_live_ms) for e in locks.values())

    def statistics(self) -> dict[str, int]:
        return {"locked_queues": sum(len(v) for v in self.table.values())}
