"""broker/stats.py against Java's sampling rules (StatsItem, StoreStatsService, BrokerStats),
driven by a fake clock; and what an in-process broker records into the statistics it was built
with."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from broker.stats import (
    BROKER_GET_NUMS,
    BROKER_PUT_NUMS,
    GROUP_GET_NUMS,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    BrokerStats,
)
from broker.stats_items import Counter, StatsItem
from codec.headers.pull import PullSysFlag
from codec.properties import TAGS
from tests.broker.helpers import pull_request, records, running_broker, send_request


class Clock:
    def __init__(self, start_ms: int) -> None:
        self.now = start_ms

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def noon_ms() -> int:
    """Today's local noon, so that a few simulated hours never cross midnight by accident."""
    local = time.localtime()
    return int(time.mktime((local.tm_year, local.tm_mon, local.tm_mday, 12, 0, 0, 0, 0, -1)) * 1000)


def test_stats_item_minute_window_sums_what_was_sampled() -> None:
    item = StatsItem(TOPIC_PUT_NUMS, "T", 0)
    item.add(5, 1, 1000)
    assert item.snapshot(0, 5000).sum == 0  # not sampled yet: Java shows samples, not the live sum
    item.add(5, 1, 9000)
    snap = item.snapshot(0, 10_000)  # the 10 s sample took both
    assert (snap.sum, snap.times, snap.avgpt) == (10, 2, 5.0)
    assert snap.tps == pytest.approx(10 * 1000 / 20_000)  # first sample is one period back


def test_stats_item_forgets_samples_older_than_its_window() -> None:
    item = StatsItem(TOPIC_PUT_NUMS, "T", 0)
    item.add(100, 1, 1000)
    assert item.snapshot(0, 10_000).sum == 100
    assert item.snapshot(0, 200_000).sum == 0  # minutes later: the last minute saw nothing
    assert item.snapshot(1, 600_000).sum == 100  # the hour window still has it


def test_store_tps_needs_enough_samples_like_java() -> None:
    clock = Clock(noon_ms())
    stats = BrokerStats("DefaultCluster", clock)
    for _ in range(20):
        clock.advance(1000)
        stats.record_put("T", 3, 300, 0)
    tps = stats.store_runtime_info()["putTps"].split(" ")
    assert float(tps[0]) == pytest.approx(3.0)
    assert tps[1:] == ["", ""]  # fewer than 60 and 600 samples: Java prints nothing


def test_day_counters_move_at_midnight() -> None:
    clock = Clock(noon_ms())
    stats = BrokerStats("DefaultCluster", clock)
    stats.record_put("T", 7, 700, 0)
    stats.record_group_get("T", "g", 4, 400)
    counters = stats.day_counters()
    assert (counters["msgPutTotalTodayNow"], counters["msgGetTotalTodayNow"]) == (7, 4)
    assert counters["msgPutTotalTodayMorning"] == 0
    clock.advance(24 * 3600 * 1000)
    stats.record_put("T", 1, 100, 0)
    counters = stats.day_counters()
    assert counters["msgPutTotalTodayMorning"] == 7
    assert counters["msgGetTotalTodayMorning"] == 4
    assert counters["msgPutTotalYesterdayMorning"] == 0
    assert counters["msgPutTotalTodayNow"] == 8
    clock.advance(24 * 3600 * 1000)
    counters = stats.day_counters()
    assert (counters["msgPutTotalYesterdayMorning"], counters["msgPutTotalTodayMorning"]) == (7, 8)


def test_put_latency_distribution_and_percentiles_of_the_last_minute() -> None:
    clock = Clock(noon_ms())
    stats = BrokerStats("DefaultCluster", clock)
    assert stats.store_runtime_info()["putMessageDistributeTime"] == "null"
    for latency in [0] * 90 + [15] * 9 + [300]:
        stats.record_put("T", 1, 100, latency)
    clock.advance(61_000)
    info = stats.store_runtime_info()
    assert "[<=0ms]:90 " in info["putMessageDistributeTime"]
    assert "[10~50ms]:9 " in info["putMessageDistributeTime"]
    assert "[200~500ms]:1 " in info["putMessageDistributeTime"]
    assert float(info["putLatency99"]) == pytest.approx(15.0, abs=1.0)
    assert info["putMessageEntireTimeMax"] == "300"
    clock.advance(120_000)  # two idle minutes later the last whole minute saw nothing
    info = stats.store_runtime_info()
    assert "[<=0ms]:0 " in info["putMessageDistributeTime"]
    assert info["putLatency99"] == "0.00"


def test_group_gets_feed_consume_tps_and_broker_totals() -> None:
    clock = Clock(noon_ms())
    stats = BrokerStats("C", clock)
    seen: list[tuple[str, str, int, int]] = []
    stats.get_observers.append(lambda *args: seen.append(args))
    for _ in range(6):
        clock.advance(10_000)
        stats.record_group_get("T", "g", 10, 1000)
    clock.advance(10_000)
    assert stats.group_get_tps("g", "T") == pytest.approx(1.0)  # 60 messages over the last minute
    item = stats.item(GROUP_GET_NUMS, "T@g")
    assert item is not None
    assert item.value == 60
    broker_item = stats.item(BROKER_GET_NUMS, "C")
    assert broker_item is not None
    assert broker_item.value == 60
    assert seen[0] == ("T", "g", 10, 1000)
    stats.record_group_get("T", "g", 0, 0)  # an empty pull counts nothing
    assert len(seen) == 6


def test_pending_puts_sample_as_if_added_one_by_one() -> None:
    """record_put only adds to pending sums (the send hot path); the samples, rates and totals
    must come out exactly as with every put added to the items on its own (Java's way)."""
    rng = random.Random(18)
    clock = Clock(noon_ms())
    stats = BrokerStats("C", clock)
    ref_nums = ref_size = ref_broker = None
    ref_put = Counter(clock.now)
    for step in range(3000):
        clock.advance(rng.choice((0, 1, 7, 250, 999, 1000, 1001, 4000, 9999, 10_000, 65_000)))
        count, size = rng.randint(1, 16), rng.randint(100, 20_000)
        stats.record_put("T", count, size, rng.choice((0, 0, 0, 3, 40)))
        if ref_nums is None:  # Java creates the items at the first put
            ref_nums = StatsItem(TOPIC_PUT_NUMS, "T", clock.now)
            ref_size = StatsItem(TOPIC_PUT_SIZE, "T", clock.now)
            ref_broker = StatsItem(BROKER_PUT_NUMS, "C", clock.now)
        ref_nums.add(count, 1, clock.now)
        ref_size.add(size, 1, clock.now)
        ref_broker.add(count, 1, clock.now)
        ref_put.catch_up(clock.now)
        ref_put.value += count
        if step % 37 == 0:
            clock.advance(rng.choice((0, 500, 10_000)))
            for name, key, ref in (
                (TOPIC_PUT_NUMS, "T", ref_nums),
                (TOPIC_PUT_SIZE, "T", ref_size),
                (BROKER_PUT_NUMS, "C", ref_broker),
            ):
                item = stats.item(name, key)
                assert item is not None
                for window in (0, 1, 2):
                    assert item.snapshot(window, clock.now) == ref.snapshot(window, clock.now), (step, name)
            ref_put.catch_up(clock.now)
            expected_tps = [ref_put.tps(s) for s in (10, 60, 600)]
            shown = stats.store_runtime_info()["putTps"].split(" ")
            assert shown == ["" if t is None else repr(float(t)) for t in expected_tps], step


async def test_a_pull_counts_one_store_read_after_filtering(tmp_path: Path) -> None:
    """``getFoundTps`` / ``getMissTps`` / ``getTransferredTps`` count each pull's store read once,
    with the messages left after the tag filter, and the group get with them."""
    async with running_broker(tmp_path) as (app, conn):
        for i in range(40):
            await conn.invoke(send_request("GetT", b"m%d" % i, {TAGS: "TagA" if i >= 37 else "TagB"}), 3)
        stats = app.broker.stats
        assert (stats.get_found.value, stats.get_miss.value, stats.transferred.value) == (0, 0, 0)
        tag_a = pull_request("GetT", 0, subscription="TagA", suspend_ms=0, flags=PullSysFlag.SUBSCRIPTION)
        assert [r.body for r in records(await conn.invoke(tag_a, 3))] == [b"m37", b"m38", b"m39"]
        assert (stats.get_found.value, stats.get_miss.value, stats.transferred.value) == (1, 0, 3)
        tag_c = pull_request("GetT", 0, subscription="TagC", suspend_ms=0, flags=PullSysFlag.SUBSCRIPTION)
        assert not records(await conn.invoke(tag_c, 3))
        assert (stats.get_found.value, stats.get_miss.value, stats.transferred.value) == (1, 1, 3)
        day = stats.day_counters()
        assert (day["msgPutTotalTodayNow"], day["msgGetTotalTodayNow"]) == (40, 3)
