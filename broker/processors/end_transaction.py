"""END_TRANSACTION (37) from a producer, directly after its local transaction or answering a
CHECK_TRANSACTION_STATE (``EndTransactionProcessor``).

``commitOrRollback`` unknown (0) gets no answer at all, as in Java. Commit and rollback find the
half message by ``commitLogOffset`` and check it against the request (producer group, half queue
offset, commit-log offset). A commit puts the message into its real topic and queue
(:func:`broker.transaction.bridge.committed_message`), routed by its timer properties or delay
level as a send would be (``HookUtils.handleScheduleMessage``), then records the op message; a
rollback only records the op message. A producer's own end request (not from a check) that
arrives after the message's ``CHECK_IMMUNITY_TIME_IN_SECONDS`` is refused with
ILLEGAL_OPERATION and left to the check (``rejectCommitOrRollback``).
"""

from __future__ import annotations

import logging

from broker.controller import BrokerController
from broker.schedule import apply_delay_level
from broker.timer.service import route_timer_message
from broker.transaction.bridge import HALF_TOPIC, committed_message
from broker.transaction.service import TransactionalMessageService, immunity_floor_ms
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.transaction import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    EndTransactionRequestHeader,
)
from codec.message import MessageRecord
from codec.properties import CHECK_IMMUNITY_TIME_IN_SECONDS, PGROUP, REAL_QID, REAL_TOPIC, decode_properties
from gateway.transport.dispatch import Dispatcher, RequestContext
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


class EndTransactionProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.service = TransactionalMessageService(broker)
        self.committed = 0
        self.rolled_back = 0

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.END_TRANSACTION, self.end_transaction, EndTransactionRequestHeader)

    async def end_transaction(
        self, ctx: RequestContext, request: RemotingCommand, header: EndTransactionRequestHeader
    ) -> RemotingCommand | None:
        kind = header.commit_or_rollback
        from_check = bool(header.from_transaction_check)
        if kind not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            logger.info(
                "producer %s left transaction %s unknown (from check: %s)",
                ctx.connection.remote_addr,
                header.transaction_id,
                from_check,
            )
            return None
        half = self.service.look(header.commit_log_offset)
        if half is None or half.topic != HALF_TOPIC:
            raise RocketMQError(
                "Find prepared transaction message failed", response_code=ResponseCode.SYSTEM_ERROR
            )
        props = decode_properties(half.properties)
        if not from_check and self._reject(half, props):
            logger.warning(
                "end of transaction %s refused: past its check immunity time, left to the check",
                header.transaction_id,
            )
            raise RocketMQError(  # Java sets no remark here
                "past its check immunity time", response_code=ResponseCode.ILLEGAL_OPERATION, null_remark=True
            )
        refusal = self._check_prepare_message(half, props, header)
        if refusal is not None:
            raise RocketMQError(refusal, response_code=ResponseCode.SYSTEM_ERROR)
        if kind == TRANSACTION_ROLLBACK_TYPE:
            await self.service.delete_prepare_message(half)
            self.rolled_back += 1
            return request.make_response(ResponseCode.SUCCESS)
        await self._commit(half, props, header)
        await self.service.delete_prepare_message(half)
        self.committed += 1
        return request.make_response(ResponseCode.SUCCESS)

    def _reject(self, half: MessageRecord, props: dict[str, str]) -> bool:
        """``rejectCommitOrRollback``."""
        text = props.get(CHECK_IMMUNITY_TIME_IN_SECONDS)
        if not text:
            return False
        timeout = self.broker.config.transaction_timeout
        return self.broker.now_ms() - half.born_timestamp > immunity_floor_ms(text, timeout)

    @staticmethod
    def _check_prepare_message(
        half: MessageRecord, props: dict[str, str], header: EndTransactionRequestHeader
    ) -> str | None:
        """``checkPrepareMessage``: the remark of a mismatch, or ``None``."""
        if props.get(PGROUP) != header.producer_group:
            return "The producer group wrong"
        if half.queue_offset != header.tran_state_table_offset:
            return "The transaction state table offset wrong"
        if half.physical_offset != header.commit_log_offset:
            return "The commit log offset wrong"
        if REAL_TOPIC not in props or not props.get(REAL_QID, "").isdigit():
            return "Find prepared transaction message failed"
        return None

    async def _commit(
        self, half: MessageRecord, props: dict[str, str], header: EndTransactionRequestHeader
    ) -> None:
        """``endMessageTransaction`` and ``sendFinalMessage``: put the committed message into its
        real topic; raises :class:`RocketMQError` with the code and remark Java answers when the
        put fails (``TimerMessageError`` for a bad timer property)."""
        broker = self.broker
        record = committed_message(half, props, TRANSACTION_COMMIT_TYPE, header.commit_log_offset)
        config = broker.config
        # a committed message is a send like any other: timer and delay routing apply
        route_timer_message(
            record,
            props,
            broker.now_ms(),
            max_delay_sec=config.timer_max_delay_sec,
            precision_ms=config.timer_precision_ms,
            wheel_enable=config.timer_wheel_enable,
        )
        apply_delay_level(record, props, broker.schedule.max_level)
        result = await broker.put_messages([record], [props])
        if result.status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            raise RocketMQError(
                "The message is illegal, maybe msg body or properties length not matched. "
                f"msg body length limit {broker.config.max_message_size}B, msg properties length limit 32KB.",
                response_code=ResponseCode.MESSAGE_ILLEGAL,
            )
        if result.status not in _FINAL_PUT_OK:
            code, remark = _FINAL_PUT_ERRORS.get(result.status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"))
            raise RocketMQError(remark, response_code=code)
