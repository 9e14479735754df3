"""The message filter of a POP request (``PopMessageProcessor``'s ``ExpressionMessageFilter``).

TAG expressions become the store's :class:`store.message_filter.TagsCodeFilter` (``*`` or empty:
no filter). A SQL92 expression is compiled once per request (``ConsumerFilterManager.build``); one
that does not compile is ``SUBSCRIPTION_PARSE_FAILED``. As in 5.3.3, POP evaluates SQL92 whatever
``enablePropertyFilter`` says (only PULL subscriptions check it), and the same filter applies to the
POP retry topic.

Both are the store's ``MessageFilter``: the store asks them about each unit and record it reads.
"""

from __future__ import annotations

from broker.filter import ExpressionMessageFilter, is_tag_type
from broker.filter.message_filter import ConsumerFilterData
from codec.bodies.heartbeat import SubscriptionData
from codec.codes import ResponseCode
from codec.errors import RocketMQError
from store.message_filter import MessageFilter, TagsCodeFilter


def pop_message_filter(
    topic: str, group: str, expression: str | None, expression_type: str, now_ms: int
) -> MessageFilter | None:
    """The filter of a POP request; raises RocketMQError(SUBSCRIPTION_PARSE_FAILED)."""
    if not expression:
        return None
    if is_tag_type(expression_type):
        sub = SubscriptionData.build(topic, expression)
        return TagsCodeFilter(sub.code_set) if sub.code_set else None
    data = ConsumerFilterData.build(topic, group, expression, expression_type, now_ms)
    if data is None:
        raise RocketMQError(
            "parse the consumer's subscription failed", response_code=ResponseCode.SUBSCRIPTION_PARSE_FAILED
        )
    subscription = SubscriptionData(topic=topic, sub_string=expression, expression_type=expression_type)
    return ExpressionMessageFilter(subscription, data)
