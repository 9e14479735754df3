"""Headers of END_TRANSACTION (37) and CHECK_TRANSACTION_STATE (39, broker to producer)."""

from __future__ import annotations

from dataclasses import dataclass

from codec.headers.base import CustomHeader, wire

TRANSACTION_NOT_TYPE = 0  # commitOrRollback: unknown, no action
TRANSACTION_COMMIT_TYPE = 0x2 << 2
TRANSACTION_ROLLBACK_TYPE = 0x3 << 2


@dataclass(slots=True)
class EndTransactionRequestHeader(CustomHeader):
    producer_group: str = wire("producerGroup")
    tran_state_table_offset: int = wire("tranStateTableOffset")
    commit_log_offset: int = wire("commitLogOffset")
    commit_or_rollback: int = wire("commitOrRollback", int32=True)
    msg_id: str = wire("msgId")
    from_transaction_check: bool | None = wire("fromTransactionCheck", required=False)
    transaction_id: str | None = wire("transactionId", required=False)
    topic: str | None = wire("topic", required=False)  # 5.3.0+
    broker_name: str | None = wire("bname", required=False)


@dataclass(slots=True)
class CheckTransactionStateRequestHeader(CustomHeader):
    tran_state_table_offset: int = wire("tranStateTableOffset")
    commit_log_offset: int = wire("commitLogOffset")
    msg_id: str | None = wire("msgId", required=False)
    transaction_id: str | None = wire("transactionId", required=False)
    offset_msg_id: str | None = wire("offsetMsgId", required=False)
    topic: str | None = wire("topic", required=False)  # 5.3.0+
    broker_name: str | None = wire("bname", required=False)
