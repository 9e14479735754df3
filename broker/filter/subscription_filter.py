"""The store filter a consumer's subscription reads through (``store.message_filter.MessageFilter``).

Mirrors the filter-building part of ``PullMessageProcessor.processRequest``: a TAG subscription
reads through its tag hash codes (:class:`store.message_filter.TagsCodeFilter`, or no filter for
``*``); a SQL92 one through an :class:`~broker.filter.message_filter.ExpressionMessageFilter` (an
``ExpressionForRetryMessageFilter`` with ``filterSupportRetry``), built either from the
expression the request carries or from the one the group's heartbeat registered, with Java's
``FILTER_DATA_NOT_EXIST`` / ``FILTER_DATA_NOT_LATEST`` / ``enablePropertyFilter`` answers.

The filter goes to the store's one read (``MessageStore.get_message``), which applies it within
Java's ``maxFilterMessageSize`` scan window, and to long polling; it keeps nothing of one read,
so POP reads can build theirs here too.
"""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.filter.message_filter import (
    ConsumerFilterData,
    ConsumerFilterManager,
    ExpressionForRetryMessageFilter,
    ExpressionMessageFilter,
)
from codec.bodies.heartbeat import SUB_ALL, SubscriptionData
from codec.codes import ResponseCode
from codec.errors import RocketMQError
from store.message_filter import TagsCodeFilter


def tags_filter(subscription: SubscriptionData) -> TagsCodeFilter | None:
    """The filter of a TAG subscription; ``None`` when it accepts every message."""
    if subscription.sub_string.strip() in ("", SUB_ALL) or not subscription.code_set:
        return None
    return TagsCodeFilter(subscription.code_set)


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
