"""Suspended POP requests (``PopLongPollingService``), woken by arrivals on the queues they read.

A POP that found nothing waits until a message arrives on one of the queues it reads (every
readable queue of the topic for ``queueId`` -1, and the group's POP retry topic) or until
``bornTime + pollTime``; the processor then runs it once more. Arrivals come from the broker's
arrival listener through :class:`broker.long_polling.PullHoldService` (a parked entry per queue,
filtered by tag codes as a held pull is), so no second listener is needed. Counts per
``topic@group@queueId`` give ``POLLING_FULL`` (``popPollingSize`` per key, ``maxPopPollingSize`` in
all) and POLLING_INFO's ``pollingNum``.
"""

from __future__ import annotations

import trio

from broker.controller import BrokerController
from broker.long_polling import HeldPull
from codec.extra_info import polling_key
from store.message_filter import MessageFilter

POLLING_SUSPENDED = 0
POLLING_FULL = 1
POLLING_TIMEOUT = 2
_MIN_REMAINING_MS = 50  # PopLongPollingService.polling: a request this close to expiry is not parked


class PopPolling:
    def __init__(self, broker: BrokerController, per_key: int, total: int) -> None:
        self.broker = broker
        self.per_key = per_key
        self.total_limit = total
        self.counts: dict[str, int] = {}
        self.total = 0
        self._waiters: dict[str, set[trio.Event]] = {}

    def wake(self, topic: str, group: str, queue_id: int) -> None:
        """Wake the requests waiting on a queue and on the whole topic (an orderly queue unblocked)."""
        for key in (polling_key(topic, group, queue_id), polling_key(topic, group, -1)):
            for event in self._waiters.get(key, ()):
                event.set()

    def polling_num(self, topic: str, group: str, queue_id: int) -> int:
        return self.counts.get(polling_key(topic, group, queue_id), 0)

    async def wait(
        self,
        topic: str,
        group: str,
        queue_id: int,
        queues: list[tuple[str, int]],
        message_filter: MessageFilter | None,
        deadline_ms: int,
    ) -> int:
        """Park until an arrival on ``queues`` or ``deadline_ms``; a POLLING_* outcome."""
        now = self.broker.now_ms()
        if deadline_ms - now <= _MIN_REMAINING_MS:
            return POLLING_TIMEOUT
        key = polling_key(topic, group, queue_id)
        if self.total >= self.total_limit or self.counts.get(key, 0) > self.per_key:
            return POLLING_FULL
        hold = self.broker.hold
        store = self.broker.store
        arrived = trio.Event()
        parked: list[tuple[str, int, HeldPull]] = []
        self.counts[key] = self.counts.get(key, 0) + 1
        self.total += 1
        waiters = self._waiters.setdefault(key, set())
        waiters.add(arrived)
        try:
            for q_topic, q_id in queues:
                offset = store.get_max_offset_in_queue(q_topic, q_id) - 1
                parked.append((q_topic, q_id, hold.hold(q_topic, q_id, offset, message_filter, arrived.set)))
            with trio.move_on_after((deadline_ms - now) / 1000):
                await arrived.wait()
        finally:
            for q_topic, q_id, held in parked:
                hold.release(q_topic, q_id, held)
            self.total -= 1
            waiters.discard(arrived)
            if not waiters:
                self._waiters.pop(key, None)
            left = self.counts[key] - 1
            if left:
                self.counts[key] = left
            else:
                del self.counts[key]
        return POLLING_SUSPENDED
