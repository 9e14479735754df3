"""Pull-time message filters and the per-subscription cache of compiled SQL92 expressions.

Mirrors ``org.apache.rocketmq.broker.filter``: ``ConsumerFilterData`` (a compiled expression and
the subscription version it was compiled for), ``ConsumerFilterManager`` (here only a cache keyed
by group and topic; Java's bloom-filter bit maps need the consume-queue extension, which is off by
default and not implemented) and ``ExpressionMessageFilter`` / ``ExpressionForRetryMessageFilter``
(what ``DefaultMessageStore.getMessage`` asks about every candidate record).

A SQL92 subscription never filters at the consume-queue level (Java answers true there when no bloom
filter data exists); every candidate record's properties are evaluated, and only a result of TRUE
matches: unknown (a missing property) and evaluation errors (a property that does not convert to a
number) do not, as in ``ExpressionMessageFilter.isMatchedByCommitLog``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from broker.filter.expressions import Expression
from broker.filter.java_values import JavaError
from broker.filter.parser import FilterCompileError, compile_sql92
from codec.bodies.heartbeat import EXPRESSION_SQL92, EXPRESSION_TAG, SUB_ALL, SubscriptionData
from codec.properties import RETRY_TOPIC

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
    """Whether a candidate record matches a subscription (``MessageFilter`` of Java's store)."""

    __slots__ = ("code_set", "filter_data", "manager", "subscription")

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

    @property
    def is_sql(self) -> bool:
        return not is_tag_type(self.subscription.expression_type)

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        """Tag hash check for TAG subscriptions; always true for SQL92 (no bloom filter data)."""
        sub = self.subscription
        if sub.class_filter_mode or self.is_sql or tags_code is None or sub.sub_string == SUB_ALL:
            return True
        return tags_code in self.code_set

    def is_matched_by_commit_log(self, properties: Mapping[str, str] | None) -> bool:
        """Evaluate the compiled expression on the record's properties; TRUE matches, anything
        else (FALSE, unknown, an evaluation error) does not. TAG subscriptions always match here."""
        sub = self.subscription
        if sub.class_filter_mode or not self.is_sql:
            return True
        return _evaluate(self._filter_for(properties), properties)

    def _filter_for(self, properties: Mapping[str, str] | None) -> ConsumerFilterData | None:
        return self.filter_data


class ExpressionForRetryMessageFilter(ExpressionMessageFilter):
    """``filterSupportRetry=true``: a SQL92 subscription of a retry topic is judged by the filter
    the group registered for the message's original topic (its ``RETRY_TOPIC`` property)."""

    __slots__ = ()

    def _filter_for(self, properties: Mapping[str, str] | None) -> ConsumerFilterData | None:
        topic = self.subscription.topic
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX) or self.manager is None:
            return self.filter_data
        real_topic = (properties or {}).get(RETRY_TOPIC)
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        return self.manager.get(group, real_topic) if real_topic is not None else None


def _evaluate(data: ConsumerFilterData | None, properties: Mapping[str, str] | None) -> bool:
    if data is None:  # no expression: Java lets the message through
        return True
    try:
        return data.compiled.evaluate(properties or {}) is True
    except JavaError as err:
        logger.debug("Message Filter error, %s, %s: %s", data.expression, properties, err)
        return False
