"""SQL92 message filters (``org.apache.rocketmq.filter`` and ``org.apache.rocketmq.broker.filter``).

:func:`~broker.filter.parser.compile_sql92` turns an expression into a compiled tree (or a
:class:`~broker.filter.parser.FilterCompileError` whose text is the real broker's remark);
:class:`~broker.filter.message_filter.ExpressionMessageFilter` is the store's ``MessageFilter`` that
applies it to a record's properties during the store's read; :mod:`broker.filter.subscription_filter`
builds the filter a consumer's subscription reads through.
"""

from broker.filter.message_filter import (
    ConsumerFilterData,
    ConsumerFilterManager,
    ExpressionForRetryMessageFilter,
    ExpressionMessageFilter,
    compile_expression,
    is_tag_type,
)
from broker.filter.parser import FilterCompileError, compile_sql92

__all__ = [
    "ConsumerFilterData",
    "ConsumerFilterManager",
    "ExpressionForRetryMessageFilter",
    "ExpressionMessageFilter",
    "FilterCompileError",
    "compile_expression",
    "compile_sql92",
    "is_tag_type",
]
