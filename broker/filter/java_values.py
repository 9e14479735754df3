"""Java's value types and conversions as the SQL92 filter sees them.

The filter of ``org.apache.rocketmq.filter`` computes with ``java.lang`` boxes: ``Integer`` and
``Long`` literals, ``Double`` literals, ``Boolean`` and ``String``. Which conversion applies in a
comparison depends on the box class (``ComparisonExpression.__compare``), so the Python values keep
it: :class:`JavaInt` and :class:`JavaLong` are ``int`` subclasses tagged with their Java class,
``float`` is ``Double``, ``bool`` is ``Boolean``, ``str`` is ``String`` and ``None`` is null.

The string parsers follow ``Integer.valueOf``, ``Long.valueOf`` and ``Double.valueOf`` (they are
stricter than Python's ``int``/``float``: no underscores, no surrounding blanks for integers, Java's
``NaN``/``Infinity`` spellings). :class:`JavaError` stands for a Java exception; its text is Java's
``Throwable.toString()`` (class name, colon, message), which is what the broker puts in remarks.
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


def parse_int(text: str) -> JavaInt:
    """``Integer.valueOf(text)``; raises :class:`JavaError` (NumberFormatException)."""
    if not _INTEGER.fullmatch(text):
        raise number_format_error(text)
    value = int(text)
    if not INT_MIN <= value <= INT_MAX:
        raise number_format_error(text)
    return JavaInt(value)


def parse_long(text: str) -> JavaLong:
    """``Long.valueOf(text)``; raises :class:`JavaError` (NumberFormatException)."""
    if not _INTEGER.fullmatch(text):
        raise number_format_error(text)
    value = int(text)
    if not LONG_MIN <= value <= LONG_MAX:
        raise number_format_error(text)
    return JavaLong(value)


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
