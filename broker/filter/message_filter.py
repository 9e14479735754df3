"""Pull-time message filters and the per-subscription cache of compiled SQL92 expressions.

Mirrors ``org.apache.rocketmq.broker.filter``: ``ConsumerFilterData`` (a compiled expression and
the subscription version it was compiled for), ``ConsumerFilterManager`` (here only a cache keyed
by group and topic; Java's bloom-filter bit maps need the consume-queue extension, which is off by
default and not implemented) and ``ExpressionMessageFilter`` / ``ExpressionForRetryMessageFilter``,
the store's :class:`store.message_filter.MessageFilter` for a subscription:
``MessageReader.get_message`` asks them about every candidate record, and a held pull about every
arriving message.

A SQL92 subscription never filters at the consume-queue level (Java answers true there when no bloom
filter data exists); every candidate record's properties are decoded from the record and evaluated,
and only a result of TRUE matches: unknown (a missing property) and evaluation errors (a property
that does not convert to a number) do not, as in ``ExpressionMessageFilter.isMatchedByCommitLog``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from broker.filter.expressions import Expression
from broker.filter.java_values import JavaError
from broker.filter.parser import FilterCompileError, compile_sql92
from codec.bodies.heartbeat import EXPRESSION_SQL92, EXPRESSION_TAG, SUB_ALL, SubscriptionData
from codec.errors import MessageFormatError
from codec.message import decode_record
from codec.properties import RETRY_TOPIC, decode_properties

logger = logging.getLogger(__name__)

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"  # MixAll.RETRY_GROUP_TOPIC_PREFIX


def is_tag_type(expression_type: str | None) -> bool:
    """``ExpressionType.isTagType``: no type, an empty one or ``TAG``."""
    return not expression_type or expression_type == EXPRESSION_TAG


def compile_expression(expression_type: str, expression: str) -> Expression:
    """``FilterFactory.INSTANCE.get(type).compile(expression)``; raises :class:`FilterCompileError`.

    Only SQL92 is registered (as in Java); another type fails without a remark, as the
    ``NullPointerException`` Java hits there has no message.
    """
    if expression_type != EXPRESSION_SQL92:
        raise FilterCompileError("")
    return compile_sql92(expression)


class ConsumerFilterData:
    """A subscription's compiled expression, for one subscription version."""

    __slots__ = ("client_version", "compiled", "consumer_group", "expression", "expression_type", "topic")

    def __init__(
        self,
        topic: str,
        consumer_group: str,
        expression: str,
        expression_type: str,
        client_version: int,
        compiled: Expression,
    ) -> None:
        self.topic = topic
        self.consumer_group = consumer_group
        self.expression = expression
        self.expression_type = expression_type
        self.client_version = client_version
        self.compiled = compiled

    @classmethod
    def build(
        cls, topic: str, group: str, expression: str, expression_type: str, client_version: int
    ) -> ConsumerFilterData | None:
        """``ConsumerFilterManager.build``: ``None`` for a TAG type or an expression that fails."""
        if is_tag_type(expression_type):
            return None
        try:
            compiled = compile_expression(expression_type, expression)
        except FilterCompileError as err:
            logger.error("parse error: expr=%s, topic=%s, group=%s, error=%s", expression, topic, group, err)
            return None
        return cls(topic, group, expression, expression_type, client_version, compiled)


class ConsumerFilterManager:
    """Compiled filters by (group, topic), recompiled only when the subscription changes."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], ConsumerFilterData] = {}
        self.compiles = 0  # statistics: how many times an expression was (re)compiled here

    def get(
        self, group: str, topic: str, subscription: SubscriptionData | None = None
    ) -> ConsumerFilterData | None:
        """The filter of ``group`` on ``topic``; with ``subscription``, (re)built first when it is
        newer than the cached one or its expression differs. ``None``: no SQL92 filter (a TAG
        subscription, an expression that does not compile, or nothing registered)."""
        key = (group, topic)
        cached = self._by_key.get(key)
        if subscription is None or is_tag_type(subscription.expression_type):
            if subscription is not None:
                self._by_key.pop(key, None)
            return cached if subscription is None else None
        if (
            cached is not None
            and cached.expression == subscription.sub_string
            and cached.expression_type == subscription.expression_type
            and cached.client_version >= subscription.sub_version
        ):
            return cached
        built = ConsumerFilterData.build(
            topic, group, subscription.sub_string, subscription.expression_type, subscription.sub_version
        )
        self.compiles += 1
        if built is None:
            self._by_key.pop(key, None)
        else:
            self._by_key[key] = built
        return built

    def remove_group(self, group: str) -> None:
        """Forget a group's filters (its last consumer left)."""
        for key in [k for k in self._by_key if k[0] == group]:
            del self._by_key[key]

    def statistics(self) -> dict[str, int]:
        return {"filters": len(self._by_key), "compiles": self.compiles}


class ExpressionMessageFilter:
    """Whether a candidate message matches a subscription (``MessageFilter`` of Java's store).

    It keeps nothing of one read, so every pull, held pull or POP read of the subscription may
    share it."""

    __slots__ = ("_evaluates", "code_set", "filter_data", "manager", "subscription")

    def __init__(
        self,
        subscription: SubscriptionData,
        filter_data: ConsumerFilterData | None,
        manager: ConsumerFilterManager | None = None,
    ) -> None:
        self.subscription = subscription
        self.filter_data = filter_data
        self.manager = manager
        self.code_set = frozenset(subscription.code_set)
        # Class-filter and TAG subscriptions pass the commit-log check without decoding anything.
        self._evaluates = self.is_sql and not subscription.class_filter_mode

    @property
    def is_sql(self) -> bool:
        return not is_tag_type(self.subscription.expression_type)

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        """Tag hash check for TAG subscriptions; always true for SQL92 (no bloom filter data)."""
        sub = self.subscription
        if sub.class_filter_mode or self.is_sql or tags_code is None or sub.sub_string == SUB_ALL:
            return True
        return tags_code in self.code_set

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        """Evaluate the compiled expression on the properties decoded from the stored record; TRUE
        matches, anything else (FALSE, unknown, an evaluation error) does not. TAG subscriptions
        always match here, and the record is decoded only when there is an expression to evaluate."""
        return not self._evaluates or self._matches(record, None)

    def is_matched_by_properties(self, properties: Mapping[str, str]) -> bool:
        """:meth:`is_matched_by_commit_log` on properties already decoded (an arriving message)."""
        return not self._evaluates or self._matches(None, properties)

    def _matches(self, record: bytes | None, properties: Mapping[str, str] | None) -> bool:
        """Java's ``isMatchedByCommitLog(msgBuffer, properties)`` past the TAG check: the
        properties given, else those of ``record``, decoded only when there is an expression."""
        data = self.filter_data
        if data is None:  # no expression: Java lets the message through
            return True
        return _evaluate(data, _properties_of(record, properties))


class ExpressionForRetryMessageFilter(ExpressionMessageFilter):
    """``filterSupportRetry=true``: a SQL92 subscription of a retry topic is judged by the filter
    the group registered for the message's original topic (its ``RETRY_TOPIC`` property)."""

    __slots__ = ()

    def _matches(self, record: bytes | None, properties: Mapping[str, str] | None) -> bool:
        topic = self.subscription.topic
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX) or self.manager is None:
            return super()._matches(record, properties)
        properties = _properties_of(record, properties)  # the original topic is one of them
        real_topic = properties.get(RETRY_TOPIC)
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        data = self.manager.get(group, real_topic) if real_topic is not None else None
        return data is None or _evaluate(data, properties)


def record_properties(record: bytes) -> Mapping[str, str]:
    """The properties of one stored record (``MessageDecoder.decodeProperties``); none when the
    record cannot be decoded, so that only an expression true without properties matches it."""
    try:
        return decode_properties(decode_record(record, with_body=False).properties)
    except MessageFormatError:
        return {}


def _properties_of(record: bytes | None, properties: Mapping[str, str] | None) -> Mapping[str, str]:
    if properties is not None:
        return properties
    return record_properties(record) if record is not None else {}


def _evaluate(data: ConsumerFilterData, properties: Mapping[str, str]) -> bool:
    try:
        return data.compiled.evaluate(properties) is True
    except JavaError as err:
        logger.debug("Message Filter error, %s, %s: %s", data.expression, properties, err)
        return False
