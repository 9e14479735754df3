"""Calibration of the side-by-side benchmark without a JVM: which windows are marked LOADED and why,
how the marks and a third target (``--before``) reach the summary and the markdown, and the
benchmark's own share of the load average."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from bench.side_by_side.__main__ import parse_args
from bench.side_by_side.calibration import LoadWatch, Thresholds, calibrate, own_processes
from bench.side_by_side.report import render_table, summarize

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
    metrics = {"msgs_per_s": 10.0, "other_cores": 2.0}  # an official program's row
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
