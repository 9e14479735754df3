"""What a filtered read asks about each candidate message: the store's ``MessageFilter``.

Mirrors ``org.apache.rocketmq.store.MessageFilter``: ``MessageReader.get_message`` asks
:meth:`MessageFilter.is_matched_by_consume_queue` with the consume-queue unit's tags code before it
reads a record (a miss costs no commit-log read), then
:meth:`MessageFilter.is_matched_by_commit_log` with the stored record's bytes. A tag subscription
answers in the first step and always matches in the second; a SQL92 subscription matches every
unit (no bloom-filter data, as in Java without ``enableCalcFilterBitMap``) and evaluates the
record's properties in the second, decoding them from the record itself.

Java's ``isMatchedByCommitLog(ByteBuffer, Map)`` takes either the record or its properties already
decoded; the second form, :meth:`MessageFilter.is_matched_by_properties`, is what the store's
arrival listener allows (it hands out each dispatched message's properties): long polling wakes a
held pull only for a message both checks let through, as ``PullRequestHoldService`` does.

The broker's implementations live in ``broker/filter/``; the store knows only this protocol and
the tag-code filter below. A filter holds no state of one read, so a pull, a held pull and a POP
read can share it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol


class MessageFilter(Protocol):
    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        """Whether the unit's tags code (``None`` when the unit has none) may match."""
        ...

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        """Whether the whole stored record (as ``CommitLog`` keeps it) matches."""
        ...

    def is_matched_by_properties(self, properties: Mapping[str, str]) -> bool:
        """The commit-log check on a message's properties already decoded (the arrival
        listener's)."""
        ...


class TagsCodeFilter:
    """A tag subscription's hash codes (``SubscriptionData.codeSet``): the consume-queue check only."""

    __slots__ = ("codes",)

    def __init__(self, codes: Collection[int]) -> None:
        self.codes = frozenset(codes)

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        return tags_code is None or tags_code in self.codes

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        return True

    def is_matched_by_properties(self, properties: Mapping[str, str]) -> bool:
        return True

    def __repr__(self) -> str:
        return f"TagsCodeFilter({sorted(self.codes)})"
