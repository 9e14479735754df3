"""The SQL92 filter language, rule by rule, as ``org.apache.rocketmq.filter`` 5.3.3 has it.

Each rule is stated as a user would meet it: which messages (property maps) an expression selects,
and what a malformed one is told. ``matches`` is what the broker uses at pull time (TRUE selects;
FALSE, unknown and evaluation errors do not). The recorded Java vectors are in
test_sql92_java_vectors.py.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.filter.java_values import JavaError, JavaInt, JavaLong
from broker.filter.message_filter import ConsumerFilterData
from broker.filter.parser import FilterCompileError, SelectorParser, compile_sql92
from broker.filter.tokenizer import EOF, Tokenizer


def matches(expression: str, props: dict[str, str]) -> bool:
    data = ConsumerFilterData.build("T", "G", expression, "SQL92", 1)
    assert data is not None
    try:
        return data.compiled.evaluate(props) is True
    except JavaError:
        return False


def remark(expression: str) -> str:
    with pytest.raises(FilterCompileError) as info:
        compile_sql92(expression)
    return str(info.value)


# -- comparisons and type rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "props", "selected"),
    [
        ("a = 1", {"a": "1"}, True),
        ("a = 1", {"a": "+1"}, True),  # Integer.valueOf accepts a sign
        ("a = 1", {"a": "1.0"}, False),  # ... but not a decimal point: the comparison fails
        ("a = 1.0", {"a": "1"}, True),  # a double literal converts the property with Double.valueOf
        ("a = 1", {"a": " 1"}, False),  # Integer.valueOf does not trim
        ("a = 1.5", {"a": " 1.5 "}, True),  # Double.valueOf does
        ("a <> 1", {"a": "2"}, True),
        ("a <> 1", {"a": "1"}, False),
        ("a > 1", {"a": "2"}, True),
        ("a >= 2", {"a": "2"}, True),
        ("a < 2", {"a": "1"}, True),
        ("a <= 1", {"a": "2"}, False),
        ("a > 1", {"a": "x"}, False),  # not a number: evaluation error, no match
        ("a > 1.5", {"a": "NaN"}, True),  # Double.compare puts NaN above everything
        ("a > 3000000000", {"a": "3000000001"}, True),  # Long literal, Long.valueOf
        ("a > 1", {"a": "3000000000"}, False),  # Integer literal: out of Integer range fails
        ("a = 'x'", {"a": "x"}, True),
        ("a = 'x'", {"a": "X"}, False),
        ("a > b", {"a": "2", "b": "1.5"}, True),  # two properties compare as doubles
        ("a = TRUE", {"a": "true"}, True),  # Boolean.valueOf, any case
        ("a = TRUE", {"a": "TRUE"}, True),
        ("a = TRUE", {"a": "yes"}, False),
        ("TRUE = a", {"a": "true"}, False),  # Java's conversion table fails in this direction
        ("a > -5", {"a": "-4"}, True),
        ("a = 'it''s'", {"a": "it's"}, True),
        ("color = '蓝'", {"color": "蓝"}, True),
        ("TAGS = 'TagA'", {"TAGS": "TagA"}, True),
        ("flag", {"flag": "true"}, False),  # a property alone: strings are never Boolean
        ("TRUE", {}, True),
        ("FALSE OR TRUE", {}, True),
    ],
)
def test_comparison_and_type_rules(expression: str, props: dict[str, str], selected: bool) -> None:
    assert matches(expression, props) is selected


def test_a_missing_property_never_matches_a_comparison() -> None:
    for expression in ("b = 1", "b <> 1", "b > 0", "NOT (b > 0)", "b IN ('x')", "b NOT IN ('x')"):
        assert not matches(expression, {"a": "1"}), expression
    assert matches("b IS NULL", {"a": "1"})
    assert not matches("b IS NOT NULL", {"a": "1"})
    assert matches("b IS NOT NULL", {"b": "anything"})


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("b = 1 AND FALSE", False),  # unknown AND false is false
        ("b = 1 AND TRUE", None),
        ("b = 1 OR TRUE", True),  # unknown OR true is true
        ("b = 1 OR FALSE", None),
        ("NOT (b = 1)", None),
        ("b IS NULL", True),
    ],
)
def test_three_valued_logic(expression: str, value: bool | None) -> None:
    assert compile_sql92(expression).evaluate({}) is value


def test_an_evaluation_error_fails_the_whole_expression_even_inside_or() -> None:
    # Java evaluates left to right and the exception leaves the whole expression.
    assert not matches("a > 1 OR b = 'x'", {"a": "oops", "b": "x"})
    assert matches("b = 'x' OR a > 1", {"a": "oops", "b": "x"})


@pytest.mark.parametrize(
    ("expression", "value", "selected"),
    [
        ("a BETWEEN 1 AND 5", "1", True),
        ("a BETWEEN 1 AND 5", "5", True),
        ("a BETWEEN 1 AND 5", "6", False),
        ("a BETWEEN 1 AND 5", "2.5", False),  # Integer.valueOf("2.5") fails
        ("a BETWEEN 1.0 AND 5", "2.5", False),  # each bound converts with its own type: 5 fails
        ("a BETWEEN 1.0 AND 5.0", "2.5", True),
        ("a NOT BETWEEN 1 AND 5", "6", True),
        ("a NOT BETWEEN 1 AND 5", "3", False),
        ("a IN ('x', 'y')", "y", True),
        ("a IN ('x', 'y')", "z", False),
        ("a NOT IN ('x')", "z", True),
        ("a CONTAINS 'bc'", "abcd", True),
        ("a NOT CONTAINS 'bc'", "abcd", False),
        ("a STARTSWITH 'ab'", "abc", True),
        ("a ENDSWITH 'bc'", "abc", True),
        ("a NOT ENDSWITH 'x'", "abc", True),
        ("a CONTAINS ''", "abc", False),  # an empty search text never matches
        ("a NOT CONTAINS ''", "abc", False),
    ],
)
def test_between_in_and_string_operators(expression: str, value: str, selected: bool) -> None:
    assert matches(expression, {"a": value}) is selected


def test_string_operators_do_not_match_a_missing_property_even_negated() -> None:
    assert not matches("a NOT CONTAINS 'x'", {})
    assert not matches("a NOT STARTSWITH 'x'", {})


# -- grammar -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "java_form"),
    [
        ("a = 1 AND b = 2 OR c = 3", "(((a == 1) && (b == 2)) || (c == 3))"),
        ("a = 1 AND (b = 2 OR c = 3)", "((a == 1) && ((b == 2) || (c == 3)))"),
        ("not (a > 1)", "(NOT (a > 1))"),
        ("a is not null and b is null", "((NOT (a == NULL)) && (b == NULL))"),
        ("a <> 'x'", "(NOT (a == 'x'))"),
        ("a BETWEEN 1 AND 2", "((a >= 1) && (a <= 2))"),
        ("a NOT BETWEEN 1 AND 2", "((a < 1) || (a > 2))"),
        ("a > -1.5E3", "(a > (- 1500.0))"),
        ("a > .5", "(a > 0.5)"),
        ("a > 5.", "(a > 5.0)"),
        ("a > 9L", "(a > 9)"),
        ("a = 1 -- comment\n", "(a == 1)"),
        ("a = /* comment */ 1", "(a == 1)"),
        ("a = 1 b c", "(a == 1)"),  # Java stops after one expression: the rest is ignored
    ],
)
def test_grammar_precedence_keywords_literals_and_comments(expression: str, java_form: str) -> None:
    assert str(SelectorParser(expression).parse()) == java_form


def test_literal_types() -> None:
    value = SelectorParser("a > 2147483647").parse()
    assert type(value.right.value) is JavaInt  # type: ignore[attr-defined]
    value = SelectorParser("a > 2147483648").parse()
    assert type(value.right.value) is JavaLong  # type: ignore[attr-defined]


# -- malformed expressions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "start"),
    [
        (
            "a = ",
            'org.apache.rocketmq.filter.parser.ParseException: Encountered "<EOF>" at line 1, column 4.',
        ),
        ("a == 1", 'ParseException: Encountered " "=" "= "" at line 1, column 4.'),
        ("a IS b", 'ParseException: Encountered " <ID> "b "" at line 1, column 6.'),
        ("a # 1", 'TokenMgrError: Lexical error at line 1, column 3.  Encountered: "#" (35), after : ""'),
        ("a = 'open", "TokenMgrError: Lexical error at line 1, column 10.  Encountered: <EOF> after"),
        ("a =\n  @", "TokenMgrError: Lexical error at line 2, column 4.  Encountered: <EOF>"),
        ("a > 'x'", "java.lang.RuntimeException: Value ''x'' cannot be compared."),
        ("a > TRUE", "java.lang.RuntimeException: Value 'TRUE' cannot be compared."),
        ("NOT a > 1", "java.lang.RuntimeException: Value '(NOT a)' cannot be compared."),  # NOT binds tighter
        ("a = NULL", "java.lang.RuntimeException: 'NULL' cannot be compared."),
        ("1 IN ('a')", "java.lang.RuntimeException: Expected a property for In expression, got: 1"),
        ("a BETWEEN 5 AND 1", "java.lang.RuntimeException: Illegal values of between, left value(5)"),
        ("a > 0.0", "java.lang.RuntimeException: 0.0 is less than 4.9E-324"),
        (
            "a > 99999999999999999999",
            'java.lang.NumberFormatException: For input string: "99999999999999999999"',
        ),
        ("5", "ParseException: Expression will not result in a boolean value: 5"),
        ("", 'ParseException: Encountered "<EOF>" at line 0, column 0.'),
    ],
)
def test_malformed_expression_remark_names_the_problem(expression: str, start: str) -> None:
    text = remark(expression)
    assert start in text
    assert text.startswith(("org.apache.rocketmq.filter.parser.", "java.lang."))


def test_parse_error_lists_what_was_expected() -> None:
    assert remark("a IS b").endswith('Was expecting one of:\n    "NOT" ...\n    "NULL" ...\n    ')


def test_compiled_once_per_text() -> None:
    assert compile_sql92("cached_a = 1") is compile_sql92("cached_a = 1")


# -- the tokenizer never fails otherwise ---------------------------------------------------------------

SQL_ALPHABET = st.sampled_from([*"abcAB_$019.eElL'\"()=<>!,+-*/ \t\n\r#蓝", "AND", "NOT", "IN", "--", "/*"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=40), st.lists(SQL_ALPHABET, max_size=30).map("".join)))
def test_tokenizer_and_parser_raise_only_java_errors(text: str) -> None:
    tokens = Tokenizer(text)
    lexical: list[str] = []
    try:
        for _ in range(len(text) + 2):
            if tokens.next().kind == EOF:
                break
    except JavaError as err:
        lexical.append(err.java_class)
    assert lexical in ([], ["org.apache.rocketmq.filter.parser.TokenMgrError"])
    try:
        compiled = SelectorParser(text).parse()
    except JavaError:
        return
    with contextlib.suppress(JavaError):
        compiled.evaluate({"a": "1", "b": text})
