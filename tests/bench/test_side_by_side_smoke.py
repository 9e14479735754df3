"""Smoke run of the side-by-side benchmark, so that it cannot rot: ours only, every kind of case
(start-up, idle memory, a sync producer, a SYNC_FLUSH producer, a push consumer draining a small
backlog, NameServer lookups, and on the gRPC set-up start-up, a gRPC producer and a SimpleConsumer)
at tiny durations, through the real command line; then the other gRPC cases (send from one thread,
async, FIFO, a PushConsumer draining a backlog) with thresholds no machine can meet, so every row is
marked LOADED (each after a wait for a quiet machine that times out in 1 s), a run with ``--before``
(a third target, ours at a revision), and a run whose wait for a quiet machine ends at its first
sample. The other runs read the load once instead of waiting (``--settle-timeout 0``): the shared
machine the suite runs on is seldom quiet, and their figures are not for publishing.

The reference broker is left out: on a loaded 2-core machine it takes 20 s to 2 min to boot, far
beyond a smoke run; compat_tests/test_flood_compat.py drives it with the same launcher and driver.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.side_by_side.servers import REPO

pytestmark = pytest.mark.slow

CASES = (
    "startup",
    "memory",
    "sync1",
    "syncflush16",
    "consume",
    "lookup1",
    "grpc_startup",
    "grpc_send",
    "grpc_receive",
)


#: The push consumer's backlog: large enough that draining it lasts more than a few of the
#: kernel's 10 ms CPU ticks (2,000 drained in ~0.3 s at ~0.07 cores and sometimes read as 0 CPU).
CONSUME_BACKLOG = 10_000


def test_smoke_run_of_every_case_kind(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "bench.side_by_side", "--targets", "ours", "--rounds", "1"]
    args += ["--cases", ",".join(CASES), "--duration", "1", "--warmup", "0.5"]
    args += ["--backlog", str(CONSUME_BACKLOG)]
    args += ["--grpc-warmup-msgs", "100", "--out", str(tmp_path), "--name", "smoke", "--no-chart"]
    args += ["--settle-timeout", "0"]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=360)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((tmp_path / "smoke.json").read_text())
    rows = {row["case"]: row for row in result["runs"]}
    assert set(rows) == set(CASES), rows
    assert not [r for r in result["runs"] if "error" in r]
    assert 0 < rows["startup"]["ready_s"] <= rows["startup"]["first_send_s"] < 60
    assert rows["memory"]["anon_mib"] > 0
    assert rows["memory"]["file_mib"] > 0
    assert rows["memory"]["rss_mib"] == pytest.approx(rows["memory"]["anon_mib"] + rows["memory"]["file_mib"])
    grpc_start = rows["grpc_startup"]
    assert 0 < grpc_start["ready_s"] <= grpc_start["first_send_s"] <= grpc_start["first_grpc_send_s"] < 60
    for case in ("sync1", "syncflush16", "consume", "lookup1", "grpc_send", "grpc_receive"):
        assert rows[case]["ok"] > 0, rows[case]
        assert rows[case]["msgs_per_s"] > 0, rows[case]
        assert rows[case]["server_cpu_us_per_msg"] > 0, rows[case]
    assert rows["consume"]["ok"] >= CONSUME_BACKLOG  # the whole backlog (plus the driver's priming send)
    assert rows["syncflush16"]["flush"] == "SYNC_FLUSH"
    table = (tmp_path / "smoke.md").read_text()
    assert "sync send, 1 thread" in table
    assert "gRPC sync send, 16 threads" in table
    assert table in done.stdout


NEW_GRPC_CASES = ("grpc_send1", "grpc_async", "grpc_fifo16", "grpc_push")
BACKLOG = 600
WARMUP_MSGS = 100


def test_smoke_run_of_the_grpc_cases_with_every_window_marked_loaded(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "bench.side_by_side", "--targets", "ours", "--rounds", "1"]
    args += ["--cases", ",".join(NEW_GRPC_CASES), "--duration", "1", "--warmup", "0.3"]
    args += ["--backlog", str(BACKLOG), "--grpc-warmup-msgs", str(WARMUP_MSGS)]
    args += ["--max-load", "-1", "--max-other-cores", "-1"]  # below any reading: every row is marked
    args += ["--settle-timeout", "1"]  # so each wait times out
    args += ["--out", str(tmp_path), "--name", "smoke", "--no-chart"]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((tmp_path / "smoke.json").read_text())
    rows = {row["case"]: row for row in result["runs"]}
    assert set(rows) == set(NEW_GRPC_CASES), rows
    for case, row in rows.items():
        assert row["ok"] > 0, row
        assert row["failed"] == 0, row
        assert row["server_cpu_us_per_msg"] > 0, row
        assert row["load_1m_start"] >= 0
        assert 0 <= row["others_load_start"] <= row["load_1m_start"]
        assert row["other_cores"] >= 0
        assert any("1-minute load" in reason for reason in row["loaded"]), row
        assert any("other processes used" in reason for reason in row["loaded"]), row
        assert "window_at" not in row
        if case != "grpc_push":
            assert row["warmup_msgs"] >= WARMUP_MSGS, row
    assert rows["grpc_async"]["p50_ms"] > 0
    # The push consumer's window holds the backlog; the warm-up had messages of its own.
    assert rows["grpc_push"]["ok"] >= BACKLOG
    assert rows["grpc_push"]["warmup_msgs"] == WARMUP_MSGS
    assert rows["grpc_push"]["store_to_delivery_p50_ms"] > 0
    assert (
        result["meta"]["loaded"]
        == "LOADED: not a publishable figure: 4 of 4 measured windows were on a loaded machine"
    )
    table = (tmp_path / "smoke.md").read_text()
    assert table.startswith("**LOADED: not a publishable figure.**")
    grpc_table = table[table.index("### gRPC against the Proxy") :]
    for title in ("gRPC sync send, 1 thread", "gRPC async send, 1,024 in flight", "gRPC FIFO sync send"):
        line = next(line for line in grpc_table.splitlines() if line.startswith(f"| {title}"))
        assert "**LOADED: not a publishable figure** (rounds: ours 1)" in line
    assert "LOADED: not a publishable figure" in done.stderr  # beside each row as it is measured


def test_smoke_run_with_a_revision_before_as_a_third_target(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "bench.side_by_side", "--targets", "ours", "--before", "HEAD"]
    args += ["--rounds", "1", "--cases", "grpc_send1", "--duration", "1", "--warmup", "0.3"]
    args += ["--grpc-warmup-msgs", str(WARMUP_MSGS), "--out", str(tmp_path), "--name", "smoke", "--no-chart"]
    args += ["--settle-timeout", "0"]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((tmp_path / "smoke.json").read_text())
    assert sorted(row["target"] for row in result["runs"]) == ["before", "ours"]
    assert all(row["server_cpu_us_per_msg"] > 0 for row in result["runs"])
    assert result["meta"]["before"].endswith("(pure modules)")
    assert "CPU ours / before" in (tmp_path / "smoke.md").read_text()


def test_smoke_run_whose_wait_for_a_quiet_machine_ends_at_its_first_sample(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "bench.side_by_side", "--targets", "ours", "--rounds", "1"]
    args += ["--cases", "lookup1", "--duration", "1", "--warmup", "0.3", "--settle-timeout", "30"]
    args += ["--max-load", "1000", "--max-other-cores", "1000"]  # above any reading: quiet at once
    args += ["--out", str(tmp_path), "--name", "smoke", "--no-chart"]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = json.loads((tmp_path / "smoke.json").read_text())["runs"]
    assert row["settle_timed_out"] is False, row
    assert 0.9 <= row["settle_waited_s"] < 30  # one sample of the other processes' CPU
    assert row["load_before_case"] >= 0
    assert row["other_cores_before_case"] >= 0
    assert "loaded" not in row
    assert "ours round 0 lookup1: waiting up to 30 s for the machine to settle" in done.stderr
    load = re.escape(f"{row['load_before_case']:.2f}")
    settled = rf"ours round 0 lookup1: settled in \d+ s: load {load}, others \d+\.\d\d cores"
    assert re.search(settled, done.stderr)
    assert re.search(rf"load {load} before the case \(waited \d+ s\)", done.stderr)
    assert "LOADED" not in (tmp_path / "smoke.md").read_text()
