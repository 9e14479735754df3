"""SQL92 filters: the unmodified Java clients of both lines subscribe with
``MessageSelector.bySql`` against our broker AND the real Apache RocketMQ 5.3.3 broker, with
identical assertions.

With ``enablePropertyFilter=true`` each expression must deliver exactly the messages a plain Python
reading of Java's rules selects (a missing property never matches, a property that is not a
number does not match a numeric comparison); a malformed expression makes the consumer's start
fail with SUBSCRIPTION_PARSE_FAILED and the parser's remark. With the default
``enablePropertyFilter=false`` a SQL92 consumer fails at start on both targets.

Driven by ``rmqcompat.FilterScenario`` (``compat_tests/java/src/rmqcompat/FilterScenario.java``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compat_tests.scenario import CLIENT_LINES, ArgValue, Event, of, run_program
from compat_tests.targets import Target, start_target

pytestmark = pytest.mark.compat

TARGETS = ("gateway", "reference")
STEP_S = 90.0
SETTLE_MS = 3000  # after the expected messages, time for unexpected ones to show up
MAIN_CLASS = "rmqcompat.FilterScenario"
SUBSCRIPTION_PARSE_FAILED = 23  # ResponseCode
SYSTEM_ERROR = 1  # ResponseCode

# (tag, user properties) of the messages; their bodies are "m0", "m1", ...
MESSAGES: list[tuple[str, dict[str, str]]] = [
    ("TagA", {"a": "1", "color": "蓝", "n": "4", "x": "1"}),
    ("TagA", {"a": "5", "color": "red", "n": "3"}),
    ("TagB", {"a": "6", "color": "red", "n": "9", "x": "2"}),
    ("TagA", {"a": "3", "color": "green", "n": "10"}),
    ("TagA", {"color": "蓝", "n": "5", "x": "0"}),
    ("TagB", {"a": "x", "color": "蓝", "n": "abc"}),
    ("", {"a": "2.5", "n": "7", "color": "red"}),
    ("TagA", {"a": "0", "b": "1"}),
    ("TagC", {"a": "5", "b": "-1"}),
    ("TagA", {"a": "4", "x": "ok", "b": "0"}),
]


def _int(text: str | None) -> int | None:
    """``Integer.valueOf`` as the filter applies it to a property compared with an int literal."""
    return int(text) if text is not None and re.fullmatch(r"[+-]?[0-9]+", text) else None


def _between(props: dict[str, str]) -> bool:
    a = _int(props.get("a"))
    return a is not None and 1 <= a <= 5


def _color_and_n(props: dict[str, str]) -> bool:
    n = _int(props.get("n"))
    return props.get("color") in ("蓝", "red") and n is not None and n > 3


def _b_positive(props: dict[str, str]) -> bool:
    b = _int(props.get("b"))
    return b is not None and b > 0


def _b_not_positive(props: dict[str, str]) -> bool:
    b = _int(props.get("b"))
    return b is not None and not b > 0  # NOT of unknown is unknown: a missing b never matches


# expression -> which (tag, properties) it must select
CASES: list[tuple[str, Callable[[str, dict[str, str]], bool]]] = [
    ("a BETWEEN 1 AND 5", lambda _tag, p: _between(p)),
    ("color IN ('蓝','red') AND n > 3", lambda _tag, p: _color_and_n(p)),
    ("TAGS = 'TagA' AND x IS NOT NULL", lambda tag, p: tag == "TagA" and "x" in p),
    ("b > 0", lambda _tag, p: _b_positive(p)),
    ("NOT (b > 0)", lambda _tag, p: _b_not_positive(p)),
    ("b IS NULL", lambda _tag, p: "b" not in p),
]


def short(line: str) -> str:
    return line.replace(".", "")


def run_filter_scenario(line: str, command: str, target: Target, home: Path, **args: ArgValue) -> list[Event]:
    """One FilterScenario JVM run; its events (raises :class:`ScenarioError` on a non-zero exit)."""
    return run_program(MAIN_CLASS, line, command, target.namesrv_addr, home, STEP_S, args)


def produce_messages(target: Target, home: Path, line: str, topic: str) -> None:
    spec = ";".join("|".join([tag, *(f"{k}={v}" for k, v in props.items())]) for tag, props in MESSAGES)
    events = run_filter_scenario(line, "produce", target, home, topic=topic, messages=spec)
    assert [e["status"] for e in of(events, "sent")] == ["SEND_OK"] * len(MESSAGES)


def start_failure(target: Target, home: Path, line: str, topic: str, sql: str, group: str) -> Event:
    """Start one SQL92 consumer that must fail; its ``start_error`` event."""
    events = run_filter_scenario(
        line, "consume", target, home, topic=topic, sql0=sql, group0=group, expect0=0, settle_ms=0
    )
    failures = of(events, "start_error")
    assert len(failures) == 1, f"the consumer started: {events[-3:]}"
    return failures[0]


def _target(request: pytest.FixtureRequest, factory: pytest.TempPathFactory, conf: dict[str, str]) -> Target:
    name: str = request.param
    return start_target(name, factory.mktemp(name), conf)


@pytest.fixture(scope="module", params=TARGETS)
def filtering(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """A target with ``enablePropertyFilter=true``."""
    started = _target(request, tmp_path_factory, {"enablePropertyFilter": "true"})
    try:
        yield started
    finally:
        started.discard()


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_sql92_selects_exactly_the_matching_messages(
    filtering: Target, tmp_path_factory: pytest.TempPathFactory, line: str
) -> None:
    """Six expressions over ten messages: each consumer gets exactly the messages its expression
    selects under Java's rules, and nothing else within the settle time."""
    home = tmp_path_factory.mktemp(f"clients-{filtering.name}-{short(line)}")
    topic = f"Sql92{short(line)}"
    produce_messages(filtering, home, line, topic)
    args: dict[str, ArgValue] = {}
    expected: dict[int, set[str]] = {}
    for k, (sql, selects) in enumerate(CASES):
        expected[k] = {f"m{i}" for i, (tag, props) in enumerate(MESSAGES) if selects(tag, props)}
        args |= {f"sql{k}": sql, f"group{k}": f"sql92G{k}{short(line)}", f"expect{k}": len(expected[k])}
    events = run_filter_scenario(line, "consume", filtering, home, topic=topic, settle_ms=SETTLE_MS, **args)
    assert not of(events, "start_error"), of(events, "start_error")
    received: dict[int, set[str]] = {k: set() for k in expected}
    for event in of(events, "received"):
        received[event["k"]].add(event["body"])
        index = int(event["body"][1:])
        tag, props = MESSAGES[index]
        assert {k: event["props"][k] for k in props} == props
        assert event["tags"] == (tag or None)
    for k, (sql, _selects) in enumerate(CASES):
        assert received[k] == expected[k], f"{sql}: got {sorted(received[k])}, want {sorted(expected[k])}"


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_lite_pull_consumer_pulls_with_its_expression(
    filtering: Target, tmp_path_factory: pytest.TempPathFactory, line: str
) -> None:
    """DefaultLitePullConsumer sends its SQL92 expression with every pull (no CHECK_CLIENT_CONFIG,
    no heartbeat subscription needed): it gets exactly the matching messages."""
    home = tmp_path_factory.mktemp(f"lite-{filtering.name}-{short(line)}")
    topic = f"Sql92Lite{short(line)}"
    produce_messages(filtering, home, line, topic)
    sql, selects = CASES[1]
    expected = {f"m{i}" for i, (tag, props) in enumerate(MESSAGES) if selects(tag, props)}
    events = run_filter_scenario(
        line,
        "litepull",
        filtering,
        home,
        topic=topic,
        settle_ms=SETTLE_MS,
        sql0=sql,
        group0=f"sql92Lite{short(line)}",
        expect0=len(expected),
    )
    assert {e["body"] for e in of(events, "received")} == expected


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_redelivery_from_the_retry_topic_keeps_to_the_matching_messages(
    filtering: Target, tmp_path_factory: pytest.TempPathFactory, line: str
) -> None:
    """Each matching message is first answered RECONSUME_LATER: it comes back from the group's
    retry topic (reconsumeTimes 1) and is then acknowledged; non-matching ones never show up."""
    home = tmp_path_factory.mktemp(f"retry-{filtering.name}-{short(line)}")
    topic = f"Sql92Retry{short(line)}"
    produce_messages(filtering, home, line, topic)
    sql, selects = CASES[0]
    expected = {f"m{i}" for i, (tag, props) in enumerate(MESSAGES) if selects(tag, props)}
    events = run_filter_scenario(
        line,
        "consume",
        filtering,
        home,
        topic=topic,
        settle_ms=SETTLE_MS,
        sql0=sql,
        group0=f"sql92Retry{short(line)}",
        expect0=len(expected),
        later0=1,
    )
    received = of(events, "received")
    assert {e["body"] for e in received} == expected
    redelivered = {e["body"] for e in received if e["reconsumeTimes"] >= 1 and e["status"] == "success"}
    assert redelivered == expected
    assert of(events, "done")[0]["acked"] == len(expected)


@pytest.mark.parametrize("line", CLIENT_LINES)
@pytest.mark.parametrize(
    ("sql", "remark_start"),
    [
        (
            "a = ",
            'org.apache.rocketmq.filter.parser.ParseException: Encountered "<EOF>" at line 1, column 4.',
        ),
        ("a > 'x'", "java.lang.RuntimeException: Value ''x'' cannot be compared."),
    ],
)
def test_malformed_expression_fails_the_consumer_start(
    filtering: Target, tmp_path_factory: pytest.TempPathFactory, line: str, sql: str, remark_start: str
) -> None:
    """CHECK_CLIENT_CONFIG answers SUBSCRIPTION_PARSE_FAILED with the parser's message; the
    client's start() throws it."""
    home = tmp_path_factory.mktemp(f"bad-{filtering.name}-{short(line)}")
    case = "Parse" if sql.endswith("= ") else "Check"
    topic = f"Sql92Bad{case}{short(line)}"
    produce_messages(filtering, home, line, topic)  # the client checks only brokers that route the topic
    failure = start_failure(filtering, home, line, topic, sql, f"sql92Bad{case}{short(line)}")
    assert failure["code"] == SUBSCRIPTION_PARSE_FAILED
    assert failure["remark"].startswith(remark_start), failure["remark"]


@pytest.fixture(scope="module", params=TARGETS)
def not_filtering(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Target]:
    """A target with the default ``enablePropertyFilter=false``."""
    started = _target(request, tmp_path_factory, {})
    try:
        yield started
    finally:
        started.discard()


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_sql92_consumer_fails_to_start_when_property_filter_is_off(
    not_filtering: Target, tmp_path_factory: pytest.TempPathFactory, line: str
) -> None:
    home = tmp_path_factory.mktemp(f"off-{not_filtering.name}-{short(line)}")
    topic = f"Sql92Off{short(line)}"
    produce_messages(not_filtering, home, line, topic)
    failure = start_failure(not_filtering, home, line, topic, "a BETWEEN 1 AND 5", f"sql92Off{short(line)}")
    assert failure["code"] == SYSTEM_ERROR
    assert failure["remark"] == "The broker does not support consumer to filter message by SQL92"
