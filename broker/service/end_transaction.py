"""Ending a transaction: an :class:`EndTransactionRequest` in, resolved or left unknown out
(``EndTransactionProcessor``).

A producer ends its transaction directly after its local transaction, or answering a check-back.
``commit_or_rollback`` unknown (0) leaves the half message to the check and answers nothing, as in
Java. Commit and rollback find the half message by ``commit_log_offset`` and check it against the
request (producer group, half queue offset, commit-log offset). A commit puts the message into its
real topic and queue (:func:`broker.transaction.bridge.committed_message`), routed by its timer
properties or delay level as a send would be (``HookUtils.handleScheduleMessage``), then records
the op message; a rollback only records the op message. A producer's own end (not from a check)
that arrives after the message's ``CHECK_IMMUNITY_TIME_IN_SECONDS`` is refused with
ILLEGAL_OPERATION and left to the check (``rejectCommitOrRollback``). Refusals raise
:class:`EndTransactionRefused` with Java's code and remark.

Both front doors adapt onto :class:`EndTransactionService`: END_TRANSACTION
(:mod:`broker.processors.end_transaction`) and gRPC's EndTransaction (:mod:`broker.grpc.transaction`).
"""

from __future__ import annotations

import logging

from broker.controller import BrokerController
from broker.schedule import apply_delay_level
from broker.timer.service import route_timer_message_by_config
from broker.transaction.bridge import HALF_TOPIC, committed_message
from broker.transaction.service import TransactionalMessageService, immunity_floor_ms
from codec.codes import ResponseCode
from codec.errors import RocketMQError
from codec.headers.transaction import TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE
from codec.message import MessageRecord
from codec.properties import CHECK_IMMUNITY_TIME_IN_SECONDS, PGROUP, REAL_QID, REAL_TOPIC, decode_properties
from store.results import PutMessageStatus

logger = logging.getLogger(__name__)

#: ``sendFinalMessage``: the store statuses it answers SUCCESS ...
_FINAL_PUT_OK = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)
#: ... and the code and remark of the others; a status in neither is SYSTEM_ERROR "UNKNOWN_ERROR".
_FINAL_PUT_ERRORS = {
    PutMessageStatus.CREATE_MAPPED_FILE_FAILED: (ResponseCode.SYSTEM_ERROR, "Create mapped file failed."),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "Service not available now.",
    ),
    PutMessageStatus.OS_PAGE_CACHE_BUSY: (
        ResponseCode.SYSTEM_ERROR,
        "OS page cache busy, please try another machine",
    ),
}


class EndTransactionRefused(RocketMQError):
    """An end refused: ``response_code`` and the remark (the message, or none where Java sets
    none)."""


class EndTransactionRequest:
    """``EndTransactionRequestHeader`` typed: which half message (producer group, its queue
    offset, its commit-log offset), commit, rollback or unknown (the header's constants), whether
    it answers a check; ``transaction_id`` and ``remote_addr`` are for the log."""

    __slots__ = (
        "commit_log_offset",
        "commit_or_rollback",
        "from_transaction_check",
        "producer_group",
        "remote_addr",
        "tran_state_table_offset",
        "transaction_id",
    )

    def __init__(
        self,
        *,
        producer_group: str,
        tran_state_table_offset: int,
        commit_log_offset: int,
        commit_or_rollback: int,
        from_transaction_check: bool = False,
        transaction_id: str | None = None,
        remote_addr: str = "",
    ) -> None:
        self.producer_group = producer_group
        self.tran_state_table_offset = tran_state_table_offset
        self.commit_log_offset = commit_log_offset
        self.commit_or_rollback = commit_or_rollback
        self.from_transaction_check = from_transaction_check
        self.transaction_id = transaction_id
        self.remote_addr = remote_addr


class EndTransactionService:
    """See the module docstring; ``committed`` and ``rolled_back`` count the ends done."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.service = TransactionalMessageService(broker)
        self.committed = 0
        self.rolled_back = 0

    async def end_transaction(self, request: EndTransactionRequest) -> bool:
        """Commit or roll back; False when the producer left it unknown (nothing is done, nothing
        is answered). Raises :class:`EndTransactionRefused`."""
        kind = request.commit_or_rollback
        from_check = request.from_transaction_check
        if kind not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            logger.info(
                "producer %s left transaction %s unknown (from check: %s)",
                request.remote_addr,
                request.transaction_id,
                from_check,
            )
            return False
        half = self.service.look(request.commit_log_offset)
        if half is None or half.topic != HALF_TOPIC:
            raise EndTransactionRefused(
                "Find prepared transaction message failed", response_code=ResponseCode.SYSTEM_ERROR
            )
        props = decode_properties(half.properties)
        if not from_check and self._reject(half, props):
            logger.warning(
                "end of transaction %s refused: past its check immunity time, left to the check",
                request.transaction_id,
            )
            raise EndTransactionRefused(  # Java sets no remark here
                "past its check immunity time", response_code=ResponseCode.ILLEGAL_OPERATION, null_remark=True
            )
        refusal = self._check_prepare_message(half, props, request)
        if refusal is not None:
            raise EndTransactionRefused(refusal, response_code=ResponseCode.SYSTEM_ERROR)
        if kind == TRANSACTION_ROLLBACK_TYPE:
            await self.service.delete_prepare_message(half)
            self.rolled_back += 1
            return True
        await self._commit(half, props, request)
        await self.service.delete_prepare_message(half)
        self.committed += 1
        return True

    def _reject(self, half: MessageRecord, props: dict[str, str]) -> bool:
        """``rejectCommitOrRollback``."""
        text = props.get(CHECK_IMMUNITY_TIME_IN_SECONDS)
        if not text:
            return False
        timeout = self.broker.config.transaction_timeout
        return self.broker.now_ms() - half.born_timestamp > immunity_floor_ms(text, timeout)

    @staticmethod
    def _check_prepare_message(
        half: MessageRecord, props: dict[str, str], request: EndTransactionRequest
    ) -> str | None:
        """``checkPrepareMessage``: the remark of a mismatch, or ``None``."""
        if props.get(PGROUP) != request.producer_group:
            return "The producer group wrong"
        if half.queue_offset != request.tran_state_table_offset:
            return "The transaction state table offset wrong"
        if half.physical_offset != request.commit_log_offset:
            return "The commit log offset wrong"
        if REAL_TOPIC not in props or not props.get(REAL_QID, "").isdigit():
            return "Find prepared transaction message failed"
        return None

    async def _commit(
        self, half: MessageRecord, props: dict[str, str], request: EndTransactionRequest
    ) -> None:
        """``endMessageTransaction`` and ``sendFinalMessage``: put the committed message into its
        real topic; raises :class:`EndTransactionRefused` with the code and remark Java answers when
        the put fails (``TimerMessageError`` for a bad timer property)."""
        broker = self.broker
        record = committed_message(half, props, TRANSACTION_COMMIT_TYPE, request.commit_log_offset)
        # a committed message is a send like any other: timer and delay routing apply
        route_timer_message_by_config(broker.config, record, props, broker.now_ms())
        apply_delay_level(record, props, broker.schedule.max_level)
        result = await broker.put_messages([record], [props])
        if result.status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            raise EndTransactionRefused(
                "The message is illegal, maybe msg body or properties length not matched. "
                f"msg body length limit {broker.config.max_message_size}B, msg properties length limit 32KB.",
                response_code=ResponseCode.MESSAGE_ILLEGAL,
            )
        if result.status not in _FINAL_PUT_OK:
            code, remark = _FINAL_PUT_ERRORS.get(result.status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"))
            raise EndTransactionRefused(remark, response_code=code)
