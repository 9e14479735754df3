"""Smoke run of the side-by-side benchmark, so that it cannot rot: ours only, every kind of case
(start-up, idle memory, a sync producer, a SYNC_FLUSH producer, a push consumer draining a small
backlog, NameServer lookups, and on the gRPC set-up start-up, a gRPC producer and a SimpleConsumer)
at tiny durations, through the real command line.

The reference broker is left out: on a loaded 2-core machine it takes 20 s to 2 min to boot, far
beyond a smoke run; compat_tests/test_flood_compat.py drives it with the same launcher and driver.
"""

from __future__ import annotations

import json
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


def test_smoke_run_of_every_case_kind(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "bench.side_by_side", "--targets", "ours", "--rounds", "1"]
    args += ["--cases", ",".join(CASES), "--duration", "1", "--warmup", "0.5", "--backlog", "2000"]
    args += ["--out", str(tmp_path), "--name", "smoke", "--no-chart"]
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
    assert rows["consume"]["ok"] >= 2000  # the whole backlog (plus the driver's priming send)
    assert rows["syncflush16"]["flush"] == "SYNC_FLUSH"
    table = (tmp_path / "smoke.md").read_text()
    assert "sync send, 1 thread" in table
    assert "gRPC sync send, 16 threads" in table
    assert table in done.stdout
