"""Calibration of the side-by-side benchmark without a JVM: which windows are marked LOADED and why,
how the marks and a third target (``--before``) reach the summary and the markdown, the
benchmark's own share of the load average, and the wait for a quiet machine before each window
(on a fake clock)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from bench.side_by_side.__main__ import parse_args
from bench.side_by_side.calibration import LoadWatch, Settle, Thresholds, calibrate, judge, own_processes
from bench.side_by_side.driver import Snapshot
from bench.side_by_side.official import OfficialRun, TpsLine
from bench.side_by_side.report import render_table, summarize
from bench.side_by_side.settle import OtherCpu, wait_until_quiet

META: dict[str, Any] = {
    "date": "2026-11-27T16:00:00+00:00",
    "machine": {
        "cpu": "test cpu",
        "cores": 2,
        "memory_gib": 8.0,
        "kernel": "6",
        "java": "openjdk 17",
        "python": "3.11",
        "loadavg_at_start": ["0.10", "0.20", "0.30"],
        "loadavg_at_end": ["0.40", "0.50", "0.60"],
    },
    "ours": "abc1234 (pure modules)",
    "before": "10085c3 (pure modules)",
    "reference": "Apache RocketMQ 5.3.3",
    "client": "drivers",
    "thresholds": {"max_load": 1.0, "max_other_cores": 0.25},
}


def _window(load_start: float, load_end: float, other_cores: float) -> dict[str, Any]:
    return {
        "window_at": (10.0, 20.0),
        "load_1m_start": load_start,
        "load_1m_end": load_end,
        "other_cores": other_cores,
    }


def test_a_quiet_window_is_not_marked() -> None:
    metrics = _window(0.4, 0.9, 0.05)
    calibrate(metrics, None, Thresholds())
    assert metrics == {
        "load_1m_start": 0.4,
        "load_1m_end": 0.9,
        "other_cores": 0.05,
        "others_load_start": 0.4,
        "others_load_end": 0.9,
    }


def test_a_window_after_a_loaded_minute_or_with_busy_neighbours_is_marked() -> None:
    loaded = _window(1.5, 0.5, 0.05)
    calibrate(loaded, None, Thresholds())
    assert loaded["loaded"] == ["others' 1-minute load 1.50 before the window (machine 1.50) > 1.0"]
    busy = _window(0.2, 0.2, 0.4)
    calibrate(busy, None, Thresholds(max_other_cores=0.3))
    assert busy["loaded"] == ["other processes used 0.40 cores in the window > 0.3"]


def test_the_benchmarks_own_load_is_not_counted_against_the_window() -> None:
    class Own(LoadWatch):
        def own_load_at(self, at: float) -> float:
            return {10.0: 1.8, 20.0: 2.5}[at]

    metrics = _window(2.3, 2.4, 0.1)
    calibrate(metrics, Own(), Thresholds())
    assert metrics["others_load_start"] == pytest.approx(0.5)
    assert metrics["others_load_end"] == 0.0  # never below zero
    assert "loaded" not in metrics


def test_rows_without_a_window_are_left_alone() -> None:
    metrics = {"msgs_per_s": 10.0, "other_cores": 2.0}
    calibrate(metrics, None, Thresholds())
    assert metrics == {"msgs_per_s": 10.0, "other_cores": 2.0}


def test_the_load_watch_counts_this_process_and_its_children() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert {os.getpid(), child.pid} <= set(own_processes(os.getpid()))
        watch = LoadWatch(sample_s=0.05)
        watch.start()
        try:
            deadline = time.monotonic() + 10
            while watch.own_load_at(time.perf_counter()) == 0.0 and time.monotonic() < deadline:
                time.sleep(0.02)  # the main thread counts as runnable only while it runs
                sum(range(200_000))
        finally:
            watch.stop()
        assert 0 < watch.own_load_at(time.perf_counter()) < 5
        assert watch.own_load_at(0.0) == 0.0  # before the first sample
    finally:
        child.kill()
        child.wait()


def _row(target: str, rnd: int, msgs_per_s: float, cpu_us: float, **extra: Any) -> dict[str, Any]:
    return {
        "round": rnd,
        "target": target,
        "case": "grpc_send1",
        "msgs_per_s": msgs_per_s,
        "server_cpu_us_per_msg": cpu_us,
        "p50_ms": 1.5,
        "p99_ms": 4.0,
        "other_cores": 0.1,
        "load_1m_start": 0.5,
        "others_load_start": 0.3,
        **extra,
    }


def test_before_is_a_column_of_its_own_and_loaded_rounds_are_marked_at_the_top() -> None:
    rows = [
        _row("before", 0, 400.0, 900.0),
        _row("ours", 0, 500.0, 600.0),
        _row("reference", 0, 2000.0, 300.0, loaded=["other processes used 0.40 cores"]),
        _row("before", 1, 420.0, 880.0),
        _row("ours", 1, 520.0, 620.0),
        _row("reference", 1, 2100.0, 320.0),
    ]
    summary = summarize(rows)
    send = summary["grpc_send1"]
    assert send["ratio_before"]["server_cpu_us_per_msg"] == pytest.approx(610 / 890)
    assert send["ratio"]["server_cpu_us_per_msg"] == pytest.approx(610 / 310)
    assert "others_load_start" not in send["ratio"]
    assert send["loaded"] == {"reference": 1}

    table = render_table(summary, META)
    assert table.startswith("**LOADED: not a publishable figure.** Windows of grpc_send1")
    grpc = table[table.index("### gRPC against the Proxy") :].splitlines()
    header = next(line for line in grpc if line.startswith("| case |"))
    assert header.startswith("| case | before msgs/s | ours msgs/s | Proxy msgs/s | before CPU µs/msg |")
    row = next(line for line in grpc if line.startswith("| gRPC sync send, 1 thread"))
    assert "**LOADED: not a publishable figure** (rounds: reference 1)" in row
    assert "| 410 (400–420) | 510 (500–520) | 2,050 (2,000–2,100) |" in row
    assert "| 890.0 (880.0–900.0) | 610.0 (600.0–620.0) | 310.0 (300.0–320.0) | 0.69× | 1.97× |" in row
    assert "| 1.50 | 1.50 | 1.50 | 0.30 / 0.30 / 0.30 | 0.10 / 0.10 / 0.10 |" in row


def test_a_run_without_loaded_windows_has_no_banner() -> None:
    table = render_table(summarize([_row("ours", 0, 500.0, 600.0)]), META)
    assert table.startswith("## Side by side")
    assert "LOADED" not in table


def test_before_option_adds_a_third_target_and_thresholds_are_options() -> None:
    args = parse_args(["--before", "10085c3", "--max-load", "2.5", "--max-other-cores", "0.5"])
    assert args.targets == ["ours", "reference", "before"]
    assert (args.max_load, args.max_other_cores) == (2.5, 0.5)
    defaults = parse_args([])
    assert defaults.targets == ["ours", "reference"]
    assert (defaults.max_load, defaults.max_other_cores, defaults.grpc_warmup_msgs) == (1.0, 0.25, 5000)
    assert {"grpc_send1", "grpc_async", "grpc_fifo16", "grpc_push"} <= set(defaults.cases)
    with pytest.raises(SystemExit):
        parse_args(["--before", "no-such-revision"])


def test_parse_args_takes_a_settle_timeout() -> None:
    assert parse_args([]).settle_timeout == 150.0
    assert parse_args(["--settle-timeout", "1"]).settle_timeout == 1.0


def _settle(loads: tuple[float, ...], others: tuple[float, ...], waited_s: float, timed_out: bool) -> Settle:
    return Settle(loads, others, waited_s, timed_out)


def test_judge_a_window_after_a_settled_wait_by_its_other_cpu_only() -> None:
    settled = _settle((2.1, 1.4, 0.98), (0.01, 0.02), 42.0, timed_out=False)
    # At the window's start the driver's warm-up has lifted the load again: not held against it.
    assert judge(settled, 2.5, 2.9, 0.05, Thresholds()) == []
    assert judge(settled, 2.5, 2.9, 0.4, Thresholds()) == [
        "other processes used 0.40 cores in the window > 0.25"
    ]


def test_judge_a_wait_that_timed_out() -> None:
    still_loaded = _settle((3.0, 2.0, 1.3), (0.01, 0.05), 150.0, timed_out=True)
    assert judge(still_loaded, 0.2, 1.3, 0.01, Thresholds()) == [
        "1-minute load 1.30 before the case, still >= 1.0 after waiting 150 s"
    ]
    busy_neighbours = _settle((0.5, 0.6), (0.6,), 1.0, timed_out=True)
    assert judge(busy_neighbours, 0.2, 0.6, 0.5, Thresholds()) == [
        "other processes used 0.60 cores before the case, still > 0.25 after waiting 1 s",
        "other processes used 0.50 cores in the window > 0.25",
    ]
    no_wait = _settle((1.0,), (), 0.0, timed_out=True)  # --settle-timeout 0: one reading, at the limit
    assert judge(no_wait, 0.0, 1.0, 0.0, Thresholds()) == [
        "1-minute load 1.00 before the case, still >= 1.0 after waiting 0 s"
    ]


def test_judge_without_a_wait_keeps_the_others_load_at_the_window() -> None:
    assert judge(None, 1.5, 2.0, 0.0, Thresholds()) == [
        "others' 1-minute load 1.50 before the window (machine 2.00) > 1.0"
    ]
    assert judge(None, 0.5, 2.0, None, Thresholds()) == []


class FakeMachine:
    """A clock, a sleep that advances it, and the load and other-process CPU readings it returns
    in turn (the last one repeated)."""

    def __init__(self, loads: list[float], others: list[float]) -> None:
        self.now = 1000.0
        self.loads, self.others = loads, others
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def load(self) -> float:
        return self.loads.pop(0) if len(self.loads) > 1 else self.loads[0]

    def other_cpu(self) -> float:
        return self.others.pop(0) if len(self.others) > 1 else self.others[0]

    def wait(self, timeout_s: float, thresholds: Thresholds | None = None) -> Settle:
        return wait_until_quiet(
            thresholds or Thresholds(), timeout_s, self.other_cpu, self.load, self.clock, self.sleep, 5.0
        )


def test_the_wait_polls_until_the_load_falls_under_the_threshold() -> None:
    machine = FakeMachine([2.0, 1.6, 1.2, 0.9, 0.5], [0.01])
    settle = machine.wait(150.0)
    assert settle == Settle((2.0, 1.6, 1.2, 0.9), (0.01, 0.01, 0.01), 15.0, timed_out=False)
    assert machine.sleeps == [5.0, 5.0, 5.0]
    assert settle.describe() == "settled in 15 s: load 0.90, others 0.01 cores"
    assert settle.fields() == {
        "load_before_case": 0.9,
        "other_cores_before_case": 0.01,
        "settle_waited_s": 15.0,
        "settle_timed_out": False,
    }


def test_a_quiet_machine_is_sampled_once_and_busy_neighbours_keep_it_waiting() -> None:
    quiet = FakeMachine([0.3], [0.0])
    assert quiet.wait(150.0) == Settle((0.3, 0.3), (0.0,), 5.0, timed_out=False)
    busy = FakeMachine([0.3], [0.9, 0.8, 0.1])
    assert busy.wait(150.0) == Settle((0.3,) * 4, (0.9, 0.8, 0.1), 15.0, timed_out=False)


def test_the_wait_ends_at_its_deadline() -> None:
    machine = FakeMachine([1.8, 1.7, 1.6, 1.5], [0.0])
    settle = machine.wait(12.0)
    assert machine.sleeps == [5.0, 5.0, 2.0]  # the last sleep stops at the deadline
    assert settle == Settle((1.8, 1.7, 1.6, 1.5), (0.0, 0.0, 0.0), 12.0, timed_out=True)
    assert settle.describe() == "NOT settled after 12 s: load 1.50, others 0.00 cores"


def test_a_zero_timeout_reads_the_load_once() -> None:
    assert FakeMachine([0.4], [0.0]).wait(0.0) == Settle((0.4,), (), 0.0, timed_out=False)
    loaded = FakeMachine([1.4], [0.0]).wait(0.0)
    assert loaded == Settle((1.4,), (), 0.0, timed_out=True)
    assert loaded.describe() == "NOT settled after 0 s: load 1.40"


def test_calibrate_keeps_the_settle_readings_and_judges_by_them() -> None:
    metrics = {**_window(2.6, 2.4, 0.02), "settle": _settle((1.9, 0.95), (0.01,), 44.0, timed_out=False)}
    calibrate(metrics, None, Thresholds())
    assert "loaded" not in metrics
    assert "settle" not in metrics
    assert metrics["others_load_start"] == 2.6  # still recorded, no longer judged
    assert (metrics["load_before_case"], metrics["settle_waited_s"]) == (0.95, 44.0)
    assert metrics["settle_timed_out"] is False


def test_an_official_programs_window_is_calibrated_like_the_drivers() -> None:
    line = TpsLine(tps=1000, msgs_per_s=1000, avg_rt_ms=4.0, max_rt_ms=30, failed=0)
    start = Snapshot(at=100.0, server_cpu_s=10.0, driver_cpu_s=1.0, machine_busy_s=50.0, load_1m=1.7)
    end = Snapshot(at=109.0, server_cpu_s=11.8, driver_cpu_s=4.0, machine_busy_s=63.0, load_1m=2.2)
    metrics = OfficialRun(line, line, start, end, []).metrics()
    metrics["settle"] = _settle((0.8,), (0.0,), 30.0, timed_out=False)
    calibrate(metrics, None, Thresholds())
    assert metrics["other_cores"] == pytest.approx((13.0 - 1.8 - 3.0) / 9.0)
    assert metrics["loaded"] == ["other processes used 0.91 cores in the window > 0.25"]
    assert (metrics["load_1m_start"], metrics["others_load_start"], metrics["load_before_case"]) == (
        1.7,
        1.7,
        0.8,
    )
    assert "window_at" not in metrics


def test_the_other_cpu_sample_leaves_out_this_process_and_its_children() -> None:
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        others = OtherCpu()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            sum(range(100_000))  # this process and its child keep one core each busy
        # What is left is the other sessions' CPU: at most the machine's cores, never below zero.
        assert 0.0 <= others.sample() <= (os.cpu_count() or 1)
    finally:
        child.kill()
        child.wait()


def test_the_settle_readings_reach_the_grpc_table_and_the_banner() -> None:
    rows = [
        _row("ours", 0, 500.0, 600.0, load_before_case=0.9, settle_waited_s=40.0),
        _row("reference", 0, 2000.0, 300.0, load_before_case=1.2, settle_waited_s=150.0, loaded=["load"]),
    ]
    summary = summarize(rows)
    assert "load_before_case" not in summary["grpc_send1"]["ratio"]
    table = render_table(summary, {**META, "thresholds": {**META["thresholds"], "settle_timeout_s": 150.0}})
    assert "the wait for a quiet machine timed out after 150.0 s" in table.splitlines()[0]
    grpc = table[table.index("### gRPC against the Proxy") :].splitlines()
    header = next(line for line in grpc if line.startswith("| case |"))
    assert header.endswith("| load before the case, waited s (ours / Proxy) |")
    row = next(line for line in grpc if line.startswith("| gRPC sync send, 1 thread"))
    assert row.endswith("| 0.90, 40 s / 1.20, 150 s |")
