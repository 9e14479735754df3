"""Live broker statistics: what ``brokerStatus``, ``clusterList``, ``statsAll`` and
``consumerProgress`` show, and what the Prometheus exporter reads.

Mirrors three Java classes with their sampling rules, but samples lazily (on every update and
read, catching up the samples a scheduler would have taken) so that no timer task is needed:

* ``StatsItem`` / ``BrokerStatsManager``: per (stats name, key) a running sum and call count,
  sampled every 10 s (7 kept: the last minute), 10 min (7: the last hour) and 1 h (25: the last
  day); ``VIEW_BROKER_STATS_DATA`` answers sum / tps / average per minute, hour and day.
* ``StoreStatsService``: put, get-found, get-miss and transferred-message counters sampled every
  second (601 kept) for ``putTps`` / ``getTotalTps`` … over 10 s, 60 s and 600 s; the put latency
  distribution of the last whole minute (13 buckets, ``putMessageDistributeTime``) and the
  latency buckets behind ``putLatency99`` / ``putLatency999``.
* ``BrokerStats``: the put and get totals at this morning's and yesterday morning's midnight.

:func:`broker_stats` returns the one :class:`BrokerStats` of a controller; the first call wraps
its store's ``put_messages`` and ``get_message`` to count puts (per topic, bytes, latency) and
gets (found, missed, messages transferred). Consumer-group gets are recorded by the pull path
through :meth:`BrokerStats.record_group_get`.
"""

from __future__ import annotations

import time
import weakref
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MINUTE_SAMPLE_MS = 10_000  # StatsItem.samplingInSeconds period
HOUR_SAMPLE_MS = 600_000  # samplingInMinutes period
DAY_SAMPLE_MS = 3_600_000  # samplingInHour period
STORE_SAMPLE_MS = 1000  # StoreStatsService.FREQUENCY_OF_SAMPLING
STORE_SAMPLES = 601  # MAX_RECORDS_OF_SAMPLING + 1
LATENCY_WINDOW_MS = 60_000  # printTPSInterval: distribution and percentile buckets rotate per minute

# StatsItem names (BrokerStatsManager / Stats constants) this broker feeds.
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"

# StoreStatsService.PUT_MESSAGE_ENTIRE_TIME_MAX_DESC and the upper bounds (ms, exclusive) of each.
DISTRIBUTION_DESC = (
    "[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]", "[500ms~1s]",
    "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]",
)  # fmt: skip
_DISTRIBUTION_LIMITS = (1, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000)


def _percentile_bounds() -> list[int]:
    """PUT_MESSAGE_ENTIRE_TIME_BUCKETS: 1 ms steps to 20, 2 to 50, 5 to 100, 10 to 200, 50 to
    500, 100 to 1000, 1000 to 10000 ms, then one open bucket."""
    bounds, edge = [], 0
    for step, times in ((1, 20), (2, 15), (5, 10), (10, 10), (50, 6), (100, 5), (1000, 9)):
        for _ in range(times):
            edge += step
            bounds.append(edge)
    return bounds


PERCENTILE_BOUNDS = _percentile_bounds()


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    sum: int
    tps: float
    avgpt: float
    times: int


class _Window:
    """Samples (time, times, value) taken every ``period`` ms, the last ``kept`` of them."""

    __slots__ = ("due", "kept", "period", "samples")

    def __init__(self, period: int, kept: int, now_ms: int) -> None:
        self.period = period
        self.kept = kept
        # Java's first sampling adds a zero sample one period back, then one at start.
        self.samples: deque[tuple[int, int, int]] = deque([(now_ms - period, 0, 0), (now_ms, 0, 0)])
        self.due = now_ms + period

    def catch_up(self, now_ms: int, times: int, value: int) -> None:
        """Take the samples a timer would have taken up to ``now_ms`` (values unchanged since)."""
        if self.due > now_ms:
            return
        if now_ms - self.due >= self.period * self.kept:  # idle a whole window: skip equal samples
            self.due += (now_ms - self.due) // self.period * self.period - self.period * (self.kept - 1)
        while self.due <= now_ms:
            self.samples.append((self.due, times, value))
            self.due += self.period
        while len(self.samples) > self.kept:
            self.samples.popleft()


class StatsItem:
    """``StatsItem``: a sum and a call count, with minute, hour and day sample windows."""

    __slots__ = ("_windows", "key", "last_update_ms", "name", "times", "value")

    def __init__(self, name: str, key: str, now_ms: int) -> None:
        self.name = name
        self.key = key
        self.value = 0
        self.times = 0
        self.last_update_ms = now_ms
        self._windows = (
            _Window(MINUTE_SAMPLE_MS, 7, now_ms),
            _Window(HOUR_SAMPLE_MS, 7, now_ms),
            _Window(DAY_SAMPLE_MS, 25, now_ms),
        )

    def _catch_up(self, now_ms: int) -> None:
        for window in self._windows:
            window.catch_up(now_ms, self.times, self.value)

    def add(self, value: int, times: int, now_ms: int) -> None:
        self._catch_up(now_ms)
        self.value += value
        self.times += times
        self.last_update_ms = now_ms

    def snapshot(self, window: int, now_ms: int) -> StatsSnapshot:
        """``computeStatsData`` over window 0 (minute), 1 (hour) or 2 (day)."""
        self._catch_up(now_ms)
        samples = self._windows[window].samples
        (t0, times0, v0), (t1, times1, v1) = samples[0], samples[-1]
        total = v1 - v0
        times = times1 - times0
        tps = total * 1000.0 / (t1 - t0) if t1 != t0 else 0.0
        return StatsSnapshot(total, tps, total / times if times > 0 else 0.0, times)


class _Counter:
    """A StoreStatsService counter with its per-second samples."""

    __slots__ = ("samples", "value")

    def __init__(self, now_ms: int) -> None:
        self.value = 0
        self.samples: deque[tuple[int, int]] = deque([(now_ms, 0)], maxlen=STORE_SAMPLES)

    def catch_up(self, now_ms: int) -> None:
        last = self.samples[-1][0]
        if now_ms - last >= STORE_SAMPLE_MS * STORE_SAMPLES:
            last = now_ms - STORE_SAMPLE_MS * STORE_SAMPLES
        while last + STORE_SAMPLE_MS <= now_ms:
            last += STORE_SAMPLE_MS
            self.samples.append((last, self.value))

    def tps(self, seconds: int) -> float | None:
        """``getPutTps(time)``: rate over the last ``seconds`` samples; ``None`` before there are
        that many (Java prints an empty string then)."""
        if len(self.samples) <= seconds:
            return None
        (t0, v0), (t1, v1) = self.samples[-(seconds + 1)], self.samples[-1]
        return (v1 - v0) * 1000.0 / (t1 - t0) if t1 != t0 else 0.0


def java_double(value: float) -> str:
    """``Double.toString`` for the rates shown (finite, below 1e7)."""
    return repr(float(value))


class BrokerStats:
    """All statistics of one broker; ``clock`` gives wall-clock milliseconds."""

    def __init__(self, cluster_name: str, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.cluster_name = cluster_name
        self.clock = clock
        now = clock()
        self.boot_ms = now
        self.items: dict[tuple[str, str], StatsItem] = {}
        self.put = _Counter(now)
        self.get_found = _Counter(now)
        self.get_miss = _Counter(now)
        self.transferred = _Counter(now)
        self.put_failed = 0
        self.put_size_total = 0
        self.put_times_by_topic: dict[str, int] = {}
        self.put_entire_time_max_ms = 0
        self.get_entire_time_max_ms = 0
        self._distribution = [0] * len(DISTRIBUTION_DESC)
        self._last_distribution: list[int] | None = None
        self._latency = [0] * (len(PERCENTILE_BOUNDS) + 1)
        self._last_latency = [0] * (len(PERCENTILE_BOUNDS) + 1)
        self._latency_rotate_at = now + LATENCY_WINDOW_MS
        # BrokerStats.record() at each midnight: (day number, put total, get total) at its start.
        self._day = self._local_day(now)
        self._morning = (0, 0)
        self._yesterday_morning = (0, 0)
        #: Observers of every put (topic, message count, bytes) and group get (topic, group,
        #: count, bytes): the Prometheus exporter subscribes here.
        self.put_observers: list[Callable[[str, int, int], None]] = []
        self.get_observers: list[Callable[[str, str, int, int], None]] = []

    # -- recording -------------------------------------------------------------------------------

    def item(self, name: str, key: str) -> StatsItem | None:
        return self.items.get((name, key))

    def _add(self, name: str, key: str, value: int, times: int, now: int) -> None:
        item = self.items.get((name, key))
        if item is None:
            item = self.items[(name, key)] = StatsItem(name, key, now)
        item.add(value, times, now)

    def record_put(self, topic: str, count: int, size: int, elapsed_ms: int) -> None:
        """A successful put of ``count`` messages (``size`` bytes) that took ``elapsed_ms``."""
        now = self.clock()
        self._roll(now)
        self.put.catch_up(now)
        self.put.value += count
        self.put_size_total += size
        self.put_times_by_topic[topic] = self.put_times_by_topic.get(topic, 0) + count
        self._add(TOPIC_PUT_NUMS, topic, count, 1, now)
        self._add(TOPIC_PUT_SIZE, topic, size, 1, now)
        self._add(BROKER_PUT_NUMS, self.cluster_name, count, 1, now)
        self._record_latency(elapsed_ms, now)
        for observer in self.put_observers:
            observer(topic, count, size)

    def record_put_failed(self) -> None:
        self.put_failed += 1

    def record_get(self, found: bool, count: int, elapsed_ms: int) -> None:
        """A store read: ``found`` or missed, ``count`` messages handed out."""
        now = self.clock()
        for counter in (self.get_found, self.get_miss, self.transferred):
            counter.catch_up(now)
        (self.get_found if found else self.get_miss).value += 1
        self.transferred.value += count
        self.get_entire_time_max_ms = max(self.get_entire_time_max_ms, elapsed_ms)

    def record_group_get(self, topic: str, group: str, count: int, size: int) -> None:
        """Messages a consumer group pulled (``incGroupGetNums`` / ``incBrokerGetNums``)."""
        if count <= 0:
            return
        now = self.clock()
        self._roll(now)
        key = f"{topic}@{group}"
        self._add(GROUP_GET_NUMS, key, count, 1, now)
        self._add(GROUP_GET_SIZE, key, size, 1, now)
        self._add(BROKER_GET_NUMS, self.cluster_name, count, 1, now)
        for observer in self.get_observers:
            observer(topic, group, count, size)

    def _record_latency(self, elapsed_ms: int, now: int) -> None:
        self._rotate_latency(now)
        self._distribution[bisect_left(_DISTRIBUTION_LIMITS, elapsed_ms + 1)] += 1
        self._latency[bisect_left(PERCENTILE_BOUNDS, elapsed_ms)] += 1
        self.put_entire_time_max_ms = max(self.put_entire_time_max_ms, elapsed_ms)

    def _rotate_latency(self, now: int) -> None:
        """Minute windows aligned on the start time, as Java's timer: the last whole minute is the
        one just ended, empty when nothing was put during it."""
        if now < self._latency_rotate_at:
            return
        ended_long_ago = now >= self._latency_rotate_at + LATENCY_WINDOW_MS
        current, latency = self._distribution, self._latency
        self._distribution = [0] * len(DISTRIBUTION_DESC)
        self._latency = [0] * (len(PERCENTILE_BOUNDS) + 1)
        self._last_distribution = [0] * len(DISTRIBUTION_DESC) if ended_long_ago else current
        self._last_latency = [0] * (len(PERCENTILE_BOUNDS) + 1) if ended_long_ago else latency
        missed = (now - self._latency_rotate_at) // LATENCY_WINDOW_MS + 1
        self._latency_rotate_at += missed * LATENCY_WINDOW_MS

    # -- today / yesterday -----------------------------------------------------------------------

    @staticmethod
    def _local_day(ms: int) -> int:
        local = time.localtime(ms / 1000)
        return local.tm_year * 1000 + local.tm_yday

    def _roll(self, now: int) -> None:
        day = self._local_day(now)
        if day != self._day:
            self._yesterday_morning = self._morning if day - self._day == 1 else self._totals()
            self._morning = self._totals()
            self._day = day

    def _totals(self) -> tuple[int, int]:
        get = self.items.get((BROKER_GET_NUMS, self.cluster_name))
        return self.put.value, get.value if get is not None else 0

    def day_counters(self) -> dict[str, int]:
        """``BrokerStats``: msgPut/GetTotal at yesterday morning, this morning and now."""
        self._roll(self.clock())
        put_now, get_now = self._totals()
        return {
            "msgPutTotalYesterdayMorning": self._yesterday_morning[0],
            "msgPutTotalTodayMorning": self._morning[0],
            "msgPutTotalTodayNow": put_now,
            "msgGetTotalYesterdayMorning": self._yesterday_morning[1],
            "msgGetTotalTodayMorning": self._morning[1],
            "msgGetTotalTodayNow": get_now,
        }

    # -- reading ---------------------------------------------------------------------------------

    def group_get_tps(self, group: str, topic: str) -> float:
        """``tpsGroupGetNums``: messages per second the group pulled from the topic last minute."""
        item = self.items.get((GROUP_GET_NUMS, f"{topic}@{group}"))
        return item.snapshot(0, self.clock()).tps if item is not None else 0.0

    def _tps_text(self, counters: tuple[_Counter, ...]) -> str:
        now = self.clock()
        parts = []
        for seconds in (10, 60, 600):
            rates = []
            for counter in counters:
                counter.catch_up(now)
                rates.append(counter.tps(seconds))
            if len(counters) > 1:  # getGetTotalTps sums and always prints a number
                parts.append(java_double(sum(r or 0.0 for r in rates)))
            else:
                parts.append("" if rates[0] is None else java_double(rates[0]))
        return " ".join(parts)

    def percentile_ms(self, px: float) -> float:
        """``findPutMessageEntireTimePX`` over the last whole minute's buckets."""
        self._rotate_latency(self.clock())
        buckets = self._last_latency
        index = int(sum(buckets) * px)
        passed = 0
        bounds = [*PERCENTILE_BOUNDS, 2**63 - 1]
        for i, count in enumerate(buckets):
            if index <= passed + count:
                relative = index - passed
                low = bounds[i - 1] if i else 0
                return low + ((bounds[i] - low) * relative / count if count else 0.0)
            passed += count
        return 0.0

    def store_runtime_info(self) -> dict[str, str]:
        """``StoreStatsService.getRuntimeInfo``."""
        now = self.clock()
        self._rotate_latency(now)
        total = self.put.value or 1
        distribution = self._last_distribution
        seconds = (now - self.boot_ms) // 1000
        return {
            "bootTimestamp": str(self.boot_ms),
            "runtime": f"[ {seconds // 86400} days, {seconds % 86400 // 3600} hours, "
            f"{seconds % 3600 // 60} minutes, {seconds % 60} seconds ]",
            "putMessageEntireTimeMax": str(self.put_entire_time_max_ms),
            "putMessageTimesTotal": str(total),
            "putMessageFailedTimes": str(self.put_failed),
            "putMessageSizeTotal": str(self.put_size_total),
            "putMessageDistributeTime": "null"
            if distribution is None
            else "".join(f"{d}:{n} " for d, n in zip(DISTRIBUTION_DESC, distribution, strict=True)),
            "putMessageAverageSize": java_double(self.put_size_total / total),
            "dispatchMaxBuffer": "0",
            "getMessageEntireTimeMax": str(self.get_entire_time_max_ms),
            "putTps": self._tps_text((self.put,)),
            "getFoundTps": self._tps_text((self.get_found,)),
            "getMissTps": self._tps_text((self.get_miss,)),
            "getTotalTps": self._tps_text((self.get_found, self.get_miss)),
            "getTransferredTps": self._tps_text((self.transferred,)),
            "putLatency99": f"{self.percentile_ms(0.99):.2f}",
            "putLatency999": f"{self.percentile_ms(0.999):.2f}",
        }


_STATS: weakref.WeakKeyDictionary[Any, BrokerStats] = weakref.WeakKeyDictionary()


def broker_stats(controller: Any) -> BrokerStats:
    """The statistics of ``controller`` (a ``BrokerController``), created and wired to its store on
    first use: the store's ``put_messages`` and ``get_message`` are wrapped to count every put and
    read, whoever makes it (send, retry, delay delivery)."""
    stats = _STATS.get(controller)
    if stats is None:
        stats = _STATS[controller] = BrokerStats(controller.config.broker_cluster_name)
        _observe_store(controller.store, stats)
    return stats


def _observe_store(store: Any, stats: BrokerStats) -> None:
    put_messages = store.put_messages
    get_message = store.get_message

    def observed_put(msgs: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = put_messages(msgs, *args, **kwargs)
        elapsed_ms = int((time.perf_counter() - start) * 1000)
        if result.ok and msgs and result.append_result is not None:
            stats.record_put(msgs[0].topic, len(msgs), result.append_result.wrote_bytes, elapsed_ms)
        else:
            stats.record_put_failed()
        return result

    def observed_get(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = get_message(*args, **kwargs)
        count = result.message_count
        stats.record_get(count > 0, count, int((time.perf_counter() - start) * 1000))
        return result

    setattr(store, "put_messages", observed_put)  # noqa: B010 - an instance attribute shadows the method
    setattr(store, "get_message", observed_get)  # noqa: B010
