"""Java's value types and conversions as the SQL92 filter sees them.

The filter of ``org.apache.rocketmq.filter`` computes with ``java.lang`` boxes: ``Integer`` and
``Long`` literals, ``Double`` literals, ``Boolean`` and ``String``. Which conversion applies in a
comparison depends on the box class (``ComparisonExpression.__compare``), so the Python values keep
it: :class:`JavaInt` and :class:`JavaLong` are ``int`` subclasses tagged with their Java class,
``float`` is ``Double``, ``bool`` is ``Boolean``, ``str`` is ``String`` and ``None`` is null.

The string parsers follow ``Integer.valueOf``, ``Long.valueOf`` and ``Double.valueOf`` (they are
stricter than Python's ``int``/``float``: no underscores, no surrounding blanks for integers, Java's
``NaN``/``Infinity`` spellings). :func:`compare_values` is ``ComparisonExpression.__compare``: Java's
table of which side converts to which class before ``compareTo``. :class:`JavaError` stands for
a Java exception; its text is Java's ``Throwable.toString()`` (class name, colon, message), which
is what the broker puts in remarks.
"""

from __future__ import annotations

import decimal
import math
import re

INT_MIN, INT_MAX = -(2**31), 2**31 - 1  # java.lang.Integer range
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1  # java.lang.Long range
DOUBLE_MAX = 1.7976931348623157e308  # Double.MAX_VALUE
DOUBLE_MIN = 5e-324  # Double.MIN_VALUE (smallest positive subnormal)
DOUBLE_MAX_TEXT = "1.7976931348623157E308"  # Double.toString(Double.MAX_VALUE)
DOUBLE_MIN_TEXT = "4.9E-324"  # Double.toString(Double.MIN_VALUE)

# Integer.parseInt / Long.parseLong: optional sign, then decimal digits (Character.digit accepts
# every Unicode decimal digit, as Python's \d does).
_INTEGER = re.compile(r"[+-]?\d+")
# FloatingDecimal.readJavaFormatString: blanks (chars <= ' ') trimmed, optional sign, NaN,
# Infinity, or digits with an optional point and exponent, optional f/F/d/D suffix. ASCII digits
# only. Hexadecimal floating literals (0x1.8p1) are not accepted here.
_DOUBLE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)", re.A)


class JavaError(Exception):
    """A Java exception the filter would have thrown; ``str()`` is its ``toString()``."""

    def __init__(self, java_class: str, message: str | None) -> None:
        super().__init__(f"{java_class}: {message}" if message is not None else java_class)
        self.java_class = java_class
        self.java_message = message


def runtime_error(message: str) -> JavaError:
    return JavaError("java.lang.RuntimeException", message)


def number_format_error(text: str) -> JavaError:
    return JavaError("java.lang.NumberFormatException", f'For input string: "{text}"')


def wrap_runtime(cause: JavaError) -> JavaError:
    """``new RuntimeException(cause)``: its message is the cause's ``toString()``."""
    return runtime_error(str(cause))


class JavaInt(int):
    """A ``java.lang.Integer``."""

    __slots__ = ()


class JavaLong(int):
    """A ``java.lang.Long``."""

    __slots__ = ()


JavaValue = JavaInt | JavaLong | float | bool | str | None


def _parse_integer(text: str, low: int, high: int) -> int:
    """Decimal digits with an optional sign, within ``low..high``; raises :class:`JavaError`."""
    if not _INTEGER.fullmatch(text):
        raise number_format_error(text)
    value = int(text)
    if not low <= value <= high:
        raise number_format_error(text)
    return value


def parse_int(text: str) -> JavaInt:
    """``Integer.valueOf(text)``; raises :class:`JavaError` (NumberFormatException)."""
    return JavaInt(_parse_integer(text, INT_MIN, INT_MAX))


def parse_long(text: str) -> JavaLong:
    """``Long.valueOf(text)``; raises :class:`JavaError` (NumberFormatException)."""
    return JavaLong(_parse_integer(text, LONG_MIN, LONG_MAX))


def parse_double(text: str) -> float:
    """``Double.valueOf(text)``; raises :class:`JavaError` (NumberFormatException)."""
    trimmed = text.strip("".join(chr(c) for c in range(0x21)))
    if not _DOUBLE.fullmatch(trimmed):
        raise number_format_error(text)
    body = trimmed[:-1] if trimmed[-1] in "fFdD" else trimmed
    if body.lstrip("+-") == "NaN":
        return math.nan
    if body.lstrip("+-") == "Infinity":
        return -math.inf if body.startswith("-") else math.inf
    return float(body)


def parse_boolean(text: str) -> bool:
    """``Boolean.valueOf(text)``: true only for "true" in any case."""
    return len(text) == 4 and text.lower() == "true"


def wrap_int(value: int) -> JavaInt:
    """Integer arithmetic wraps at 32 bits."""
    return JavaInt((value - INT_MIN) % 2**32 + INT_MIN)


def wrap_long(value: int) -> JavaLong:
    """Long arithmetic wraps at 64 bits."""
    return JavaLong((value - LONG_MIN) % 2**64 + LONG_MIN)


def compare_doubles(a: float, b: float) -> int:
    """``Double.compare``: NaN above everything and equal to itself, -0.0 below 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)
    a_neg, b_neg = math.copysign(1.0, a) < 0, math.copysign(1.0, b) < 0
    return int(b_neg) - int(a_neg)


def double_to_string(value: float) -> str:
    """``Double.toString``: plain notation for 1e-3 <= |v| < 1e7, else ``d.dddE±n``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(value)
        if "e" in text:  # repr chose exponent notation for a value Java prints plainly
            text = f"{value:f}".rstrip("0")
        return text if "." in text else text + ".0"
    shortest = decimal.Decimal(repr(magnitude))  # repr: the shortest digits that round-trip
    digits = "".join(map(str, shortest.as_tuple().digits)).rstrip("0") or "0"
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{shortest.adjusted()}"


def to_java_string(value: JavaValue) -> str:
    """``String.valueOf`` of a filter value (as ``String.format("%s")`` prints it)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return double_to_string(value)
    return str(int(value)) if isinstance(value, int) else value


# -- ComparisonExpression.__compare ------------------------------------------------------------


def java_class(value: JavaValue) -> str:
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, JavaInt):
        return "Integer"
    if isinstance(value, JavaLong):
        return "Long"
    if isinstance(value, float):
        return "Double"
    return "String"


def _class_cast(value: JavaValue, target: str) -> JavaError:
    source = f"java.lang.{java_class(value)}"
    return JavaError(
        "java.lang.ClassCastException",
        f"class {source} cannot be cast to class java.lang.{target} "
        f"({source} and java.lang.{target} are in module java.base of loader 'bootstrap')",
    )


def java_equals(lv: JavaValue, rv: JavaValue) -> bool:
    """``Object.equals`` of two boxes: same class and value (``Double.equals`` compares bits)."""
    if java_class(lv) != java_class(rv):
        return False
    if isinstance(lv, float) and isinstance(rv, float):
        return compare_doubles(lv, rv) == 0
    return lv == rv


def compare_values(lv: JavaValue, rv: JavaValue) -> int:
    """``ComparisonExpression.__compare`` with string conversion on (as ``SelectorParser`` sets it).

    Raises :class:`JavaError` where Java throws (a string that does not convert; the two
    ``ClassCastException`` cases of Java's conversion table).
    """
    lc, rc = java_class(lv), java_class(rv)
    if lc != rc:
        try:
            lv, rv = _convert(lv, rv, lc, rc)
        except JavaError as err:
            if err.java_class == "java.lang.NumberFormatException":
                raise wrap_runtime(err) from err
            raise
        except _Unordered:
            return -1
    return _compare_same(lv, rv)


class _Unordered(Exception):
    """Java's table has no conversion for these two classes: ``__compare`` answers -1."""


def _convert(lv: JavaValue, rv: JavaValue, lc: str, rc: str) -> tuple[JavaValue, JavaValue]:
    if lc == "Boolean":
        if rc == "String":  # Java casts the Boolean itself to String here
            raise _class_cast(lv, "String")
        raise _Unordered
    if lc == "Integer":
        assert isinstance(lv, int)
        if rc == "Long":
            return JavaLong(lv), rv
        if rc == "Double":
            return float(lv), rv
        if rc == "String":
            assert isinstance(rv, str)
            return lv, parse_int(rv)
        raise _Unordered
    if lc == "Long":
        assert isinstance(lv, int)
        if rc == "Integer":
            assert isinstance(rv, int)
            return lv, JavaLong(rv)
        if rc == "Double":
            return float(lv), rv
        if rc == "String":
            assert isinstance(rv, str)
            return lv, parse_long(rv)
        raise _Unordered
    if lc == "Double":
        if rc in ("Integer", "Long"):
            assert isinstance(rv, int)
            return lv, float(rv)
        if rc == "String":
            assert isinstance(rv, str)
            return lv, parse_double(rv)
        raise _Unordered
    assert isinstance(lv, str)  # String on the left
    if rc == "Boolean":
        return parse_boolean(lv), rv
    if rc == "Integer":
        return parse_int(lv), rv
    if rc == "Long":
        return parse_long(lv), rv
    return parse_double(lv), rv


def _compare_same(lv: JavaValue, rv: JavaValue) -> int:
    if isinstance(lv, float) and isinstance(rv, float):
        return compare_doubles(lv, rv)
    if isinstance(lv, str) and isinstance(rv, str):  # String.compareTo: UTF-16 code units
        a, b = lv.encode("utf-16-be", "surrogatepass"), rv.encode("utf-16-be", "surrogatepass")
        return (a > b) - (a < b)
    if isinstance(lv, int) and isinstance(rv, int):  # Boolean, Integer, Long
        return (lv > rv) - (lv < rv)
    raise _class_cast(rv, java_class(lv))
