"""The compiled form of a SQL92 filter: a tree of expression objects evaluated per message.

Mirrors ``org.apache.rocketmq.filter.expression``: ``ConstantExpression`` (and
``BooleanConstantExpression``), ``PropertyExpression``, ``UnaryExpression`` (negate, NOT, boolean
cast, IN), ``ComparisonExpression`` (=, ordering, CONTAINS/STARTSWITH/ENDSWITH) and
``LogicExpression`` (AND, OR). ``evaluate`` returns a Java value (see
:mod:`broker.filter.java_values`): ``True``/``False``, ``None`` for SQL's unknown, or a number or
string; a Java exception the real filter would throw surfaces as :class:`JavaError`, and the
message filter then treats the message as not matching, as ``ExpressionMessageFilter`` does.

The rules that matter to users, all as in Java:

* a missing property is ``None``: every comparison with it is unknown, so it never matches, and
  ``NOT`` of unknown is unknown too; only ``IS NULL`` / ``IS NOT NULL`` see it;
* AND/OR use three-valued logic (``FALSE AND unknown`` is false, ``TRUE OR unknown`` is true);
* property values are strings; a comparison with a number converts the string with
  ``Integer.valueOf`` / ``Long.valueOf`` / ``Double.valueOf`` after the literal's class, and a
  string that does not convert makes the whole expression fail for that message;
* ``>``/``<`` between two properties compares them as doubles;
* a property on its own (``WHERE flag``) is a boolean cast: strings are never ``Boolean`` in a
  message, so it is false (unknown when missing).

``str()`` of a node is Java's ``toString()``, which the parser quotes in its error remarks.
"""

from __future__ import annotations

from collections.abc import Mapping

from broker.filter.java_values import (
    JavaError,
    JavaInt,
    JavaValue,
    compare_doubles,
    compare_values,
    double_to_string,
    java_equals,
    parse_double,
    runtime_error,
    wrap_int,
    wrap_long,
)
from codec.hashing import java_string_hash

Context = Mapping[str, str]  # a message's properties (MessageEvaluationContext)


def java_hash_set_order(items: list[str]) -> list[str]:
    """Iteration order of ``new HashSet<>(items)``: bucket by spread hash, then insertion order."""
    wanted = max(int(len(items) / 0.75) + 1, 16)  # HashSet(Collection) initial capacity
    capacity = 1 << (wanted - 1).bit_length()  # HashMap.tableSizeFor
    buckets: dict[int, list[str]] = {}
    for item in dict.fromkeys(items):
        h = java_string_hash(item) & 0xFFFFFFFF
        buckets.setdefault((h ^ (h >> 16)) & (capacity - 1), []).append(item)
    return [item for index in sorted(buckets) for item in buckets[index]]


class Expression:
    """``Expression``: evaluates to a Java value."""

    __slots__ = ()
    is_boolean = False  # implements BooleanExpression

    def evaluate(self, context: Context) -> JavaValue:
        raise NotImplementedError

    def matches(self, context: Context) -> bool:
        """``BooleanExpression.matches``: true only when the value is TRUE."""
        return self.evaluate(context) is True


class Constant(Expression):
    """``ConstantExpression``; ``boolean=True`` for ``BooleanConstantExpression`` (TRUE, FALSE, NULL)."""

    __slots__ = ("is_boolean", "value")

    def __init__(self, value: JavaValue, *, boolean: bool = False) -> None:
        self.value = value
        self.is_boolean = boolean

    def evaluate(self, context: Context) -> JavaValue:
        return self.value

    def __str__(self) -> str:
        value = self.value
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, str):
            return "'" + value.replace("'", "''") + "'"
        if isinstance(value, float):
            return double_to_string(value)
        return str(int(value))


NULL = Constant(None, boolean=True)
TRUE = Constant(True, boolean=True)
FALSE = Constant(False, boolean=True)


class Property(Expression):
    """``PropertyExpression``: the message property of that name (``TAGS`` is one of them)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def evaluate(self, context: Context) -> JavaValue:
        return context.get(self.name)

    def __str__(self) -> str:
        return self.name


class Unary(Expression):
    """``UnaryExpression``: an operator applied to one operand, ``right``."""

    __slots__ = ("right",)

    def __init__(self, right: Expression) -> None:
        self.right = right


class Negate(Unary):
    """Unary minus: numbers only, anything else (a string property) is null."""

    __slots__ = ()

    def evaluate(self, context: Context) -> JavaValue:
        value = self.right.evaluate(context)
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return None
        if isinstance(value, float):
            return -value
        return wrap_int(-value) if isinstance(value, JavaInt) else wrap_long(-value)

    def __str__(self) -> str:
        return f"(- {self.right})"


class Not(Unary):
    __slots__ = ()
    is_boolean = True

    def evaluate(self, context: Context) -> JavaValue:
        value = self.right.evaluate(context)
        return None if value is None else not value

    def __str__(self) -> str:
        return f"(NOT {self.right})"


class BooleanCast(Unary):
    """A property used as a condition: TRUE only for a Boolean value, which properties never are."""

    __slots__ = ()
    is_boolean = True

    def evaluate(self, context: Context) -> JavaValue:
        value = self.right.evaluate(context)
        if value is None:
            return None
        return value if isinstance(value, bool) else False

    def __str__(self) -> str:
        return str(self.right)


class In(Expression):
    """``prop [NOT] IN ('a', 'b')``: string values only; a missing property is unknown."""

    __slots__ = ("_set", "items", "negated", "right")
    is_boolean = True

    def __init__(self, right: Property, items: list[str], negated: bool) -> None:
        self.right = right
        self.items = list(items)
        self.negated = negated
        self._set = frozenset(items)

    def evaluate(self, context: Context) -> JavaValue:
        value = self.right.evaluate(context)
        if not isinstance(value, str):
            return None
        return (value in self._set) ^ self.negated

    def __str__(self) -> str:
        symbol = "NOT IN" if self.negated else "IN"
        # Java keeps lists of five or more in a HashSet, so its toString shows them in that order.
        shown = self.items if len(self.items) < 5 else java_hash_set_order(self.items)
        return f"{self.right} {symbol} ( {', '.join(shown)} )"


class StringMatch(Expression):
    """``[NOT] CONTAINS`` / ``STARTSWITH`` / ``ENDSWITH 'text'``: false for an empty search text,
    a missing property or a non-string value, whether negated or not."""

    __slots__ = ("negated", "operator", "right", "search")
    is_boolean = True

    def __init__(self, right: Expression, operator: str, search: str, negated: bool) -> None:
        self.right = right
        self.operator = operator
        self.search = search
        self.negated = negated

    def evaluate(self, context: Context) -> JavaValue:
        if not self.search:
            return False
        value = self.right.evaluate(context)
        if not isinstance(value, str):
            return False
        if self.operator == "CONTAINS":
            hit = self.search in value
        elif self.operator == "STARTSWITH":
            hit = value.startswith(self.search)
        else:
            hit = value.endswith(self.search)
        return hit != self.negated

    def __str__(self) -> str:
        return f"({'NOT ' if self.negated else ''}{self.operator} {self.right})"


class Equal(Expression):
    """``=`` (and, through NOT, ``<>``, ``IS NULL``, ``IS NOT NULL``): ``doCreateEqual``."""

    __slots__ = ("left", "right")
    is_boolean = True

    def __init__(self, left: Expression, right: Expression) -> None:
        self.left = left
        self.right = right

    def evaluate(self, context: Context) -> JavaValue:
        lv = self.left.evaluate(context)
        rv = self.right.evaluate(context)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        if lv is None or java_equals(lv, rv):
            return True
        return compare_values(lv, rv) == 0

    def __str__(self) -> str:
        return f"({self.left} == {self.right})"


class Ordering(Expression):
    """``>``, ``>=``, ``<``, ``<=``: null when either side is; two strings compare as doubles."""

    __slots__ = ("left", "right", "symbol")
    is_boolean = True

    def __init__(self, left: Expression, right: Expression, symbol: str) -> None:
        self.left = left
        self.right = right
        self.symbol = symbol

    def evaluate(self, context: Context) -> JavaValue:
        lv = self.left.evaluate(context)
        if lv is None:
            return None
        rv = self.right.evaluate(context)
        if rv is None:
            return None
        if isinstance(lv, str) and isinstance(rv, str):
            try:
                answer = compare_doubles(parse_double(lv), parse_double(rv))
            except JavaError as err:
                raise runtime_error(
                    f"It's illegal to compare string by '>=', '>', '<', '<='. lv={lv}, rv={rv}"
                ) from err
        else:
            answer = compare_values(lv, rv)
        symbol = self.symbol
        if symbol == ">":
            return answer > 0
        if symbol == ">=":
            return answer >= 0
        if symbol == "<":
            return answer < 0
        return answer <= 0

    def __str__(self) -> str:
        return f"({self.left} {self.symbol} {self.right})"


class Logic(Expression):
    """``LogicExpression``: three-valued AND/OR over two boolean expressions.

    ``deciding`` is the value that settles the answer from one side alone (FALSE for AND, TRUE
    for OR); the right side is evaluated only when the left one does not settle it, and an unknown
    side makes the answer unknown unless the other side settles it.
    """

    __slots__ = ("left", "right")
    is_boolean = True
    deciding: bool
    symbol: str

    def __init__(self, left: Expression, right: Expression) -> None:
        self.left = left
        self.right = right

    def evaluate(self, context: Context) -> JavaValue:
        deciding = self.deciding
        lv = self.left.evaluate(context)
        if lv is deciding:
            return deciding
        rv = self.right.evaluate(context)
        if rv is deciding:
            return deciding
        return None if lv is None or rv is None else not deciding

    def __str__(self) -> str:
        return f"({self.left} {self.symbol} {self.right})"


class And(Logic):
    """``LogicExpression.createAND``."""

    __slots__ = ()
    deciding = False
    symbol = "&&"


class Or(Logic):
    """``LogicExpression.createOR``."""

    __slots__ = ()
    deciding = True
    symbol = "||"
