"""The second-core prototype (``python -m bench.store.second_core``) run tiny: the split put must
leave the consume queues and index the inline put leaves (every message once, each unit pointing at
its own record), across commit-log files that roll, and the command line must run end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.store.reput import verify_store
from bench.store.second_core import measure_components, run_case

REPO = Path(__file__).resolve().parent.parent.parent
MESSAGES = 300
FILE_SIZE = 128 * 1024  # ~100 records a file: the dispatcher follows the writer over blank markers


@pytest.mark.parametrize("batch", [1, 16])
@pytest.mark.parametrize("mode", ["inline", "split", "shipped"])
def test_every_message_dispatched_once(tmp_path: Path, mode: str, batch: int) -> None:
    result = run_case(mode, batch, 0, MESSAGES, tmp_path, FILE_SIZE)
    assert result.messages == MESSAGES
    assert result.visible_s >= result.put_s > 0
    assert (result.cpu_b_s > 0) == (mode != "inline")
    assert len(list((tmp_path / "commitlog").iterdir())) >= 3, "the commit log rolled"
    assert verify_store(tmp_path, FILE_SIZE) == (MESSAGES, MESSAGES)


def test_components_measure_each_half(tmp_path: Path) -> None:
    figures = measure_components(16, MESSAGES, tmp_path, FILE_SIZE)
    assert min(figures) > 0
    assert verify_store(tmp_path / "split", FILE_SIZE) == (MESSAGES, MESSAGES)
    assert verify_store(tmp_path / "shipped", FILE_SIZE) == (MESSAGES, MESSAGES)


def test_command_line_runs_the_modes_asked() -> None:
    args = [sys.executable, "-m", "bench.store.second_core", "--messages", "64", "--rounds", "1"]
    args += ["--batches", "16", "--neighbours", "0,1", "--modes", "inline,split"]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    medians = lines[lines.index("medians:") + 2 :]
    assert [line.split()[:3] for line in medians[:4]] == [
        ["inline", "16", "0"],
        ["split", "16", "0"],
        ["inline", "16", "1"],
        ["split", "16", "1"],
    ]
