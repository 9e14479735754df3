"""What a scenario is, what it needs at run time, and what came of it.

A :class:`Scenario` is one feature exercised by one client line (``java-4.9.8``, ``java-5.3.3``:
the remoting clients; ``java-grpc-5``, ``python-grpc-5``, ``go-grpc-5``: the RocketMQ 5 gRPC
clients). Its body
gets a :class:`Context` and either returns (passed) or raises one of the outcomes below; anything
else it raises is reported as a failure with the exception's text.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from compat_tests.tool.admin import Admin
from compat_tests.tool.goenv import GoEnv
from compat_tests.tool.javaenv import JavaEnv
from compat_tests.tool.outcomes import Failed, NotRun, Unsupported, check
from compat_tests.tool.process import Background
from compat_tests.tool.target import TargetSpec

Status = Literal["passed", "failed", "unsupported", "not run"]
STATUSES: tuple[Status, ...] = ("passed", "failed", "unsupported", "not run")
__all__ = [
    "CLIENTS",
    "STATUSES",
    "Context",
    "Failed",
    "NotRun",
    "Outcome",
    "Scenario",
    "Status",
    "TargetReport",
    "TargetSpec",
    "Unsupported",
    "check",
]

JAVA_498 = "java-4.9.8"
JAVA_533 = "java-5.3.3"
JAVA_GRPC = "java-grpc-5"
PYTHON_GRPC = "python-grpc-5"
GO_GRPC = "go-grpc-5"
MQADMIN = "mqadmin-5.3.3"
CLIENTS = (JAVA_498, JAVA_533, JAVA_GRPC, PYTHON_GRPC, GO_GRPC, MQADMIN)


@dataclass
class Context:
    """What one scenario run gets: the target, its admin client, the Java environment, a work
    directory, a name source under the run's prefix, its deadline, and the Go client's build."""

    target: TargetSpec
    admin: Admin
    java: JavaEnv
    prefix: str
    scenario_key: str
    home: Path
    deadline: float
    topics: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    processes: list[Background] = field(default_factory=list)
    go: GoEnv = field(default_factory=GoEnv)
    _counter: int = 0

    def track(self, process: Background) -> Background:
        """Remember a started program, so the runner can kill it when the scenario times out."""
        self.processes.append(process)
        return process

    def name(self, kind: str) -> str:
        """A fresh topic or group name of this scenario: ``<prefix><scenario><kind><n>``."""
        self._counter += 1
        return f"{self.prefix}{self.scenario_key}{kind}{self._counter}"

    def remaining(self) -> float:
        """Seconds left of this scenario's time limit (at least one, so a last step still starts)."""
        return max(1.0, self.deadline - time.monotonic())

    def topic(self, *, queues: int = 4, attributes: str | None = None, order: bool = False) -> str:
        """Create a fresh topic through the admin path and wait until the NameServer routes it;
        :class:`NotRun` ("setup failed: ...") when the target does not let us."""
        name = self.name("T")
        try:
            self.admin.create_topic(name, queues=queues, attributes=attributes, order=order)
        except Unsupported:
            raise
        except Exception as err:
            raise NotRun(f"setup failed: create topic {name}: {err}") from err
        self.topics.append(name)
        return name

    def group(self, *, retry_max: int = 16, broadcast: bool = False, orderly: bool = False) -> str:
        """Create a fresh consumer group through the admin path."""
        name = self.name("G")
        try:
            self.admin.create_group(name, retry_max=retry_max, broadcast=broadcast, orderly=orderly)
        except Exception as err:
            raise NotRun(f"setup failed: create group {name}: {err}") from err
        self.groups.append(name)
        return name


Body = Callable[[Context], None]


@dataclass(frozen=True)
class Scenario:
    """One feature on one client line. ``key`` is short and unique (it goes into resource names);
    ``quick`` marks the scenario ``--quick`` keeps for its feature."""

    key: str
    feature: str
    client: str
    tags: frozenset[str]
    body: Body
    description: str
    quick: bool = False

    @property
    def id(self) -> str:
        return f"{self.feature}[{self.client}]"


@dataclass
class Outcome:
    """What came of one scenario: ``status``, why (empty when passed), and how long it took."""

    scenario: Scenario
    status: Status
    reason: str = ""
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass
class TargetReport:
    """Every outcome of one run against one target."""

    target: TargetSpec
    outcomes: list[Outcome]
    started: float
    seconds: float

    def counts(self) -> dict[Status, int]:
        counts: dict[Status, int] = dict.fromkeys(STATUSES, 0)
        for outcome in self.outcomes:
            counts[outcome.status] += 1
        return counts
