"""Timer message routing at send time and delivery when due (see the package docstring).

Routing (``HookUtils.checkIfTimerMessage`` / ``transformTimerMessage``), for a non-transactional
or committed message outside the timer topic that has no ``TIMER_OUT_MS`` yet:

* a positive ``DELAY`` level wins: the timer properties are dropped and the level applies;
* the due time is ``now + TIMER_DELAY_SEC * 1000``, else ``now + TIMER_DELAY_MS``, else
  ``TIMER_DELIVER_MS``; an unparsable value is ``WHEEL_TIMER_MSG_ILLEGAL``, as is a due time more
  than ``timerMaxDelaySec`` ahead; with ``timerWheelEnable=false`` the send is refused;
* a due time in the past delivers at once (no routing); otherwise it is rounded down to
  ``timerPrecisionMs`` (a multiple moves one step earlier) into ``TIMER_OUT_MS``, and the message
  goes to ``rmq_sys_wheel_timer`` queue 0.

Delivery: Java's wheel dequeues the slot of ``TIMER_OUT_MS`` once its write time has passed
that slot, so a message arrives at ``TIMER_OUT_MS + timerPrecisionMs`` at the earliest - never
before the time the producer asked for. :meth:`TimerMessageService.deliver_due` does the same,
and the delivered message is ``TimerMessageStore.convert``'s: the stored properties plus
``TIMER_ENQUEUE_MS`` and ``TIMER_DEQUEUE_MS``, in its real topic and queue.

Deletion (what RECALL_MESSAGE writes): a timer message carrying ``TIMER_DEL_UNIQKEY`` =
``<real topic>+<unique key>`` lands in the same slot as the message it cancels. Neither is
delivered: Java's dequeue collects a slot's delete keys and skips the messages they name, and never
puts a delete marker itself (``TimerMessageStore.doPut``). The marker stays in the due heap until
its slot passes, so after a restart both are read again and the cancelled message stays cancelled.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Collection
from typing import Any

from broker.config import BrokerConfig
from broker.schedule import PutMessages, load_routed
from codec.errors import CodecError, RocketMQError
from codec.message import MessageRecord, MessageSysFlag, decode_record
from codec.properties import DELAY, REAL_QID, REAL_TOPIC, UNIQ_KEY, decode_properties, encode_properties
from store.message_reader import MessageReader

logger = logging.getLogger(__name__)

TIMER_TOPIC = "rmq_sys_wheel_timer"  # TimerMessageStore.TIMER_TOPIC
TIMER_DELIVER_MS = "TIMER_DELIVER_MS"  # MessageConst.PROPERTY_TIMER_DELIVER_MS
TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
TIMER_DELAY_MS = "TIMER_DELAY_MS"
TIMER_OUT_MS = "TIMER_OUT_MS"
TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"
TIMER_PROGRESS_JSON = "timerProgress.json"
MAX_PER_ROUND = 1024  # messages delivered per round, so the loop yields to requests
_ILLEGAL_REMARK = (  # SendMessageProcessor, WHEEL_TIMER_MSG_ILLEGAL
    "timer message illegal, the delay time should not be bigger than the max delay {}ms; "
    "or if set del msg, the delay time should be bigger than the current time"
)


def delete_key(real_topic: str, uniq_key: str) -> str:
    """``TimerMessageStore.buildDeleteKey``: names one message, as a query by topic and key does."""
    return f"{real_topic}+{uniq_key}"


class TimerMessageError(RocketMQError):
    """A timer send the real broker refuses; ``response_code`` and remark as Java answers."""


def route_timer_message(
    record: MessageRecord,
    props: dict[str, str],
    now_ms: int,
    *,
    max_delay_sec: int,
    precision_ms: int,
    wheel_enable: bool,
) -> bool:
    """Route ``record`` through the timer topic if it is a timer message; True if it was.
    Raises :class:`TimerMessageError` for a refused one. ``props`` must be re-encoded by the
    caller only when this returns True (``record.properties`` is then already set)."""
    kind = MessageSysFlag.transaction_type(record.sys_flag)
    if kind not in (MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE):
        return False
    if record.topic == TIMER_TOPIC:
        return False
    level = props.get(DELAY, "")
    if level.lstrip("-").isdigit() and int(level) > 0:
        for key in (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS):
            props.pop(key, None)
        return False
    if TIMER_OUT_MS in props or not any(
        k in props for k in (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS)
    ):
        return False
    if not wheel_enable:
        raise TimerMessageError(
            "accurate timer message is not enabled, timerWheelEnable is false", response_code=1
        )
    illegal = TimerMessageError(_ILLEGAL_REMARK.format(max_delay_sec * 1000), response_code=13)
    try:
        if TIMER_DELAY_SEC in props:
            deliver_ms = now_ms + int(props[TIMER_DELAY_SEC]) * 1000
        elif TIMER_DELAY_MS in props:
            deliver_ms = now_ms + int(props[TIMER_DELAY_MS])
        else:
            deliver_ms = int(props[TIMER_DELIVER_MS])
    except ValueError:
        raise illegal from None
    if deliver_ms <= now_ms:
        if TIMER_DEL_UNIQKEY in props:
            raise illegal
        return False
    if deliver_ms - now_ms > max_delay_sec * 1000:
        raise illegal
    if deliver_ms % precision_ms == 0:
        deliver_ms -= precision_ms
    else:
        deliver_ms = deliver_ms // precision_ms * precision_ms
    props[TIMER_OUT_MS] = str(deliver_ms)
    props[REAL_TOPIC] = record.topic
    props[REAL_QID] = str(record.queue_id)
    record.properties = encode_properties(props)
    record.topic = TIMER_TOPIC
    record.queue_id = 0
    return True


def route_timer_message_by_config(
    config: BrokerConfig, record: MessageRecord, props: dict[str, str], now_ms: int
) -> bool:
    """:func:`route_timer_message` within the broker's ``timerMaxDelaySec``, ``timerPrecisionMs``
    and ``timerWheelEnable``, as every put of a client's message applies them."""
    return route_timer_message(
        record,
        props,
        now_ms,
        max_delay_sec=config.timer_max_delay_sec,
        precision_ms=config.timer_precision_ms,
        wheel_enable=config.timer_wheel_enable,
    )


class TimerMessageService:
    """Due times of the records in the timer queue, and their delivery (no Trio: the app's loop
    calls :meth:`scan` and :meth:`deliver_due`)."""

    def __init__(self, store: MessageReader, put: PutMessages, precision_ms: int) -> None:
        self.store = store
        self.put = put
        self.precision_ms = precision_ms
        self.committed = 0  # every timer-queue offset below this one was delivered
        self.delivered_above: set[int] = set()  # delivered offsets >= committed
        self.scanned = 0  # next timer-queue offset not yet read into the heap
        self._due: list[tuple[int, int, int]] = []  # (TIMER_OUT_MS, queue offset, commit-log offset)
        self._deleted: dict[int, set[str]] = {}  # TIMER_OUT_MS: the delete keys of that slot
        self.delivered = 0
        self.dirty = False

    def load_obj(self, doc: Any) -> None:
        self.committed = int(doc.get("committedOffset", 0))
        self.delivered_above = {int(o) for o in doc.get("deliveredOffsets", []) if int(o) >= self.committed}
        self.scanned = self.committed
        self._due = []
        self._deleted = {}

    def to_obj(self) -> dict[str, Any]:
        return {"committedOffset": self.committed, "deliveredOffsets": sorted(self.delivered_above)}

    @property
    def pending(self) -> int:
        return len(self._due)

    def caught_up(self, now_ms: int) -> bool:
        """Whether every timer message stored has been read and every one due by ``now_ms``
        delivered (``TimerMessageStore.getEnqueueBehind`` and ``getDequeueBehind`` at 0)."""
        if self.store.get_max_offset_in_queue(TIMER_TOPIC, 0) > self.scanned:
            return False
        return not self._due or self._due[0][0] + self.precision_ms > now_ms

    def scan(self) -> int:
        """Read the due time of every record that arrived in the timer queue; returns how many."""
        found = 0
        for unit in self.store.iter_queue_units(TIMER_TOPIC, 0, self.scanned):
            self.scanned = unit.queue_offset + 1
            if unit.queue_offset < self.committed or unit.queue_offset in self.delivered_above:
                continue
            data = self.store.look_message_by_offset(unit.phy_offset)
            try:
                props = decode_properties(decode_record(data).properties) if data is not None else {}
                due = int(props[TIMER_OUT_MS])
            except (CodecError, KeyError, ValueError) as err:
                logger.error("timer message at %d is unreadable (%s); skipped", unit.phy_offset, err)
                self._mark_delivered(unit.queue_offset)
                continue
            if TIMER_DEL_UNIQKEY in props:
                self._deleted.setdefault(due, set()).add(props[TIMER_DEL_UNIQKEY])
            heapq.heappush(self._due, (due, unit.queue_offset, unit.phy_offset))
            found += 1
        return found

    async def deliver_due(self, now_ms: int) -> int:
        """Put every message whose slot has passed into its real queue; returns how many."""
        moved = 0
        while self._due and moved < MAX_PER_ROUND and self._due[0][0] + self.precision_ms <= now_ms:
            due, queue_offset, phy = self._due[0]
            record = self._real_message(phy, now_ms, self._deleted.get(due, ()))
            if record is not None:
                result = await self.put([record], None)
                if not result.ok:
                    logger.warning(
                        "timer message at %d not delivered (%s); will retry", phy, result.status.name
                    )
                    break
                self.delivered += 1
            heapq.heappop(self._due)
            self._mark_delivered(queue_offset)
            if due in self._deleted and (not self._due or self._due[0][0] != due):
                del self._deleted[due]  # the slot is done
            moved += 1
        return moved

    def _mark_delivered(self, queue_offset: int) -> None:
        self.delivered_above.add(queue_offset)
        while self.committed in self.delivered_above:
            self.delivered_above.discard(self.committed)
            self.committed += 1
        self.dirty = True

    def _real_message(self, phy: int, now_ms: int, deleted: Collection[str]) -> MessageRecord | None:
        """``TimerMessageStore.convert``: the message in its real topic and queue; ``None`` for a
        delete marker, a message one of ``deleted`` names, or a record gone or unreadable."""
        found = load_routed(self.store, phy, "timer")
        if found is None:
            return None
        original, props, topic, queue_id = found
        if TIMER_DEL_UNIQKEY in props:
            return None
        if deleted and delete_key(topic, props.get(UNIQ_KEY, "")) in deleted:
            logger.info("timer message %s of %s recalled; not delivered", props.get(UNIQ_KEY), topic)
            return None
        props[TIMER_ENQUEUE_MS] = str(original.store_timestamp)
        props[TIMER_DEQUEUE_MS] = str(now_ms)
        return original.to_put_again(topic=topic, queue_id=queue_id, properties=encode_properties(props))
