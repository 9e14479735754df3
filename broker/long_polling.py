"""Held pulls (``PullRequestHoldService``), spec 6.5.

A pull that found nothing and carries the SUSPEND flag parks here under its topic and queue
until a matching message arrives or its suspend time runs out; the pull processor then runs the
pull once more and answers. Java sweeps parked requests every 5 s; here each parked request waits
on its own event with its own deadline, so it is answered as soon as either happens.
"""

from __future__ import annotations

from collections.abc import Collection

import trio


class HeldPull:
    __slots__ = ("event", "offset", "tags_codes")

    def __init__(self, offset: int, tags_codes: Collection[int] | None) -> None:
        self.offset = offset
        self.tags_codes = tags_codes  # None: every message matches
        self.event = trio.Event()

    def matches(self, max_offset: int, tags_code: int) -> bool:
        if max_offset <= self.offset:
            return False
        return self.tags_codes is None or tags_code in self.tags_codes


class PullHoldService:
    def __init__(self) -> None:
        self._held: dict[tuple[str, int], set[HeldPull]] = {}
        self.woken = 0

    def hold(self, topic: str, queue_id: int, offset: int, tags_codes: Collection[int] | None) -> HeldPull:
        held = HeldPull(offset, tags_codes)
        self._held.setdefault((topic, queue_id), set()).add(held)
        return held

    def release(self, topic: str, queue_id: int, held: HeldPull) -> None:
        key = (topic, queue_id)
        parked = self._held.get(key)
        if parked is not None:
            parked.discard(held)
            if not parked:
                del self._held[key]

    def notify_message_arriving(self, topic: str, queue_id: int, max_offset: int, tags_code: int) -> None:
        parked = self._held.get((topic, queue_id))
        if not parked:
            return
        for held in parked:
            if not held.event.is_set() and held.matches(max_offset, tags_code):
                held.event.set()
                self.woken += 1

    def wake_all(self) -> None:
        """Answer every parked pull now (shutdown: clients get PULL_NOT_FOUND and pull elsewhere)."""
        for parked in self._held.values():
            for held in parked:
                held.event.set()

    @property
    def held_count(self) -> int:
        return sum(len(v) for v in self._held.values())
