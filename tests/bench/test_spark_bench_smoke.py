"""Smoke run of the Spark reader benchmark (``python -m bench.spark``), so that it cannot rot: an
8 MiB store, one round, warm page cache only (``--no-cold``: a test must not drop the machine's
page cache), through the real command line; network mode with 200 messages served by our gateway
(the real broker's side is the same code with another target, left to the full run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent.parent
SIZE_MIB = 8
NETWORK_MESSAGES = 200
RECORD_BYTES = (1100, 1300)  # a 1 KiB body plus header, topic and properties (bench/spark/store.py)
CASES = {
    ("raw read", None),
    ("reader", False),
    ("reader", True),
    ("count", False),
    ("count", True),
    ("scan", False),
    ("scan", True),
}


def test_smoke_run_of_every_case(tmp_path: Path) -> None:
    store = tmp_path / "store"
    args = [sys.executable, "-m", "bench.spark", "--size-mib", str(SIZE_MIB), "--rounds", "1", "--no-cold"]
    args += ["--store", str(store), "--out", str(tmp_path), "--name", "smoke"]
    args += ["--network-messages", str(NETWORK_MESSAGES), "--network-targets", "gateway"]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=360)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not store.exists(), "the store is removed without --keep"
    result = json.loads((tmp_path / "smoke.json").read_text())
    meta = result["meta"]
    assert SIZE_MIB * 2**20 <= meta["data_bytes"] < SIZE_MIB * 2**20 + 64 * RECORD_BYTES[1]
    assert RECORD_BYTES[0] <= meta["data_bytes"] / meta["messages"] <= RECORD_BYTES[1]
    summary = {(s["case"], s["include_body"]): s for s in result["summary"]}
    assert set(summary) == CASES
    assert {s["cache"] for s in result["summary"]} == {"warm"}
    raw = summary[("raw read", None)]
    assert raw["mb_per_s"] > 10, raw  # any disk or page cache reads faster than 10 MB/s
    for key, s in summary.items():
        assert s["seconds"] > 0, s
        assert s["mb_per_s"] > 0, s
        if key != ("raw read", None):
            assert s["rows_per_s"] == pytest.approx(meta["messages"] / s["seconds"]), s
            assert 0 < s["ratio_to_raw"] == pytest.approx(s["mb_per_s"] / raw["mb_per_s"]), s
        if key[0] in ("count", "scan"):  # CPU split of the Spark cases, from /proc
            assert s["python_cpu_us_per_row"] > 0, s  # the decoding happens in the Python workers
            assert s["jvm_cpu_us_per_row"] > 0, s
            assert 0 < s["cores_busy"] <= (os.cpu_count() or 1) + 0.5, s  # CPU time over wall time
    assert all(r["rows"] == meta["messages"] for r in result["runs"] if r["case"] != "raw read")
    [net] = result["network"]
    assert (net["target"], net["messages"], net["body_bytes"]) == ("gateway", NETWORK_MESSAGES, 1024)
    for key in ("send_per_s", "pull_per_s", "count_per_s", "jvm_cpu_us_per_row", "python_cpu_us_per_row"):
        assert net[key] > 0, net
    assert net["count_per_s"] == pytest.approx(NETWORK_MESSAGES / net["count_seconds"]), net
    table = (tmp_path / "smoke.md").read_text()
    assert "| raw sequential read (8 MiB readinto) | - | warm |" in table
    assert f"Network mode: {NETWORK_MESSAGES:,} messages of 1024 B" in table
    assert "\n| gateway | " in table
    assert table in done.stdout
