"""The reader of RocketMQ's own benchmark programs' statistics lines (bench/side_by_side/official.py).

The lines are as Producer, BatchProducer and Consumer of rocketmq-all-5.3.3 print them (the first
two captured from runs against ours, the others built from the programs' format strings)."""

from __future__ import annotations

import pytest

from bench.side_by_side.driver import Snapshot
from bench.side_by_side.official import WINDOW_LINES, OfficialRun, TpsLine, parse_tps_line, warmup_lines

PRODUCER = (
    "Current Time: 2026-11-26 02:21:39,456 | Send TPS: 3021 | Max RT(ms): 2989 | Average RT(ms):   5.296 "
    "| Send Failed: 0 | Response Failed: 0"
)
PRODUCER_ALL_FAILED = (
    "Current Time: 2026-11-26 02:21:53,372 | Send TPS: 0 | Max RT(ms): 0 | Average RT(ms):     NaN "
    "| Send Failed: 19229 | Response Failed: 0"
)
BATCH = (
    "Current Time: 2026-11-26 02:30:01,002 | Send TPS: 1875 | Send MPS: 30000 | Max RT(ms): 41 "
    "| Average RT(ms):   8.512 | Average Message RT(ms):   0.532 | Send Failed: 2 | Send Message Failed: 32"
)
COMPLETE = (
    "[Complete] Send Total: 120000 | Send TPS: 9001 | Max RT(ms): 12 | Average RT(ms):   1.250 "
    "| Send Failed: 3 | Response Failed: 1"
)
CONSUMER = (
    "Current Time: 2026-11-26 02:30:01,002 | Consume TPS: 4410 | AVG(B2C) RT(ms):   3.100 "
    "| AVG(S2C) RT(ms):   2.900 | MAX(B2C) RT(ms): 40 | MAX(S2C) RT(ms): 38 | Consume Fail: 0"
)


def test_producer_line() -> None:
    assert parse_tps_line(PRODUCER) == TpsLine(
        tps=3021, msgs_per_s=3021, avg_rt_ms=5.296, max_rt_ms=2989, failed=0
    )


def test_a_window_of_failures_has_no_average() -> None:
    line = parse_tps_line(PRODUCER_ALL_FAILED)
    assert line is not None
    assert (line.msgs_per_s, line.avg_rt_ms, line.failed) == (0, None, 19229)


def test_batch_line_counts_messages_not_requests() -> None:
    assert parse_tps_line(BATCH) == TpsLine(
        tps=1875, msgs_per_s=30000, avg_rt_ms=8.512, max_rt_ms=41, failed=34
    )


def test_complete_and_consumer_lines() -> None:
    assert parse_tps_line(COMPLETE) == TpsLine(
        tps=9001, msgs_per_s=9001, avg_rt_ms=1.25, max_rt_ms=12, failed=4
    )
    assert parse_tps_line(CONSUMER) == TpsLine(
        tps=4410, msgs_per_s=4410, avg_rt_ms=2.9, max_rt_ms=38, failed=0
    )


@pytest.mark.parametrize(
    "line",
    [
        "topic: BenchmarkTest, threadCount: 16, messageSize: 128, keyEnable: false, propertySize: 0",
        " compressEnable: false, reportInterval: 1000",
        "Consumer Started.",
        "",
        "Current Time: 2026-11-26 02:30:01,002 | TPS: oops",
    ],
)
def test_other_lines_are_not_rates(line: str) -> None:
    assert parse_tps_line(line) is None


def test_window_metrics_take_the_last_rate_over_the_snapshots() -> None:
    first = TpsLine(tps=900, msgs_per_s=900, avg_rt_ms=9.0, max_rt_ms=300, failed=2)
    last = TpsLine(tps=1000, msgs_per_s=1000, avg_rt_ms=4.0, max_rt_ms=300, failed=5)
    start = Snapshot(at=100.0, server_cpu_s=10.0, driver_cpu_s=1.0, machine_busy_s=50.0)
    end = Snapshot(at=109.0, server_cpu_s=11.8, driver_cpu_s=4.0, machine_busy_s=60.0)
    metrics = OfficialRun(first, last, start, end, [PRODUCER]).metrics()
    assert metrics["msgs_per_s"] == 1000
    assert metrics["ok"] == 9000
    assert metrics["server_cpu_us_per_msg"] == pytest.approx(1.8 / 9000 * 1e6)
    assert metrics["failed"] == 3
    assert metrics["other_cores"] == pytest.approx((10.0 - 1.8 - 3.0) / 9.0)


def test_warmup_is_whole_lines_and_the_window_nine_seconds() -> None:
    assert [warmup_lines(s) for s in (0, 0.5, 3.0, 3.2)] == [0, 1, 3, 4]
    assert WINDOW_LINES == 9
