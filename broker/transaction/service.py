"""The transactional message service (``TransactionalMessageServiceImpl``) and its check listener
(``DefaultTransactionalMessageCheckListener``, ``Broker2Client.checkProducerTransactionState``).

Stateless over the broker: everything it knows is in the half and op queues and in the
``CID_RMQ_SYS_TRANS`` consumer offsets, so a processor and the app's timer may each build one.

One check round (:meth:`TransactionalMessageService.check`), as ``check`` in Java:

1. read the op queue from its offset and note which half queue offsets were ended;
2. walk the half queue from its offset: an ended one is skipped; one checked
   ``transactionCheckMax`` times already (``TRANSACTION_CHECK_TIMES``), or older than
   ``fileReservedTime``, goes to ``TRANS_CHECK_MAX_TIME_TOPIC``; one younger than
   ``transactionTimeOut`` (or than its ``CHECK_IMMUNITY_TIME_IN_SECONDS``) ends the round - except
   that a young message with an immunity time is copied to the end of the half queue, so the
   round can go on; an old enough one is copied to the end of the half queue with its check count
   raised and the producer group gets CHECK_TRANSACTION_STATE (oneway) for the copy;
3. commit the new offsets of both queues.

Java pulls op messages 32 at a time and keeps scanning (sleeping 1 s when none come) for up to
60 s; this round reads every op message first (at most :data:`MAX_OPS_PER_ROUND`) and stops at
the first half message not yet old enough, which the next round picks up.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass

from broker.controller import BrokerController
from broker.transaction.bridge import (
    CHECK_MAX_TIME_TOPIC,
    HALF_QUEUE_ID,
    HALF_TOPIC,
    OP_TOPIC,
    SYS_TRANS_GROUP,
    java_properties,
    op_message,
    removed_offsets,
    renew_half_message,
)
from codec.bodies.register import PERM_READ, PERM_WRITE
from codec.codes import RequestCode
from codec.command import RemotingCommand
from codec.headers.transaction import CheckTransactionStateRequestHeader
from codec.message import MessageRecord, encode_record
from codec.message_id import encode_offset_msg_id
from codec.properties import (
    CHECK_IMMUNITY_TIME_IN_SECONDS,
    PGROUP,
    REAL_QID,
    REAL_TOPIC,
    TRAN_PREPARED_QUEUE_OFFSET,
    TRANSACTION_CHECK_TIMES,
    UNIQ_KEY,
    decode_properties,
)
from store.results import PutMessageResult

logger = logging.getLogger(__name__)

MAX_OPS_PER_ROUND = 100_000  # op messages read per round, so one round stays bounded
MAX_HALF_PER_ROUND = 10_000  # half messages walked per round
HOUR_MS = 3_600_000


def immunity_ms(text: str, transaction_timeout_ms: int) -> int:
    """``TransactionalMessageServiceImpl.getImmunityTime``: seconds to ms; unparsable means the
    transaction timeout."""
    try:
        return int(text) * 1000
    except ValueError:
        return transaction_timeout_ms


def immunity_floor_ms(text: str, transaction_timeout_ms: int) -> int:
    """``TransactionalMessageUtil.getImmunityTime`` (used by END_TRANSACTION): never below the timeout."""
    try:
        value = int(text) * 1000
    except ValueError:
        value = 0
    return max(value, transaction_timeout_ms)


@dataclass(slots=True)
class CheckRound:
    """What one round did (for tests and statistics)."""

    checked: int = 0
    discarded: int = 0
    removed: int = 0
    immunity_copies: int = 0
    half_offset: int = 0
    op_offset: int = 0


class OpRemoveMap:
    """What the op queue says (Java's ``removeMap`` and ``doneOpOffset`` of ``check``): which half
    offsets were ended and by which op, which ops still end a half message the round has not
    reached, and which ops are done."""

    __slots__ = ("done", "pending", "remove")

    def __init__(self) -> None:
        self.remove: dict[int, int] = {}  # half queue offset -> op queue offset that removes it
        self.pending: dict[int, set[int]] = {}  # op queue offset -> half offsets not reached yet
        self.done: list[int] = []  # op queue offsets dealt with

    def settle(self, half_offset: int) -> bool:
        """True if an op ended ``half_offset``: that op is done once it ends nothing else."""
        op_at = self.remove.pop(half_offset, None)
        if op_at is None:
            return False
        self.pending[op_at].discard(half_offset)
        if not self.pending[op_at]:
            del self.pending[op_at]
            self.done.append(op_at)
        return True


class TransactionalMessageService:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    # -- offsets and reads -----------------------------------------------------------------------

    def consume_offset(self, topic: str) -> int:
        """``fetchConsumeOffset``: the group's offset, or the queue's min offset."""
        offset = self.broker.offsets.query(SYS_TRANS_GROUP, topic, HALF_QUEUE_ID)
        return offset if offset >= 0 else self.broker.store.get_min_offset_in_queue(topic, HALF_QUEUE_ID)

    def _commit_offset(self, topic: str, offset: int) -> None:
        self.broker.offsets.commit(SYS_TRANS_GROUP, topic, HALF_QUEUE_ID, offset)

    def look(self, commit_log_offset: int) -> MessageRecord | None:
        return self.broker.look_message(commit_log_offset)

    # -- ending a transaction --------------------------------------------------------------------

    async def delete_prepare_message(self, half: MessageRecord) -> bool:
        """Record in the op queue that ``half`` was committed or rolled back."""
        b = self.broker
        record, props = op_message(
            [half.queue_offset], half.queue_id, b.store_host, b.store_port, b.now_ms(), b.uniq_ids.next_id()
        )
        result = await b.put_messages([record], [props])
        if not result.ok:
            logger.error(
                "op message for half offset %d not written: %s", half.queue_offset, result.status.name
            )
        return result.ok

    # -- the check round -------------------------------------------------------------------------

    async def check(self) -> CheckRound:
        """One check round (module docstring): read the op queue, walk the half queue, commit
        the offsets of both."""
        b = self.broker
        start = b.now_ms()
        half_offset = self.consume_offset(HALF_TOPIC)
        op_offset = self.consume_offset(OP_TOPIC)
        stats = CheckRound(half_offset=half_offset, op_offset=op_offset)
        ops = self._fill_op_remove_map(half_offset, op_offset)
        new_offset = await self._walk_half_queue(half_offset, ops, start, stats)
        if new_offset != half_offset:
            self._commit_offset(HALF_TOPIC, new_offset)
        new_op_offset = op_offset
        for op_done in sorted(ops.done):  # calculateOpOffset
            if op_done != new_op_offset:
                break
            new_op_offset += 1
        if new_op_offset != op_offset:
            self._commit_offset(OP_TOPIC, new_op_offset)
        stats.half_offset, stats.op_offset = new_offset, new_op_offset
        return stats

    def _fill_op_remove_map(self, half_offset: int, op_offset: int) -> OpRemoveMap:
        """``fillOpRemoveMap``: the op messages from ``op_offset`` and the half offsets they end."""
        ops = OpRemoveMap()
        store = self.broker.store
        for unit in itertools.islice(
            store.iter_queue_units(OP_TOPIC, HALF_QUEUE_ID, op_offset), MAX_OPS_PER_ROUND
        ):
            op = self.look(unit.phy_offset)
            offsets = {o for o in removed_offsets(op) if o >= half_offset} if op is not None else set()
            if offsets:
                for o in offsets:
                    ops.remove[o] = unit.queue_offset
                ops.pending[unit.queue_offset] = offsets
            else:
                ops.done.append(unit.queue_offset)
        return ops

    async def _walk_half_queue(
        self, half_offset: int, ops: OpRemoveMap, start: int, stats: CheckRound
    ) -> int:
        """The half queue from ``half_offset`` up to the first message the round must stop at;
        returns the offset after the last one dealt with."""
        store = self.broker.store
        end = store.get_max_offset_in_queue(HALF_TOPIC, HALF_QUEUE_ID)
        units = list(
            itertools.islice(
                store.iter_queue_units(HALF_TOPIC, HALF_QUEUE_ID, half_offset), MAX_HALF_PER_ROUND
            )
        )
        new_offset = half_offset
        for unit in units:
            i = unit.queue_offset
            if i >= end:
                break
            if ops.settle(i):
                stats.removed += 1
            elif not await self._check_half(i, unit.phy_offset, ops, start, stats):
                break
            new_offset = i + 1
        return new_offset

    async def _check_half(
        self, queue_offset: int, phy_offset: int, ops: OpRemoveMap, start: int, stats: CheckRound
    ) -> bool:
        """One half message not ended yet: discarded, copied for later (immunity), or put back with
        a check sent to its producer group. False: too young, or a put failed; the round stops."""
        b = self.broker
        half = self.look(phy_offset)
        if half is None:
            return True
        props = decode_properties(half.properties)
        if self._need_discard(props) or self._need_skip(half, start):
            await self._resolve_discard(half, props)
            stats.discarded += 1
            return True
        if half.store_timestamp >= start:
            return False
        age = b.now_ms() - half.born_timestamp
        immunity = timeout = b.config.transaction_timeout
        text = props.get(CHECK_IMMUNITY_TIME_IN_SECONDS)
        if text is not None:
            immunity = immunity_ms(text, timeout)
            if age < immunity:
                if not await self._check_prepare_queue_offset(ops.remove, ops.done, half, props):
                    return False
                stats.immunity_copies += 1
                return True
        elif 0 <= age < immunity:
            return False
        if not (age > immunity or age <= -1):
            return False
        copy = renew_half_message(half, props)
        result = await b.put_messages([copy], [props])
        if not result.ok:
            logger.warning("half message %d not put back (%s); will retry", queue_offset, result.status.name)
            return False
        self.send_check_message(copy, props)
        stats.checked += 1
        return True

    def _need_discard(self, props: dict[str, str]) -> bool:
        """``needDiscard``: checked ``transactionCheckMax`` times already; else count this check."""
        text = props.get(TRANSACTION_CHECK_TIMES)
        times = 1
        if text is not None:
            try:
                times = int(text)
            except ValueError:
                times = -1
            if times >= self.broker.config.transaction_check_max:
                return True
            times += 1
        props[TRANSACTION_CHECK_TIMES] = str(times)
        return False

    def _need_skip(self, half: MessageRecord, now_ms: int) -> bool:
        """``needSkip``: older than the commit log's retention (``fileReservedTime`` hours)."""
        return now_ms - half.born_timestamp > self.broker.store.config.file_reserved_time * HOUR_MS

    async def _check_prepare_queue_offset(
        self, remove: dict[int, int], done_ops: list[int], half: MessageRecord, props: dict[str, str]
    ) -> bool:
        """``checkPrepareQueueOffset``: a young message with an immunity time is done if its first
        copy was ended, else copied to the end of the half queue; False stops the round."""
        text = props.get(TRAN_PREPARED_QUEUE_OFFSET)
        if text is not None:
            try:
                prepared = int(text)
            except ValueError:
                return False
            if prepared in remove:
                done_ops.append(remove.pop(prepared))
                return True
        copy = renew_half_message(half, props, immunity=True)
        result = await self.broker.put_messages([copy], None)
        return result.ok

    async def _resolve_discard(self, half: MessageRecord, props: dict[str, str]) -> PutMessageResult:
        """``DefaultTransactionalMessageCheckListener.resolveDiscardMsg``."""
        b = self.broker
        logger.error(
            "half message %s checked too many times; moved to %s",
            props.get(UNIQ_KEY),
            CHECK_MAX_TIME_TOPIC,
        )
        b.topics.create_if_absent(CHECK_MAX_TIME_TOPIC, 1, PERM_READ | PERM_WRITE)
        record = renew_half_message(half, props)
        record.topic = CHECK_MAX_TIME_TOPIC
        record.queue_id = 0
        result = await b.put_messages([record], [props])
        if not result.ok:
            logger.error("could not move half message to %s: %s", CHECK_MAX_TIME_TOPIC, result.status.name)
        return result

    def send_check_message(self, half: MessageRecord, props: dict[str, str]) -> bool:
        """``sendCheckMessage`` + ``Broker2Client.checkProducerTransactionState``: CHECK_TRANSACTION_STATE
        (oneway) to a live producer of the group, the message (real topic and queue) as body."""
        b = self.broker
        group = props.get(PGROUP, "")
        channel = b.clients.find_producer_channel(group)
        peer = channel.connection.peer if channel is not None else None
        if peer is None:
            logger.warning("transaction check skipped: no producer of group %r is connected", group)
            return False
        uniq = props.get(UNIQ_KEY)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=half.queue_offset,
            commit_log_offset=half.physical_offset,
            msg_id=uniq,
            transaction_id=uniq,
            offset_msg_id=encode_offset_msg_id(half.store_host, half.store_port, half.physical_offset),
            topic=half.topic,
            broker_name=b.config.broker_name,
        )
        message = renew_half_message(half, props)
        message.topic = props.get(REAL_TOPIC, half.topic)
        message.queue_id = int(props.get(REAL_QID, half.queue_id))
        message.queue_offset = half.queue_offset
        message.physical_offset = half.physical_offset
        message.store_timestamp = half.store_timestamp
        message.properties = java_properties(props)
        request = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE, header, body=encode_record(message)
        )
        if not peer.try_invoke_oneway(request):
            logger.warning("transaction check for %s dropped: producer channel busy or closed", uniq)
            return False
        return True
