"""The ``kill -9`` loop with POP consumers: ``POP_KILL_CYCLES`` SIGKILLs at random moments under
SYNC_FLUSH while one sender sends and one consumer pops and acks; in the end every message whose
send was acknowledged has been popped and acknowledged at least once (the ones a kill interrupted
come back after their invisible time). Lost messages must be 0; duplicates are reported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fault.pop_kill_loop import run_pop_kill_loop

POP_KILL_CYCLES = int(os.environ.get("FAULT_POP_KILL_CYCLES", "6"))


@pytest.mark.slow
def test_kill9_with_pop_consumers_loses_no_acknowledged_message(tmp_path: Path) -> None:
    result = run_pop_kill_loop(tmp_path, POP_KILL_CYCLES)
    print(
        f"\nPOP kill -9 loop: {result.cycles} cycles, {result.sent} sent, {result.consumed} consumed, "
        f"{len(result.lost)} lost, {result.duplicates} duplicate pops "
        f"({result.after_ack} after a successful ack), restart max {max(result.restart_s):.2f} s, "
        f"drain {result.drain_s:.1f} s, {result.elapsed_s:.0f} s"
    )
    assert result.lost == []
    assert result.cycles == POP_KILL_CYCLES
    assert result.sent > POP_KILL_CYCLES  # every cycle's sender got answers before the kill
