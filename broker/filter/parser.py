"""The SQL92 filter parser: text to a compiled :class:`~broker.filter.expressions.Expression`.

Mirrors ``org.apache.rocketmq.filter.parser.SelectorParser`` (generated from ``SelectorParser.jj``)
production by production, including its checks at parse time (``ComparisonExpression.create*``,
``ConstantExpression.createFromDecimal`` / ``createFloat``, ``asBooleanExpression``) and its
quirks, because clients see them:

* the top rule does not require the end of input: ``a = 1 b`` is ``a = 1`` (tokens after a
  complete expression are ignored, but the one token the parser peeks at must still be valid);
* ``0.0`` (any float literal below ``Double.MIN_VALUE``) is refused, negative numbers are a
  negation of a positive literal, integer literals outside the ``Long`` range are refused;
* ``IN`` lists hold string literals only and need a property on the left; ``>`` and its kin
  refuse string and boolean literals; ``= NULL`` is refused (``IS NULL`` is the way);
* ``BETWEEN`` of two literals checks that the lower bound is not above the upper one.

Every failure is a :class:`FilterCompileError` whose message is what the real broker answers in
the remark of ``SUBSCRIPTION_PARSE_FAILED``: the ``toString()`` of the Java exception behind it,
e.g. ``org.apache.rocketmq.filter.parser.ParseException: Encountered " <ID> "b "" at line 1,
column 3.`` followed by the tokens the parser expected (that list is ours; JavaCC's may name
more alternatives). Results, failures included, are cached per text like ``PARSE_CACHE``.
"""

from __future__ import annotations

from collections import OrderedDict

from broker.filter import expressions as ex
from broker.filter.java_values import (
    DOUBLE_MAX,
    DOUBLE_MAX_TEXT,
    DOUBLE_MIN,
    DOUBLE_MIN_TEXT,
    INT_MAX,
    INT_MIN,
    JavaError,
    JavaInt,
    JavaLong,
    compare_values,
    number_format_error,
    parse_long,
    runtime_error,
    to_java_string,
)
from broker.filter.tokenizer import DECIMAL, EOF, FLOATING, ID, STRING, Token, Tokenizer
from codec.errors import RocketMQError

PARSE_EXCEPTION = "org.apache.rocketmq.filter.parser.ParseException"
PARSE_CACHE_SIZE = 100  # SelectorParser.PARSE_CACHE maximumSize
_SUBSCRIPTION_PARSE_FAILED = 23  # ResponseCode.SUBSCRIPTION_PARSE_FAILED
_ORDERING = (">", ">=", "<", "<=")
_NEGATABLE = ("CONTAINS", "STARTSWITH", "ENDSWITH", "BETWEEN", "IN")
_COMPARISON_STARTS = (*_ORDERING, *_NEGATABLE, "NOT")
_PRIMARY_STARTS = (STRING, DECIMAL, FLOATING, "TRUE", "FALSE", "NULL", ID, "(")
# What JavaCC lists as expected, in its order (token ordinals), for the parser's dead ends.
_EXPECT_UNARY = ("NOT", "TRUE", "FALSE", "NULL", DECIMAL, FLOATING, STRING, ID, "(", "-", "+")
_EXPECT_AFTER_NOT = ("BETWEEN", "IN", "CONTAINS", "STARTSWITH", "ENDSWITH", ">", ">=", "<", "<=")
_EXPECT_AFTER_IS = ("NOT", "NULL")
_EXPECT_CLOSE = (
    "NOT", "AND", "OR", "BETWEEN", "IN", "IS", "CONTAINS", "STARTSWITH", "ENDSWITH",
    "=", "<>", ">", ">=", "<", "<=", ")",
)  # fmt: skip
_EXPECT_IN_LIST = (",", ")")
_TOKEN_CLASSES = (EOF, DECIMAL, FLOATING, STRING, ID)


class FilterCompileError(RocketMQError):
    """A SQL92 expression the real broker would refuse; ``str()`` is its remark."""

    response_code = _SUBSCRIPTION_PARSE_FAILED


def _parse_error(message: str) -> JavaError:
    return JavaError(PARSE_EXCEPTION, message)


def _quoted(kind: str) -> str:
    return kind if kind in _TOKEN_CLASSES else f'"{kind}"'


class SelectorParser:
    """One parse of one expression (``new SelectorParser(sql).parse()``)."""

    def __init__(self, text: str) -> None:
        self._tokens = Tokenizer(text)
        self._ahead: list[Token] = []

    # -- token access -----------------------------------------------------------------------------

    def _peek(self, n: int = 0) -> Token:
        while len(self._ahead) <= n:
            self._ahead.append(self._tokens.next())
        return self._ahead[n]

    def _take(self) -> Token:
        token = self._peek()
        self._ahead.pop(0)
        return token

    def _expect(self, kind: str, expected: tuple[str, ...] = ()) -> Token:
        """Take a token of ``kind``; else the ParseException naming ``expected`` (default: ``kind``)."""
        if self._peek().kind != kind:
            raise self._unexpected(expected or (kind,))
        return self._take()

    def _unexpected(self, expected: tuple[str, ...]) -> JavaError:
        """JavaCC's ``ParseException``: the offending token, its position, what would have done."""
        token = self._peek()
        shown = EOF if token.kind == EOF else f" {token.describe()}"
        lead = "Was expecting:" if len(expected) == 1 else "Was expecting one of:"
        wanted = "".join(f"\n    {_quoted(k)} {'' if k == EOF else '...'}" for k in expected)
        return _parse_error(
            f'Encountered "{shown}" at line {token.line}, column {token.column}.\n{lead}{wanted}\n    '
        )

    # -- grammar ------------------------------------------------------------------------------------

    def parse(self) -> ex.Expression:
        """``JmsSelector``: an OR expression that must be boolean; raises :class:`JavaError`."""
        return self._as_boolean(self._or())

    def _or(self) -> ex.Expression:
        left = self._and()
        while self._peek().kind == "OR":
            self._take()
            right = self._and()
            left = ex.Or(self._as_boolean(left), self._as_boolean(right))
        return left

    def _and(self) -> ex.Expression:
        left = self._equality()
        while self._peek().kind == "AND":
            self._take()
            right = self._equality()
            left = ex.And(self._as_boolean(left), self._as_boolean(right))
        return left

    def _equality(self) -> ex.Expression:
        left = self._comparison()
        while (kind := self._peek().kind) in ("=", "<>", "IS"):
            self._take()
            if kind == "=":
                left = create_equal(left, self._comparison())
            elif kind == "<>":
                left = ex.Not(create_equal(left, self._comparison()))
            elif self._peek().kind == "NULL":
                self._take()
                left = ex.Equal(left, ex.NULL)
            else:
                self._expect("NOT", _EXPECT_AFTER_IS)
                self._expect("NULL")
                left = ex.Not(ex.Equal(left, ex.NULL))
        return left

    def _comparison(self) -> ex.Expression:
        left = self._unary()
        while (kind := self._peek().kind) in _COMPARISON_STARTS:
            negated = kind == "NOT"
            if negated:
                if self._peek(1).kind not in _NEGATABLE:
                    raise self._unexpected(_EXPECT_AFTER_NOT)
                self._take()
                kind = self._peek().kind
            self._take()
            if kind in _ORDERING:
                left = create_ordering(left, self._unary(), kind)
            elif kind == "BETWEEN":
                low = self._unary()
                self._expect("AND")
                high = self._unary()
                left = create_not_between(left, low, high) if negated else create_between(left, low, high)
            elif kind == "IN":
                self._expect("(")
                items = [self._string()]
                while self._peek().kind == ",":
                    self._take()
                    items.append(self._string())
                self._expect(")", _EXPECT_IN_LIST)
                left = create_in(left, items, negated)
            else:
                left = ex.StringMatch(left, kind, self._string(), negated)
        return left

    def _unary(self) -> ex.Expression:
        token = self._peek()
        if token.kind == "+":
            self._take()
            try:
                return self._unary()
            except JavaError as err:  # Java's syntactic lookahead blames the "+" itself
                if err.java_class != PARSE_EXCEPTION or "Encountered" not in str(err):
                    raise
                self._ahead.insert(0, token)
                raise self._unexpected(_EXPECT_UNARY[:-1]) from err
        if token.kind == "-":
            self._take()
            return ex.Negate(self._unary())
        if token.kind == "NOT":
            self._take()
            return ex.Not(self._as_boolean(self._unary()))
        return self._primary()

    def _primary(self) -> ex.Expression:
        kind = self._peek().kind
        if kind == ID:
            return ex.Property(self._take().image)
        if kind == "(":
            self._take()
            inner = self._or()
            self._expect(")", _EXPECT_CLOSE)
            return inner
        return self._literal()

    def _literal(self) -> ex.Expression:
        token = self._peek()
        kind = token.kind
        if kind == STRING:
            return ex.Constant(self._string())
        if kind not in _PRIMARY_STARTS or kind in (ID, "("):
            raise self._unexpected(_EXPECT_UNARY)
        self._take()
        if kind == DECIMAL:
            return create_from_decimal(token.image)
        if kind == FLOATING:
            return create_float(token.image)
        return {"TRUE": ex.TRUE, "FALSE": ex.FALSE}.get(kind, ex.NULL)

    def _string(self) -> str:
        """``stringLitteral``: the text between the quotes, ``''`` read as one quote."""
        image = self._expect(STRING).image
        return image[1:-1].replace("''", "'")

    @staticmethod
    def _as_boolean(value: ex.Expression) -> ex.Expression:
        if value.is_boolean:
            return value
        if isinstance(value, ex.Property):
            return ex.BooleanCast(value)
        raise _parse_error(f"Expression will not result in a boolean value: {value}")


# -- the checks of ComparisonExpression / ConstantExpression ------------------------------------------


def create_from_decimal(text: str) -> ex.Constant:
    """``ConstantExpression.createFromDecimal``: Integer when it fits, else Long, else refused."""
    digits = text[:-1] if text[-1] in "lL" else text
    try:
        value = parse_long(digits)
    except JavaError:
        raise number_format_error(digits) from None
    return ex.Constant(JavaInt(value) if INT_MIN <= value <= INT_MAX else JavaLong(value))


def create_float(text: str) -> ex.Constant:
    """``ConstantExpression.createFloat``: a Double within (Double.MIN_VALUE, Double.MAX_VALUE)."""
    value = float(text)
    if value > DOUBLE_MAX:
        raise runtime_error(f"{text} is greater than {DOUBLE_MAX_TEXT}")
    if value < DOUBLE_MIN:
        raise runtime_error(f"{text} is less than {DOUBLE_MIN_TEXT}")
    return ex.Constant(value)


def check_less_than_operand(expr: ex.Expression) -> None:
    if isinstance(expr, ex.Constant):
        value = expr.value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return
        raise runtime_error(f"Value '{expr}' cannot be compared.")
    if expr.is_boolean:
        raise runtime_error(f"Value '{expr}' cannot be compared.")


def create_ordering(left: ex.Expression, right: ex.Expression, symbol: str) -> ex.Expression:
    check_less_than_operand(left)
    check_less_than_operand(right)
    return ex.Ordering(left, right, symbol)


def create_equal(left: ex.Expression, right: ex.Expression) -> ex.Expression:
    for operand in (left, right):
        if isinstance(operand, ex.Constant) and operand.value is None:
            raise runtime_error(f"'{operand}' cannot be compared.")
    if (
        isinstance(left, ex.Constant)
        and isinstance(right, ex.Constant)
        and left.is_boolean
        and not right.is_boolean
    ):
        raise runtime_error(f"'{left}' cannot be compared with '{right}'")
    return ex.Equal(left, right)


def create_between(value: ex.Expression, low: ex.Expression, high: ex.Expression) -> ex.Expression:
    if isinstance(low, ex.Constant) and isinstance(high, ex.Constant):
        lv, rv = low.value, high.value
        if lv is None or rv is None:
            raise runtime_error("Illegal values of between, values can not be null!")
        if compare_values(rv, lv) < 0:
            raise runtime_error(
                f"Illegal values of between, left value({to_java_string(lv)}) must less than or equal to "
                f"right value({to_java_string(rv)})"
            )
    return ex.And(create_ordering(value, low, ">="), create_ordering(value, high, "<="))


def create_not_between(value: ex.Expression, low: ex.Expression, high: ex.Expression) -> ex.Expression:
    return ex.Or(create_ordering(value, low, "<"), create_ordering(value, high, ">"))


def create_in(left: ex.Expression, items: list[str], negated: bool) -> ex.Expression:
    if not isinstance(left, ex.Property):
        raise runtime_error(f"Expected a property for In expression, got: {left}")
    return ex.In(left, items, negated)


# -- entry point ------------------------------------------------------------------------------------

_cache: OrderedDict[str, ex.Expression | FilterCompileError] = OrderedDict()


def compile_sql92(text: str) -> ex.Expression:
    """``SelectorParser.parse`` (via ``SqlFilter.compile``); raises :class:`FilterCompileError`."""
    cached = _cache.get(text)
    if cached is None:
        try:
            cached = SelectorParser(text).parse()
        except JavaError as err:
            cached = FilterCompileError(str(err))
        except RecursionError:  # Java would overflow its stack too; it reports the error's class
            cached = FilterCompileError("java.lang.StackOverflowError")
        _cache[text] = cached
        if len(_cache) > PARSE_CACHE_SIZE:
            _cache.popitem(last=False)
    if isinstance(cached, FilterCompileError):
        raise FilterCompileError(str(cached))
    return cached
