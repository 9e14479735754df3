"""Half and op messages (``TransactionalMessageBridge``, ``TransactionalMessageUtil``).

A prepared send is stored as a *half message*: topic ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0, its
real topic and queue in ``REAL_TOPIC`` / ``REAL_QID``, ``__transactionId__`` = its ``UNIQ_KEY``,
and its sysFlag reset to the non-transactional type, so it gets a consume-queue unit
(``parseHalfMessageInner``). Ending a transaction (commit or rollback) appends an *op message* to
``RMQ_SYS_TRANS_OP_HALF_TOPIC`` (same queue id as the half queue), tags ``d``, whose body lists
the half queue offsets it removes, each followed by ``,`` (``TransactionalMessageServiceImpl
.deletePrepareMessage``). Java batches op entries for up to ``transactionOpBatchInterval`` (3 s);
this broker writes one op message per ended transaction at once, which the check round reads the
same way.

The check round's progress is the consumer offset of group ``CID_RMQ_SYS_TRANS`` on both topics
(``consumerOffset.json``), as in Java.
"""

from __future__ import annotations

import logging

from codec.hashing import java_hashmap_order
from codec.message import MessageRecord, MessageSysFlag, make_system_record
from codec.properties import (
    REAL_QID,
    REAL_TOPIC,
    TAGS,
    TRAN_PREPARED_QUEUE_OFFSET,
    TRANSACTION_ID,
    UNIQ_KEY,
    decode_properties,
    encode_properties,
)

logger = logging.getLogger(__name__)

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"  # TopicValidator.RMQ_SYS_TRANS_HALF_TOPIC
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"  # TopicValidator.RMQ_SYS_TRANS_OP_HALF_TOPIC
CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"  # TopicValidator.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC
SYS_TRANS_GROUP = "CID_RMQ_SYS_TRANS"  # MixAll.CID_SYS_RMQ_TRANS
REMOVE_TAG = "d"  # TransactionalMessageUtil.REMOVE_TAG
OFFSET_SEPARATOR = ","  # TransactionalMessageUtil.OFFSET_SEPARATOR
HALF_QUEUE_ID = 0
_PROPERTIES_MAP_CAPACITY = 128  # MessageDecoder.string2messageProperties: new HashMap<>(128)


def java_properties(props: dict[str, str]) -> str:
    """``messageProperties2String`` over a decoded message's ``HashMap``: Java's iteration order."""
    return encode_properties({k: props[k] for k in java_hashmap_order(list(props), _PROPERTIES_MAP_CAPACITY)})


def reset_transaction_type(sys_flag: int, kind: int) -> int:
    """``MessageSysFlag.resetTransactionValue``."""
    return (sys_flag & ~MessageSysFlag.TRANSACTION_MASK) | kind


def to_half_message(record: MessageRecord, props: dict[str, str]) -> None:
    """``parseHalfMessageInner``: turn a prepared send into its half message, in place. The caller
    encodes ``props`` into ``record.properties`` afterwards (Java's HashMap order)."""
    uniq = props.get(UNIQ_KEY)
    if uniq:
        props[TRANSACTION_ID] = uniq
    props[REAL_TOPIC] = record.topic
    props[REAL_QID] = str(record.queue_id)
    record.sys_flag = reset_transaction_type(record.sys_flag, MessageSysFlag.TRANSACTION_NOT_TYPE)
    record.topic = HALF_TOPIC
    record.queue_id = HALF_QUEUE_ID


def op_message(
    half_queue_offsets: list[int],
    queue_id: int,
    store_host: bytes,
    store_port: int,
    now_ms: int,
    uniq_key: str,
) -> tuple[MessageRecord, dict[str, str]]:
    """An op message removing ``half_queue_offsets`` (``makeOpMessageInner``)."""
    props = {TAGS: REMOVE_TAG, UNIQ_KEY: uniq_key}
    body = "".join(f"{offset}{OFFSET_SEPARATOR}" for offset in half_queue_offsets).encode()
    record = make_system_record(
        OP_TOPIC, queue_id, body, encode_properties(props), now_ms, store_host, store_port
    )
    return record, props


def removed_offsets(op: MessageRecord) -> list[int]:
    """The half queue offsets an op message removes (``fillOpRemoveMap``); none for a foreign tag."""
    if decode_properties(op.properties).get(TAGS) != REMOVE_TAG:
        logger.error("op message at queue offset %d has an unknown tag; ignored", op.queue_offset)
        return []
    out = []
    for item in op.body.decode("utf-8", "replace").split(OFFSET_SEPARATOR):
        try:
            out.append(int(item))
        except ValueError:
            continue
    return out


def renew_half_message(
    half: MessageRecord, props: dict[str, str], *, immunity: bool = False
) -> MessageRecord:
    """A copy of a half message to append again to the half queue (``renewHalfMessageInner``);
    with ``immunity`` it remembers the first copy's queue offset in ``TRAN_PREPARED_QUEUE_OFFSET``
    (``renewImmunityHalfMessageInner``). ``props`` are the properties the copy carries."""
    if immunity and TRAN_PREPARED_QUEUE_OFFSET not in props:
        props[TRAN_PREPARED_QUEUE_OFFSET] = str(half.queue_offset)
    return half.to_put_again(topic=half.topic, queue_id=half.queue_id, properties=java_properties(props))


def committed_message(
    half: MessageRecord, props: dict[str, str], kind: int, prepared_offset: int
) -> MessageRecord:
    """``EndTransactionProcessor.endMessageTransaction``: the message a commit makes visible in its
    real topic and queue. Its properties string is the half message's, re-encoded (``REAL_TOPIC``,
    ``REAL_QID`` and ``TRAN_MSG`` stay in it: Java clears them from the map after building it)."""
    return half.to_put_again(
        topic=props[REAL_TOPIC],
        queue_id=int(props[REAL_QID]),
        properties=java_properties(props),
        sys_flag=reset_transaction_type(half.sys_flag, kind),
        prepared_transaction_offset=prepared_offset,
    )
