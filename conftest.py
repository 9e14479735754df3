"""Settings shared by every test directory.

Hypothesis checks properties, not speed: its per-example deadline is off, because the suites run
side by side on a 2-core CI machine where one example can take 250 ms for reasons of its own.
"""

from __future__ import annotations

import resource
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import settings

settings.register_profile("rocketmq-gateway", deadline=None)
settings.load_profile("rocketmq-gateway")

#: The test files that ran longest in full runs (minutes of JVMs, brokers and clients against two
#: targets, or bounded fault loops), scheduled first: with one file per worker at a time
#: (``--dist loadfile --no-loadscope-reorder`` in ``scripts/test``), a long file started last runs
#: alone at the end while the other workers idle; started first, the many short files fill in
#: around it. ``scripts/test`` prints the slowest tests (``--durations``) to revise this list from.
LONGEST_FIRST = (
    "test_grpc55_compat.py",
    "test_broker_compat.py",
    "test_dashboard_compat.py",
    "test_compat_tool.py",
    "test_cluster.py",
    "test_grpc_consume_compat.py",
    "test_filter_compat.py",
    "test_ha_failover_compat.py",
    "test_pop_compat.py",
    "test_spark_network_compat.py",
    "test_auth_compat.py",
    "test_transaction_compat.py",
    "test_tls_compat.py",
    "test_spark_compat.py",
    "test_grpc_auth_compat.py",
    "test_timer_reply_compat.py",
    "test_topic_fidelity_compat.py",
    "test_namesrv_compat.py",
    "test_trace_compat.py",
    "test_pop_store_compat.py",
    "test_admin_compat.py",
    "test_tags_pull_batch_compat.py",
    "test_grpc_go_compat.py",
    "test_grpc_compat.py",
    "test_grpc_lite55_limits_compat.py",
    "test_rocketmq55_compat.py",
    "test_grpc_renew_compat.py",
    "test_compat_tool_install.py",
    "test_container_java.py",
    "test_route_failover_compat.py",
    "test_container_compat.py",
    "test_spark_bench_smoke.py",
    "test_grpc_fuzz.py",
    "test_vip_channel_compat.py",
    "test_spring_compat.py",
    "test_network_streaming.py",
    "test_grpc_cross_compat.py",
    "test_prometheus_compat.py",
    "test_cold_data_admin_compat.py",
    "test_wire_fuzz.py",
    "test_wire_fuzz_auth.py",
    "test_kill9.py",
    "test_pop_kill9.py",
    "test_flood_compat.py",
    "test_namespace_compat.py",
    "test_ha_compat.py",
    "test_ha_processes.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long files first, the compatibility suites before the unit tests, otherwise as collected."""
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}

    def order(item: pytest.Item) -> tuple[int, int]:
        return rank.get(item.path.name, len(rank)), 0 if item.path.parent.name == "compat_tests" else 1

    items.sort(key=order)


#: Seconds of set-up, call and tear-down per test file, summed from the reports the controller gets
#: (from every xdist worker): where the suite's time goes, to revise ``LONGEST_FIRST`` from. Beside
#: the wall time, the CPU seconds each file cost: the test process's own and those of the processes
#: it started and reaped (servers, JVMs, clients), measured in the process that ran the test.
_FILE_SECONDS: dict[str, float] = {}
_FILE_CPU_SECONDS: dict[str, float] = {}
SLOWEST_FILES = 25
CPU_PROPERTY = "cpu_s"
_cpu_mark = [0.0]


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its reaped children so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Each phase's report carries the CPU spent since the previous one in this process (what ran
    between tests counts to the next one's set-up)."""
    outcome = yield
    now = _cpu_seconds()
    outcome.get_result().user_properties.append((CPU_PROPERTY, now - _cpu_mark[0]))
    _cpu_mark[0] = now


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration
    for name, value in report.user_properties:
        if name == CPU_PROPERTY and isinstance(value, float):
            _FILE_CPU_SECONDS[path] = _FILE_CPU_SECONDS.get(path, 0.0) + value


def pytest_sessionstart(session: pytest.Session) -> None:
    _cpu_mark[0] = _cpu_seconds()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _FILE_SECONDS:
        return
    total = sum(_FILE_SECONDS.values())
    cpu = sum(_FILE_CPU_SECONDS.values())
    terminalreporter.write_sep(
        "=", f"slowest {SLOWEST_FILES} files, of {total:.0f} s wall and {cpu:.0f} s CPU in all test files"
    )
    terminalreporter.write_line(f"{'wall':>9} {'CPU':>9}  file")
    for path, seconds in sorted(_FILE_SECONDS.items(), key=lambda kv: -kv[1])[:SLOWEST_FILES]:
        terminalreporter.write_line(f"{seconds:8.1f}s {_FILE_CPU_SECONDS.get(path, 0.0):8.1f}s  {path}")
