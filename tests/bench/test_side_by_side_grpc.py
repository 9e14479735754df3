"""The gRPC cases of the side-by-side benchmark without a JVM: which server set-ups a selection of
cases starts, and how their rows become the summary and the markdown table (ratios ours /
reference, the start-up and memory rows of the gRPC set-up apart from the plain ones)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.side_by_side.__main__ import parse_args, server_setups
from bench.side_by_side.report import render_table, summarize

META: dict[str, Any] = {
    "date": "2026-11-25T20:00:00+00:00",
    "machine": {
        "cpu": "test cpu",
        "cores": 2,
        "memory_gib": 8.0,
        "kernel": "6",
        "java": "openjdk 17",
        "python": "3.11",
        "loadavg_at_start": ["1.00", "2.00", "3.00"],
        "loadavg_at_end": ["4.00", "5.00", "6.00"],
    },
    "ours": "abc1234",
    "reference": "Apache RocketMQ 5.3.3",
    "client": "drivers",
}


def _throughput(target: str, case: str, rnd: int, msgs_per_s: float, cpu_us: float) -> dict[str, Any]:
    return {
        "round": rnd,
        "target": target,
        "flush": "ASYNC_FLUSH",
        "endpoint": "grpc",
        "case": case,
        "msgs_per_s": msgs_per_s,
        "server_cpu_us_per_msg": cpu_us,
        "p50_ms": 1.0,
        "p99_ms": 4.0,
        "p999_ms": 8.0,
        "other_cores": 0.5,
    }


def _server(target: str, case: str, **metrics: float) -> dict[str, Any]:
    return {"round": 0, "target": target, "flush": "ASYNC_FLUSH", "case": case, **metrics}


def test_grpc_cases_get_a_server_set_up_of_their_own() -> None:
    setups = server_setups(["startup", "sync1", "grpc_send", "grpc_receive", "grpc_memory"])
    by_setup = {setup: [case.name for case in cases] for setup, cases in setups}
    assert by_setup == {(False, False): ["sync1"], (False, True): ["grpc_send", "grpc_receive"]}


def test_grpc_server_rows_alone_start_only_the_grpc_set_up() -> None:
    assert [setup for setup, _ in server_setups(["grpc_startup"])] == [(False, True)]
    assert [setup for setup, _ in server_setups(["startup", "memory"])] == [(False, False)]


def test_grpc_cases_are_selectable_and_in_the_default_selection() -> None:
    assert parse_args(["--cases", "grpc_send,grpc_startup"]).cases == ["grpc_send", "grpc_startup"]
    defaults = parse_args([]).cases
    assert {"grpc_send", "grpc_receive", "grpc_startup", "grpc_memory"} <= set(defaults)
    with pytest.raises(SystemExit):
        parse_args(["--cases", "grpc_nope"])


def test_summary_and_table_of_grpc_rows() -> None:
    rows = [
        _throughput("ours", "grpc_send", 0, 1000.0, 300.0),
        _throughput("ours", "grpc_send", 1, 1200.0, 320.0),
        _throughput("reference", "grpc_send", 0, 4000.0, 150.0),
        _throughput("reference", "grpc_send", 1, 4400.0, 170.0),
        _throughput("ours", "grpc_receive", 0, 3000.0, 90.0),
        _throughput("reference", "grpc_receive", 0, 6000.0, 60.0),
        {"round": 0, "target": "ours", "case": "grpc_receive", "error": "DriverError: boom"},
        _server("ours", "grpc_startup", ready_s=0.5, first_send_s=0.6, first_grpc_send_s=0.7),
        _server("reference", "grpc_startup", ready_s=10.0, first_send_s=11.0, first_grpc_send_s=14.0),
        _server("ours", "grpc_memory", rss_mib=40.0, anon_mib=30.0, file_mib=10.0),
        _server("reference", "grpc_memory", rss_mib=800.0, anon_mib=700.0, file_mib=100.0),
    ]
    summary = summarize(rows)
    send = summary["grpc_send"]
    assert send["ours"]["msgs_per_s"] == {"median": 1100.0, "min": 1000.0, "max": 1200.0, "n": 2}
    assert send["ratio"]["msgs_per_s"] == pytest.approx(1100 / 4200)
    assert send["ratio"]["server_cpu_us_per_msg"] == pytest.approx(310 / 160)
    assert "other_cores" not in send["ratio"]
    assert summary["grpc_receive"]["ours"]["msgs_per_s"]["n"] == 1  # the failed round is left out
    assert summary["grpc_startup"]["ratio"]["first_grpc_send_s"] == pytest.approx(0.05)
    assert summary["grpc_memory"]["ratio"]["rss_mib"] == pytest.approx(0.05)

    table = render_table(summary, META)
    lines = table.splitlines()
    send_row = next(line for line in lines if line.startswith("| gRPC sync send, 16 threads |"))
    assert "| 1,100 (1,000–1,200) | 4,200 (4,000–4,400) | 0.26× |" in send_row
    assert "| 310.0 (300.0–320.0) | 160.0 (150.0–170.0) | 1.94× |" in send_row
    receive_row = next(line for line in lines if line.startswith("| gRPC SimpleConsumer receive + ack"))
    assert "| 3,000 | 6,000 | 0.50× | 90.0 | 60.0 | 1.50× |" in receive_row
    assert any("first stored gRPC send" in line and "| 0.700 | 14.000 | 0.05× |" in line for line in lines)
    assert any("idle RSS" in line and "| 40.0 | 800.0 | 0.05× |" in line for line in lines)
    assert "start-up to ready (s)" not in table  # no plain start-up rows were given
    assert "load average 1.00 2.00 3.00 at start, 4.00 5.00 6.00 at end" in table
