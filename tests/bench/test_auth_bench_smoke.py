"""Smoke runs of the security cost benchmarks, so that they cannot rot: ``python -m bench.auth``
(in-process, ACL off and on) and ``python -m bench.auth.end_to_end`` (over sockets with the Java
producer, ACL and TLS each off and on), ours only, at tiny counts, through the real command line.
The reference broker is left out for the reason ``test_side_by_side_smoke`` gives: its start-up
on a loaded 2-core machine is far beyond a smoke run."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from bench.side_by_side.servers import REPO

pytestmark = pytest.mark.slow

ROW = re.compile(r"^(acl|tls)\s+(\d+)\s+(\d+)$", re.MULTILINE)


def test_end_to_end_prints_acl_and_tls_rows_for_ours() -> None:
    args = [sys.executable, "-m", "bench.auth.end_to_end", "--targets", "gateway", "--sends", "40"]
    done = subprocess.run([*args, "--warmup", "10"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in ROW.finditer(done.stdout)}
    assert set(rows) == {"acl", "tls"}, done.stdout
    assert all(off > 0 and on > 0 for off, on in rows.values()), rows


def test_in_process_bench_runs() -> None:
    args = [sys.executable, "-m", "bench.auth", "--sends", "200", "--rounds", "1"]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "authn+authz" in done.stdout, done.stdout
