"""The ``kill -9`` loop on a SYNC_MASTER/slave pair of ours (:mod:`tests.fault.ha_kill_loop`):
``HA_KILL_CYCLES`` cycles of concurrent sends, the master SIGKILLed at a random moment with its
store deleted, the slave's store promoted. Every acknowledged message must be on the slave."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fault.ha_kill_loop import run_ha_kill_loop

HA_KILL_CYCLES = int(os.environ.get("FAULT_HA_KILL_CYCLES", "5"))


@pytest.mark.slow
def test_sync_master_destroyed_loses_no_acknowledged_message(tmp_path: Path) -> None:
    result = run_ha_kill_loop(tmp_path, HA_KILL_CYCLES)
    print(
        f"\nHA kill -9 loop: {result.cycles} cycles, {result.acknowledged} acknowledged, "
        f"{len(result.lost)} lost, {result.elapsed_s:.0f} s"
    )
    assert result.lost == []
    assert result.cycles == HA_KILL_CYCLES
    assert result.acknowledged > HA_KILL_CYCLES * 3  # each cycle's senders got answers before the kill
