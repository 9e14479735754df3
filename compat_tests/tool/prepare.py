"""Building the client programs a selection needs before its scenarios start.

The first use of a client line builds it (Maven fetching its jars and ``javac``, or ``go build``:
``javaenv``, ``goenv``), which can take minutes on a slow link. Done inside a scenario, that time
would count against the scenario's limit and fail the row; done here, each build has only its own
limit, and a failed one is remembered by its environment, so its rows say "not run" with why.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from compat_tests.tool.goenv import GoEnv
from compat_tests.tool.javaenv import JavaEnv
from compat_tests.tool.model import (
    GO_GRPC,
    JAVA_498,
    JAVA_533,
    JAVA_GRPC,
    MQADMIN,
    NotRun,
    Scenario,
    TargetSpec,
)

GRPC_CLIENTS = (JAVA_GRPC, GO_GRPC)


def builds(java: JavaEnv, go: GoEnv) -> dict[str, Callable[[], object]]:
    """The build of each client that has one (the Python gRPC client is installed, not built)."""
    return {
        JAVA_498: lambda: java.remoting("4.9.8"),
        JAVA_533: lambda: java.remoting("5.3.3"),
        JAVA_GRPC: java.grpc,
        MQADMIN: java.tools,
        GO_GRPC: go.grpc,
    }


def needed(scenarios: list[Scenario], target: TargetSpec) -> list[str]:
    """The clients of ``scenarios`` in catalogue order, without the gRPC ones when the target has
    no gRPC endpoint (their rows are "not run: no endpoint" anyway)."""
    clients = list(dict.fromkeys(s.client for s in scenarios))
    return [c for c in clients if target.grpc or c not in GRPC_CLIENTS]


def prepare(
    scenarios: list[Scenario], target: TargetSpec, java: JavaEnv, go: GoEnv, jobs: int = 2
) -> list[str]:
    """Build what ``scenarios`` need against ``target``, ``jobs`` at a time; the clients whose
    build failed (their environment raises the same :class:`NotRun` again). Never raises NotRun."""
    table = builds(java, go)
    wanted = [c for c in needed(scenarios, target) if c in table]

    def build(client: str) -> str | None:
        try:
            table[client]()
        except NotRun:
            return client
        return None

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return [client for client in pool.map(build, wanted) if client is not None]
