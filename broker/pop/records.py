"""The records POP writes to ``rmq_sys_REVIVE_LOG_<cluster>``, and the POP settings of broker.conf.

Mirrors ``PopMessageProcessor.buildCkMsg``, ``genCkUniqueId``/``genAckUniqueId``/
``genBatchAckUniqueId``, the record half of ``AckMessageProcessor.appendAck`` and
``PopAckConstants``. A record carries ``TIMER_DELIVER_MS`` (a checkpoint ``popTime + invisibleTime
- 1000``, an ack ``popTime + invisibleTime``), so, as on the Java broker, the put routes it through
the timer topic and it reaches the revive queue only at that time (``HookUtils.handleScheduleMessage``):
the reviver then sees a checkpoint shortly before it is due, and its acks next to it.
"""

from __future__ import annotations

import dataclasses

from broker.config import BrokerConfig
from broker.timer.service import TIMER_DELIVER_MS
from codec.bodies.pop import AckMsg, BatchAckMsg, PopCheckPoint
from codec.message import MessageRecord, make_system_record
from codec.properties import TAGS, UNIQ_KEY, encode_properties

REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"  # PopAckConstants.REVIVE_TOPIC
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"  # PopAckConstants.REVIVE_GROUP
CK_TAG = "ck"
ACK_TAG = "ack"
BATCH_ACK_TAG = "bAck"
ACK_TIME_INTERVAL_MS = 1000  # PopAckConstants.ackTimeInterval
FIRST_POP_TIME = "1ST_POP_TIME"  # MessageConst.PROPERTY_FIRST_POP_TIME
MAX_BATCH_NUMS = 32  # PopMessageProcessor: maxMsgNums above it is INVALID_PARAMETER


def revive_topic(cluster: str) -> str:
    """``PopAckConstants.buildClusterReviveTopic``."""
    return REVIVE_TOPIC_PREFIX + cluster


def _int(extra: dict[str, str], key: str, default: int, low: int, high: int) -> int:
    text = extra.get(key)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"{key}={text!r} is not a number") from None
    if not low <= value <= high:
        raise ValueError(f"{key}={value} is outside {low}..{high}")
    return value


def _bool(extra: dict[str, str], key: str, default: bool) -> bool:
    text = extra.get(key)
    return default if text is None else text.strip().lower() == "true"


@dataclasses.dataclass(frozen=True, slots=True)
class PopConfig:
    """The POP keys of ``BrokerConfig`` (Java's defaults), read from broker.conf's extra keys."""

    revive_queue_num: int = 8
    revive_interval_ms: int = 1000
    pop_from_retry_probability: int = 20
    pop_from_retry_probability_for_priority: int = 0  # 5.4+: for a priority topic's POP
    enable_retry_topic_v2: bool = False
    retrieve_message_from_pop_retry_topic_v1: bool = True
    pop_polling_size: int = 1024
    max_pop_polling_size: int = 100_000
    enable_pop_message_threshold: bool = False
    pop_inflight_message_threshold: int = 10_000
    init_pop_offset_by_check_msg_in_mem: bool = True
    default_message_request_mode: str = "PULL"
    default_pop_share_queue_num: int = -1

    @classmethod
    def of(cls, config: BrokerConfig) -> PopConfig:
        """Raises ``ValueError`` naming the key of a malformed or impossible value."""
        extra = config.extra
        return cls(
            revive_queue_num=_int(extra, "reviveQueueNum", 8, 1, 1024),
            revive_interval_ms=_int(extra, "reviveInterval", 1000, 10, 3_600_000),
            pop_from_retry_probability=_int(extra, "popFromRetryProbability", 20, 0, 100),
            pop_from_retry_probability_for_priority=_int(
                extra, "popFromRetryProbabilityForPriority", 0, 0, 100
            ),
            enable_retry_topic_v2=_bool(extra, "enableRetryTopicV2", False),
            retrieve_message_from_pop_retry_topic_v1=_bool(extra, "retrieveMessageFromPopRetryTopicV1", True),
            pop_polling_size=_int(extra, "popPollingSize", 1024, 0, 1 << 20),
            max_pop_polling_size=_int(extra, "maxPopPollingSize", 100_000, 0, 1 << 24),
            enable_pop_message_threshold=_bool(extra, "enablePopMessageThreshold", False),
            pop_inflight_message_threshold=_int(extra, "popInflightMessageThreshold", 10_000, 0, 1 << 30),
            init_pop_offset_by_check_msg_in_mem=_bool(extra, "initPopOffsetByCheckMsgInMem", True),
            default_message_request_mode=extra.get("defaultMessageRequestMode", "PULL"),
            default_pop_share_queue_num=_int(extra, "defaultPopShareQueueNum", -1, -1, 1 << 20),
        )


def ck_unique_id(ck: PopCheckPoint) -> str:
    """``PopMessageProcessor.genCkUniqueId``."""
    return f"{ck.topic}@{ck.queue_id}@{ck.start_offset}@{ck.group}@{ck.pop_time}@{ck.broker_name}@{CK_TAG}"


def ack_unique_id(ack: AckMsg | BatchAckMsg) -> str:
    """``genAckUniqueId`` (a batch ack's final ``UNIQ_KEY`` is this form too, with ``ao`` -1)."""
    return (
        f"{ack.topic}@{ack.queue_id}@{ack.ack_offset}@{ack.group}@{ack.pop_time}@{ack.broker_name}@{ACK_TAG}"
    )


def _record(
    topic: str,
    queue_id: int,
    body: bytes,
    tag: str,
    uniq: str,
    deliver_ms: int,
    now_ms: int,
    host: bytes,
    port: int,
) -> tuple[MessageRecord, dict[str, str]]:
    props = {TAGS: tag, UNIQ_KEY: uniq, TIMER_DELIVER_MS: str(deliver_ms)}
    return make_system_record(topic, queue_id, body, encode_properties(props), now_ms, host, port), props


def ck_record(
    ck: PopCheckPoint, topic: str, revive_qid: int, now_ms: int, host: bytes, port: int
) -> tuple[MessageRecord, dict[str, str]]:
    """``buildCkMsg``: the checkpoint, due one second before its revive time."""
    deliver = ck.revive_time - ACK_TIME_INTERVAL_MS
    return _record(topic, revive_qid, ck.encode(), CK_TAG, ck_unique_id(ck), deliver, now_ms, host, port)


def ack_record(
    ack: AckMsg | BatchAckMsg,
    topic: str,
    revive_qid: int,
    invisible_time: int,
    now_ms: int,
    host: bytes,
    port: int,
) -> tuple[MessageRecord, dict[str, str]]:
    """``appendAck``'s record: ``ack`` or ``bAck``, due at the checkpoint's revive time."""
    tag = BATCH_ACK_TAG if isinstance(ack, BatchAckMsg) else ACK_TAG
    deliver = ack.pop_time + invisible_time
    return _record(topic, revive_qid, ack.encode(), tag, ack_unique_id(ack), deliver, now_ms, host, port)
