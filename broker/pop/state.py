"""POP bookkeeping without Trio: queue locks, buffered offsets, in-flight counts, revive queue choice.

Mirrors the state half of ``PopMessageProcessor`` (``QueueLockManager``, the revive-queue counter),
``PopBufferMergeService`` with ``enablePopBufferMerge=false`` (its only observable effect: the next
pop of a queue starts after the last popped batch, ``getLatestOffset``) and
``PopInflightMessageCounter``.

Locks are keyed ``topic@group@queueId`` (``KeyBuilder.buildPollingKey``). The broker is one Trio
thread, so a lock is only contended across an ``await`` (a pop waiting for its checkpoint's put):
``try_lock`` never blocks, a pop skips a locked queue as Java's does.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from codec.extra_info import POP_ORDER_REVIVE_QUEUE


class PopState:
    def __init__(self, revive_queue_num: int, rand: Callable[[int], int] | None = None) -> None:
        self.revive_queue_num = revive_queue_num
        self._locked: set[str] = set()
        self._latest: dict[str, int] = {}  # lock key -> next offset after the newest popped batch
        self._in_flight: dict[tuple[str, str, int], int] = {}
        self._counter = 0
        self._rand = rand or random.randrange

    # -- QueueLockManager ------------------------------------------------------------------------

    def try_lock(self, key: str) -> bool:
        if key in self._locked:
            return False
        self._locked.add(key)
        return True

    def unlock(self, key: str) -> None:
        self._locked.discard(key)

    # -- PopBufferMergeService (justOffset) -------------------------------------------------------

    def latest_offset(self, key: str) -> int:
        """The offset after the newest popped batch of a queue, or -1."""
        return self._latest.get(key, -1)

    def set_latest_offset(self, key: str, offset: int) -> None:
        self._latest[key] = offset

    def clear_latest_offset(self, key: str) -> None:
        """A reset of the queue's consumer offset makes the buffered one meaningless."""
        self._latest.pop(key, None)

    # -- PopInflightMessageCounter -----------------------------------------------------------------

    def in_flight(self, topic: str, group: str, queue_id: int) -> int:
        return self._in_flight.get((topic, group, queue_id), 0)

    def add_in_flight(self, topic: str, group: str, queue_id: int, delta: int) -> None:
        key = (topic, group, queue_id)
        value = max(self._in_flight.get(key, 0) + delta, 0)
        if value:
            self._in_flight[key] = value
        else:
            self._in_flight.pop(key, None)

    # -- request choices ---------------------------------------------------------------------------

    def next_revive_qid(self, order: bool) -> int:
        """Orderly pops use 999; the others take the revive queues round-robin."""
        if order:
            return POP_ORDER_REVIVE_QUEUE
        qid = abs(self._counter % self.revive_queue_num)
        self._counter += 1
        return qid

    def random_percent(self) -> int:
        """``randomQ``: 0..99, chooses whether the retry topic is read first and the first queue."""
        return self._rand(100)

    def statistics(self) -> dict[str, int]:
        return {
            "locked_queues": len(self._locked),
            "buffered_offsets": len(self._latest),
            "in_flight": sum(self._in_flight.values()),
        }
