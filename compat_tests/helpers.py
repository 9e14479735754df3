"""Helpers shared by the scenario modules that run against both targets (``conftest.py`` holds
their fixtures): the target names, the per-step time limit, and one-line producer and consumer
runs with an assertion that every send succeeded."""

from __future__ import annotations

from pathlib import Path

from compat_tests.scenario import Event, ScenarioProcess, of, run_scenario, start_scenario
from compat_tests.targets import Target

TARGETS = ("gateway", "reference")  # ours (rmq-gateway standalone), then the real 5.3.3 broker
STEP_S = 90.0  # the Java scenario's own timeout per step (a JVM on a busy 2-core machine)


def short(line: str) -> str:
    """A client line as a name suffix for topics and groups: ``4.9.8`` -> ``498``."""
    return line.replace(".", "")


def produce(target: Target, home: Path, line: str, *, refused: bool = False, **args: object) -> list[Event]:
    """Run a producer; unless ``refused`` (the test wants send errors), every send must succeed."""
    events = run_scenario(line, "produce", target.namesrv_addr, home, STEP_S, **args)  # type: ignore[arg-type]
    if not refused:
        assert not of(events, "send_error"), of(events, "send_error")[:3]
    return events


def consume(target: Target, home: Path, line: str, **args: object) -> list[Event]:
    """Run a push consumer to completion (``expect=N`` or ``duration=S`` among ``args``)."""
    return run_scenario(line, "consume", target.namesrv_addr, home, STEP_S, **args)  # type: ignore[arg-type]


def start_consumer(target: Target, home: Path, line: str, **args: object) -> ScenarioProcess:
    """Start a push consumer and return at once (:func:`consume` runs one to completion)."""
    return start_scenario(line, "consume", target.namesrv_addr, home, STEP_S, **args)  # type: ignore[arg-type]
