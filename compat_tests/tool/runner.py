"""Running a selection of scenarios against one target: a reachability check first, then the
builds of the clients the selection needs (``prepare``, outside any scenario's limit), then each
scenario in a worker thread with its own work directory, names and deadline; its topics and groups
are deleted afterwards unless ``keep``. A scenario that overruns its limit is reported as failed
and its programs are killed; the run goes on."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from compat_tests.tool.admin import CALL_TIMEOUT_S, Admin, AdminError
from compat_tests.tool.goenv import GoEnv
from compat_tests.tool.javaenv import JavaEnv
from compat_tests.tool.model import (
    Context,
    Failed,
    NotRun,
    Outcome,
    Scenario,
    TargetReport,
    TargetSpec,
    Unsupported,
)
from compat_tests.tool.prepare import prepare

CLEANUP_GRACE_S = 15.0  # after a scenario's limit: killing its programs, deleting its resources

Progress = Callable[[Outcome, int, int], None]


@dataclass
class RunOptions:
    prefix: str
    workdir: Path
    timeout: float = 180.0
    keep: bool = False
    jobs: int = 2
    grace: float = CLEANUP_GRACE_S

    def admin(self, target: TargetSpec) -> Admin:
        """An admin client whose calls wait no longer than a scenario may (a slow target)."""
        return Admin(target, min(CALL_TIMEOUT_S, self.timeout))


def reachable(admin: Admin) -> str | None:
    """``None`` when the NameServer answers with at least one master broker, else why not."""
    try:
        admin.masters()
    except AdminError as err:
        return f"target unreachable: {err}"
    return None


def _execute(scenario: Scenario, ctx: Context) -> Outcome:
    try:
        scenario.body(ctx)
    except Unsupported as err:
        return Outcome(scenario, "unsupported", str(err))
    except NotRun as err:
        return Outcome(scenario, "not run", str(err))
    except Failed as err:
        return Outcome(scenario, "failed", str(err))
    except Exception as err:
        where = traceback.extract_tb(err.__traceback__)[-1]
        place = f"{Path(where.filename).name}:{where.lineno}"
        return Outcome(scenario, "failed", f"{type(err).__name__}: {err} ({place})")
    return Outcome(scenario, "passed")


def _cleanup(ctx: Context) -> None:
    for process in ctx.processes:
        process.kill()
    for group in ctx.groups:
        ctx.topics.extend((f"%RETRY%{group}", f"%DLQ%{group}"))
    for topic in ctx.topics:
        with contextlib.suppress(AdminError):
            ctx.admin.delete_topic(topic)
    for group in ctx.groups:
        with contextlib.suppress(AdminError):
            ctx.admin.delete_group(group)


def run_one(
    scenario: Scenario, target: TargetSpec, java: JavaEnv, options: RunOptions, go: GoEnv | None = None
) -> Outcome:
    """Run one scenario within ``options.timeout``; never raises."""
    started = time.monotonic()
    home = options.workdir / scenario.key
    home.mkdir(parents=True, exist_ok=True)
    ctx = Context(
        target, options.admin(target), java, options.prefix, scenario.key, home, started + options.timeout
    )
    if go is not None:
        ctx.go = go
    result: list[Outcome] = []
    worker = threading.Thread(target=lambda: result.append(_execute(scenario, ctx)), daemon=True)
    worker.start()
    worker.join(options.timeout + options.grace)
    if result:
        outcome = result[0]
    else:
        outcome = Outcome(scenario, "failed", f"timed out: no result within {options.timeout:g} s")
    if not options.keep:
        _cleanup(ctx)
        shutil.rmtree(home, ignore_errors=True)
    else:
        for process in ctx.processes:
            process.kill()
    outcome.seconds = time.monotonic() - started
    return outcome


def run_all(
    scenarios: list[Scenario],
    target: TargetSpec,
    java: JavaEnv,
    options: RunOptions,
    progress: Progress | None = None,
    go: GoEnv | None = None,
) -> TargetReport:
    """Every scenario against ``target`` (``options.jobs`` at a time), outcomes in catalogue order."""
    started_wall, started = time.time(), time.monotonic()
    problem = reachable(options.admin(target))
    if problem is not None:
        outcomes = [Outcome(s, "not run", problem) for s in scenarios]
        return TargetReport(target, outcomes, started_wall, time.monotonic() - started)
    go = go if go is not None else GoEnv()
    prepare(scenarios, target, java, go, options.jobs)
    done = 0
    lock = threading.Lock()

    def one(scenario: Scenario) -> Outcome:
        nonlocal done
        outcome = run_one(scenario, target, java, options, go)
        with lock:
            done += 1
            if progress is not None:
                progress(outcome, done, len(scenarios))
        return outcome

    with ThreadPoolExecutor(max(1, options.jobs)) as pool:
        outcomes = list(pool.map(one, scenarios))
    return TargetReport(target, outcomes, started_wall, time.monotonic() - started)
