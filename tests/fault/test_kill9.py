"""The ``kill -9`` loop of the fault suite: ``KILL_CYCLES`` SIGKILLs at random moments
under SYNC_FLUSH with four concurrent senders; after each restart every acknowledged message is
pulled back. Lost messages must be 0."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fault.kill_loop import run_kill_loop

KILL_CYCLES = int(os.environ.get("FAULT_KILL_CYCLES", "20"))


@pytest.mark.slow
def test_kill9_under_sync_flush_loses_no_acknowledged_message(tmp_path: Path) -> None:
    result = run_kill_loop(tmp_path, KILL_CYCLES, senders=4)
    print(
        f"\nkill -9 loop: {result.cycles} cycles, {result.acknowledged} acknowledged, "
        f"{len(result.lost)} lost, restart max {max(result.restart_s):.2f} s, {result.elapsed_s:.0f} s"
    )
    assert result.lost == []
    assert result.cycles == KILL_CYCLES
    assert result.acknowledged > KILL_CYCLES * 4  # every cycle's senders got answers before the kill
