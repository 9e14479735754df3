"""Held pulls (``PullRequestHoldService``).

A pull that found nothing and carries the SUSPEND flag parks here under its topic and queue
until a matching message arrives or its suspend time runs out; the pull processor then runs the
pull once more and answers. A message matches when the pull's store filter lets it through: its
consume-queue check on the tags code, then its commit-log check on the properties the store
dispatched with it (``PullRequestHoldService.notifyMessageArriving``), so a SQL92 pull is not woken
by messages its expression rejects; a pull without a filter matches every message.

Java sweeps parked requests every 5 s; here each parked request is woken through its own ``wake``
callback as soon as a matching message is dispatched, and the pull processor (the one that waits)
bounds the wait by the suspend time.

This module keeps only the bookkeeping and never waits itself: the store's arrival listener
(:meth:`PullHoldService.notify_message_arriving`) is called synchronously on every put.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from store.dispatch import DispatchRequest
from store.message_filter import MessageFilter


class HeldPull:
    __slots__ = ("message_filter", "offset", "wake", "woken")

    def __init__(self, offset: int, message_filter: MessageFilter | None, wake: Callable[[], None]) -> None:
        self.offset = offset
        self.message_filter = message_filter
        self.wake = wake
        self.woken = False

    def matches(self, max_offset: int, tags_code: int, properties: Mapping[str, str]) -> bool:
        """Whether a message that makes the queue ``max_offset`` long and that the pull's filter
        lets through has arrived past the pull's offset."""
        if max_offset <= self.offset:
            return False
        flt = self.message_filter
        return flt is None or (
            flt.is_matched_by_consume_queue(tags_code) and flt.is_matched_by_properties(properties)
        )

    def wake_once(self) -> None:
        if not self.woken:
            self.woken = True
            self.wake()


class PullHoldService:
    def __init__(self) -> None:
        self._held: dict[tuple[str, int], set[HeldPull]] = {}
        self.woken = 0

    def hold(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        message_filter: MessageFilter | None,
        wake: Callable[[], None],
    ) -> HeldPull:
        """Park a pull of ``topic``/``queue_id`` waiting past ``offset`` for a message
        ``message_filter`` lets through (``None``: any); ``wake`` is called once."""
        held = HeldPull(offset, message_filter, wake)
        self._held.setdefault((topic, queue_id), set()).add(held)
        return held

    def release(self, topic: str, queue_id: int, held: HeldPull) -> None:
        key = (topic, queue_id)
        parked = self._held.get(key)
        if parked is not None:
            parked.discard(held)
            if not parked:
                del self._held[key]

    def notify_message_arriving(self, req: DispatchRequest, properties: dict[str, str]) -> None:
        """The store's arrival listener (``NotifyMessageArrivingListener``)."""
        parked = self._held.get((req.topic, req.queue_id))
        if not parked:
            return
        max_offset = req.queue_offset + 1
        for held in parked:
            if not held.woken and held.matches(max_offset, req.tags_code, properties):
                held.wake_once()
                self.woken += 1

    def wake_all(self) -> None:
        """Answer every parked pull now (shutdown: clients get PULL_NOT_FOUND and pull elsewhere)."""
        for parked in self._held.values():
            for held in parked:
                held.wake_once()

    @property
    def held_count(self) -> int:
        return sum(len(v) for v in self._held.values())
