"""SQL92 filtering on the pull path: the pull's filter checks and the filtered read.

Mirrors the SQL92 parts of ``PullMessageProcessor.processRequest`` (which filter a pull uses, and
the ``FILTER_DATA_NOT_EXIST`` / ``FILTER_DATA_NOT_LATEST`` / ``enablePropertyFilter`` answers) and
the ``isMatchedByCommitLog`` step of ``DefaultMessageStore.getMessage``.

The store's read (``MessageStore.get_message``) filters by tag hash only, so a SQL92 pull reads
candidate records through it without a tag filter and keeps those whose properties match, going on
from where the store stopped until ``maxMsgNums`` matched, the scan window that Java's
``maxFilterMessageSize`` gives (``max(16000, maxMsgNums * 20)`` bytes of consume-queue units) is
used up, or the queue ends. Nothing matching in that window answers ``NO_MATCHED_MESSAGE`` with the
offset after it, so the client pulls again from there at once (PULL_RETRY_IMMEDIATELY), as in Java.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from broker.config import BrokerConfig
from broker.filter.message_filter import (
    ConsumerFilterData,
    ConsumerFilterManager,
    ExpressionForRetryMessageFilter,
    ExpressionMessageFilter,
)
from codec.bodies.heartbeat import SubscriptionData
from codec.codes import ResponseCode
from codec.errors import MessageFormatError, RocketMQError
from codec.message import decode_record
from codec.properties import decode_properties
from store.config import CQ_STORE_UNIT_SIZE
from store.message_filter import MessageFilter, TagsCodeFilter
from store.results import GetMessageResult, GetMessageStatus

MAX_FILTER_MESSAGE_SIZE = 16_000  # MessageStoreConfig.maxFilterMessageSize, bytes of CQ units

PullFilter = Collection[int] | ExpressionMessageFilter | None  # tag codes, a SQL92 filter, or all


class MessageReading(Protocol):
    def get_message(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        max_total_msg_size: int = ...,
        message_filter: MessageFilter | None = None,
    ) -> GetMessageResult: ...


def _message_filter(
    config: BrokerConfig,
    subscription: SubscriptionData,
    data: ConsumerFilterData | None,
    manager: ConsumerFilterManager,
) -> ExpressionMessageFilter:
    if not config.enable_property_filter:
        raise RocketMQError(
            f"The broker does not support consumer to filter message by {subscription.expression_type}",
            response_code=ResponseCode.SYSTEM_ERROR,
        )
    kind = ExpressionForRetryMessageFilter if config.filter_support_retry else ExpressionMessageFilter
    return kind(subscription, data, manager)


def filter_from_header(
    config: BrokerConfig,
    manager: ConsumerFilterManager,
    topic: str,
    group: str,
    expression: str | None,
    expression_type: str,
    sub_version: int,
) -> ExpressionMessageFilter:
    """The filter of a pull that carries its own SQL92 subscription (the SUBSCRIPTION flag).

    As in Java, an empty expression is ``SUBSCRIPTION_PARSE_FAILED``, while one that does not
    compile filters nothing (``ConsumerFilterManager.build`` gives null and the store then lets every
    message through); raises :class:`RocketMQError`.
    """
    if not expression:
        raise RocketMQError(
            "parse the consumer's subscription failed", response_code=ResponseCode.SUBSCRIPTION_PARSE_FAILED
        )
    subscription = SubscriptionData(
        topic=topic, sub_string=expression, sub_version=sub_version, expression_type=expression_type
    )
    data = ConsumerFilterData.build(topic, group, expression, expression_type, sub_version)
    return _message_filter(config, subscription, data, manager)


def filter_from_registered(
    config: BrokerConfig,
    manager: ConsumerFilterManager,
    group: str,
    registered: SubscriptionData,
    sub_version: int,
) -> ExpressionMessageFilter:
    """The filter of a pull that relies on the SQL92 subscription its heartbeat registered;
    raises :class:`RocketMQError` (FILTER_DATA_NOT_EXIST, FILTER_DATA_NOT_LATEST, SYSTEM_ERROR)."""
    data = manager.get(group, registered.topic, registered)
    if data is None:
        raise RocketMQError(
            "The broker's consumer filter data is not exist!Your expression may be wrong!",
            response_code=ResponseCode.FILTER_DATA_NOT_EXIST,
        )
    if data.client_version < sub_version:
        raise RocketMQError(
            "the consumer's consumer filter data not latest",
            response_code=ResponseCode.FILTER_DATA_NOT_LATEST,
        )
    return _message_filter(config, registered, data, manager)


def record_properties(record: bytes) -> dict[str, str] | None:
    """The properties of one stored record (``None`` when it cannot be decoded)."""
    try:
        return decode_properties(decode_record(record, with_body=False).properties)
    except MessageFormatError:
        return None


def get_message(
    store: MessageReading,
    topic: str,
    queue_id: int,
    offset: int,
    max_msg_nums: int,
    max_bytes: int,
    pull_filter: PullFilter,
) -> GetMessageResult:
    """A pull's read: the store's own for tag filters, the filtered scan for SQL92."""
    if not isinstance(pull_filter, ExpressionMessageFilter):
        tags = TagsCodeFilter(pull_filter) if pull_filter is not None else None
        return store.get_message(topic, queue_id, offset, max_msg_nums, max_bytes, tags)
    window = max(MAX_FILTER_MESSAGE_SIZE, max_msg_nums * CQ_STORE_UNIT_SIZE) // CQ_STORE_UNIT_SIZE
    first = store.get_message(topic, queue_id, offset, max_msg_nums, max_bytes, None)
    if first.status is not GetMessageStatus.FOUND:
        return first
    result = GetMessageResult(GetMessageStatus.NO_MATCHED_MESSAGE, offset, first.min_offset, first.max_offset)
    part: GetMessageResult | None = first
    total = 0
    while part is not None:
        for record, queue_offset in zip(part.buffers, part.queue_offsets, strict=True):
            if pull_filter.is_matched_by_commit_log(record_properties(record)):
                result.buffers.append(record)
                result.queue_offsets.append(queue_offset)
                total += len(record)
        result.next_begin_offset = part.next_begin_offset
        result.suggest_pulling_from_slave = part.suggest_pulling_from_slave
        left = max_msg_nums - len(result.buffers)
        scanned = part.next_begin_offset - offset
        if left <= 0 or total >= max_bytes or scanned >= window or part.next_begin_offset >= part.max_offset:
            break
        part = store.get_message(
            topic, queue_id, part.next_begin_offset, min(left, window - scanned), max_bytes - total, None
        )
        if part.status is not GetMessageStatus.FOUND:
            break
    if result.buffers:
        result.status = GetMessageStatus.FOUND
    return result
