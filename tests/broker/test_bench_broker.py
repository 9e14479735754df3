"""``python -m bench.broker`` stays runnable: both cases send real frames through the broker, and a
refused send would raise inside ``measure``."""

from __future__ import annotations

from pathlib import Path

from bench.broker.__main__ import batch_frame, measure, send_frame


async def test_single_and_batch_cases_every_send_accepted(tmp_path: Path) -> None:
    single = await measure(tmp_path / "single", [send_frame(i) for i in range(20)], 1, 2)
    batch = await measure(tmp_path / "batch", [batch_frame(i, 16) for i in range(4)], 16, 2)
    assert len(single) == len(batch) == 2
    assert all(cpu_us >= 0 for cpu_us in single + batch)
