"""Receipt handles and the push consumers' handles the endpoint keeps invisible for them.

``ReceiptHandle`` mirrors the Proxy's ``ReceiptHandle.decode``. The rest mirrors the state of
``DefaultReceiptHandleManager``, ``ReceiptHandleGroup`` and ``MessageReceiptHandle``: a receive
with ``auto_renew`` (what push consumers send) takes the Proxy's default invisible time, and the
endpoint, not the client, extends it while the client processes the message. Every handle handed
out so is tracked here under (client id, group), by message id and by the (broker, queue, offset)
it points at; :mod:`broker.grpc.renewer` renews the ones about to become visible again; an ack,
a change of invisible duration or a forward to the dead letter queue takes the handle out and
uses the newest one, since the client only knows the first.

Plain state, no waiting: the renewer and the consumer activity do the calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from broker.grpc.common import StatusError
from codec.errors import CodecError
from codec.extra_info import parse_extra_info
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

#: ``RenewStrategyPolicy``: the invisible time of the n-th renewal (1 min, 3, 5, 10, 30, then 1 h).
RENEW_DELAYS_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
#: ``CustomizedRetryPolicy``'s default schedule, a group's default retry policy.
CUSTOMIZED_RETRY_MS = (
    [1_000, 5_000, 10_000, 30_000]
    + [m * 60_000 for m in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30)]
    + [3_600_000, 7_200_000]
)


class ReceiptHandle:
    """``ReceiptHandle.decode``: the POP ``extraInfo`` fields and the commit-log offset."""

    def __init__(self, text: str) -> None:
        parts = text.split(" ")
        if len(parts) < 8:
            raise StatusError(pb.INVALID_RECEIPT_HANDLE, f"Parse failed, dataList size {len(parts)}")
        try:
            self.info = parse_extra_info(" ".join(parts[:8]))
            self.commit_log_offset = int(parts[8]) if len(parts) > 8 else -1
        except (CodecError, ValueError) as err:
            raise StatusError(pb.INVALID_RECEIPT_HANDLE, f"receipt handle is malformed: {err}") from None
        self.text = text

    @property
    def queue_id(self) -> int:
        return self.info.queue_id or 0

    @property
    def offset(self) -> int:
        return self.info.queue_offset or 0

    @property
    def next_visible_ms(self) -> int:
        return self.info.pop_time + self.info.invisible_time

    def expired(self, now_ms: int) -> bool:
        return self.next_visible_ms <= now_ms

    @property
    def key(self) -> tuple[str, int, int]:
        """``ReceiptHandleGroup.HandleKey``: what two handles of one message have in common."""
        return (self.info.broker_name, self.queue_id, self.offset)


def renew_delay_ms(renew_times: int) -> int:
    """``RenewStrategyPolicy.nextDelayDuration``."""
    return RENEW_DELAYS_MS[min(max(renew_times, 0), len(RENEW_DELAYS_MS) - 1)]


def retry_delay_ms(policy: Mapping[str, Any] | None, reconsume_times: int) -> int:
    """The group's ``RetryPolicy.nextDelayDuration``: how long a message whose renewals ran out
    stays invisible before its next delivery (``CustomizedRetryPolicy`` skips the first two
    steps of its schedule; ``ExponentialRetryPolicy`` is ``min(max, initial × multiplier^n)``)."""
    times = max(reconsume_times, 0)
    policy = policy or {}
    if policy.get("type") == "EXPONENTIAL":
        exp = policy.get("exponentialRetryPolicy") or {}
        initial, most = int(exp.get("initial", 5_000)), int(exp.get("max", 7_200_000))
        return int(min(most, initial * float(exp.get("multiplier", 2)) ** min(times, 32)))
    schedule = (policy.get("customizedRetryPolicy") or {}).get("next") or CUSTOMIZED_RETRY_MS
    return int(schedule[min(times + 2, len(schedule) - 1)])


@dataclass(slots=True, eq=False)
class TrackedHandle:
    """``MessageReceiptHandle``: one message handed to a push consumer."""

    group: str
    topic: str
    message_id: str
    original: str  # the handle the client was given, which it acks with
    reconsume_times: int
    consume_ms: int  # when it was handed out; renewals stop ``renewMaxTimeMillis`` after it
    current: str = ""  # the newest handle, after the renewals
    renew_times: int = 0
    retry_times: int = 0  # renewals that failed in a row and may be tried again
    renewing: bool = False  # a renewal is in flight (the Proxy's HandleData lock)

    def __post_init__(self) -> None:
        self.current = self.current or self.original

    @property
    def next_visible_ms(self) -> int:
        return ReceiptHandle(self.current).next_visible_ms


ClientKey = tuple[str, str]  # (client id, consumer group): ``ReceiptHandleGroupKey``


@dataclass(slots=True)
class HandleTable:
    """``DefaultReceiptHandleManager.receiptHandleGroupMap``."""

    groups: dict[ClientKey, dict[str, dict[tuple[str, int, int], TrackedHandle]]] = field(
        default_factory=dict
    )

    def add(self, client_id: str, handle: TrackedHandle) -> None:
        """``addReceiptHandle``: a second delivery of the same message replaces the first."""
        by_id = self.groups.setdefault((client_id, handle.group), {})
        by_id.setdefault(handle.message_id, {})[ReceiptHandle(handle.original).key] = handle

    def remove(self, client_id: str, group: str, message_id: str, handle_text: str) -> TrackedHandle | None:
        """``removeReceiptHandle``: the tracked handle of the message ``handle_text`` points at,
        no longer renewed; None when it is not tracked (or ``handle_text`` is malformed)."""
        by_id = self.groups.get((client_id, group))
        handles = by_id.get(message_id) if by_id is not None else None
        if handles is None or by_id is None:
            return None
        try:
            key = ReceiptHandle(handle_text).key
        except StatusError:
            return None
        tracked = handles.pop(key, None)
        if not handles:
            del by_id[message_id]
        if not by_id:
            del self.groups[(client_id, group)]
        return tracked

    def discard(self, client_id: str, handle: TrackedHandle) -> None:
        """Stop renewing ``handle`` (its renewals failed or ran out); no-op if already removed."""
        by_id = self.groups.get((client_id, handle.group))
        handles = by_id.get(handle.message_id) if by_id is not None else None
        if by_id is None or handles is None:
            return
        key = ReceiptHandle(handle.original).key
        if handles.get(key) is handle:
            self.remove(client_id, handle.group, handle.message_id, handle.original)

    def clients(self) -> list[ClientKey]:
        return list(self.groups)

    def clear(self, key: ClientKey) -> list[TrackedHandle]:
        """``clearGroup``: every handle of a client that went away."""
        by_id = self.groups.pop(key, {})
        return [handle for handles in by_id.values() for handle in handles.values()]

    def due(self, now_ms: int, ahead_ms: int) -> list[tuple[str, TrackedHandle]]:
        """``scheduleRenewTask``'s scan: (client id, handle) of each handle visible again within
        ``ahead_ms`` and not being renewed already."""
        return [
            (client_id, handle)
            for (client_id, _group), by_id in self.groups.items()
            for handles in by_id.values()
            for handle in handles.values()
            if not handle.renewing and handle.next_visible_ms - now_ms <= ahead_ms
        ]

    def __len__(self) -> int:
        return sum(len(handles) for by_id in self.groups.values() for handles in by_id.values())
