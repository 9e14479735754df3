"""Live broker statistics: what ``brokerStatus``, ``clusterList``, ``statsAll`` and
``consumerProgress`` show, and what the Prometheus exporter reads.

Mirrors three Java classes with their sampling rules, but samples lazily (on every update and
read, catching up the samples a scheduler would have taken; :mod:`broker.stats_items`) so that no
timer task is needed:

* ``StatsItem`` / ``BrokerStatsManager``: per (stats name, key) a running sum and call count,
  sampled every 10 s (7 kept: the last minute), 10 min (7: the last hour) and 1 h (25: the last
  day); ``VIEW_BROKER_STATS_DATA`` answers sum / tps / average per minute, hour and day.
* ``StoreStatsService``: put, get-found, get-miss and transferred-message counters sampled every
  second (601 kept) for ``putTps`` / ``getTotalTps`` … over 10 s, 60 s and 600 s; the put latency
  distribution of the last whole minute (13 buckets, ``putMessageDistributeTime``) and the
  latency buckets behind ``putLatency99`` / ``putLatency999``.
* ``BrokerStats``: the put and get totals at this morning's and yesterday morning's midnight.

One :class:`BrokerStats` is built by the broker's composition (:class:`broker.app.Broker`) and
handed to whoever records or reads: every put passes
:meth:`broker.message_service.MessageService.put_nowait`, which calls :meth:`BrokerStats.record_put`;
that only adds to per-topic pending sums (it runs once per send request) and folds them into the
sampled items at the first put or read after a sampling time, so the samples come out as if every
put had been added on its own. The pull processor records each pull's store read
(:meth:`BrokerStats.record_get`, counted after filtering, where Java's
``DefaultMessageStore.getMessage`` counts) and the messages a consumer group pulled
(:meth:`BrokerStats.record_group_get`); the status and admin processors read.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Mapping

from broker.stats_items import STORE_SAMPLE_MS, Counter, StatsItem

LATENCY_WINDOW_MS = 60_000  # printTPSInterval: distribution and percentile buckets rotate per minute

# StatsItem names (BrokerStatsManager / Stats constants) this broker feeds.
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"
_PUT_ITEMS = frozenset({TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, BROKER_PUT_NUMS})  # the items puts feed

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
        self.put = Counter(now)
        self.get_found = Counter(now)
        self.get_miss = Counter(now)
        self.transferred = Counter(now)
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
        self._day_end_ms = self._next_midnight_ms(now)
        # Puts not yet folded into the items: topic -> [messages, bytes, puts]; latency ms -> puts.
        self._pending_puts: dict[str, list[int]] = {}
        self._pending_latency: dict[int, int] = {}
        self._last_put_ms = now
        self._fold_due = now  # the earliest sampling time of anything the pending puts feed
        self._morning = (0, 0)
        self._yesterday_morning = (0, 0)
        #: Observers of every put (topic, message count, bytes, the first message's properties)
        #: and group get (topic, group, count, bytes): the Prometheus exporter subscribes here.
        self.put_observers: list[Callable[[str, int, int, Mapping[str, str]], None]] = []
        self.get_observers: list[Callable[[str, str, int, int], None]] = []

    # -- recording -------------------------------------------------------------------------------

    def item(self, name: str, key: str) -> StatsItem | None:
        self._fold(self.clock())
        return self.items.get((name, key))

    def _add(self, name: str, key: str, value: int, times: int, now: int) -> None:
        item = self.items.get((name, key))
        if item is None:
            item = self.items[(name, key)] = StatsItem(name, key, now)
        item.add(value, times, now)

    def record_put(
        self, topic: str, count: int, size: int, elapsed_ms: int, properties: Mapping[str, str] | None = None
    ) -> None:
        """A successful put of ``count`` messages (``size`` bytes) that took ``elapsed_ms``;
        ``properties``: the first message's (for the observers; none: empty).

        Hot path (every send): adds to pending sums only; :meth:`_fold` applies them before any
        sample or read that must see them."""
        now = self.clock()
        if now >= self._fold_due:
            self._fold(now)
        pending = self._pending_puts.get(topic)
        if pending is None:
            pending = self._pending_puts[topic] = [0, 0, 0]
            self._create_put_items(topic, now)
        pending[0] += count
        pending[1] += size
        pending[2] += 1
        self._pending_latency[elapsed_ms] = self._pending_latency.get(elapsed_ms, 0) + 1
        self._last_put_ms = now
        for observer in self.put_observers:
            observer(topic, count, size, properties if properties is not None else {})

    def _create_put_items(self, topic: str, now: int) -> None:
        """The items a topic's puts feed, created at the first put as Java's ``StatsItemSet`` does
        (their sample windows start then)."""
        for key in ((TOPIC_PUT_NUMS, topic), (TOPIC_PUT_SIZE, topic), (BROKER_PUT_NUMS, self.cluster_name)):
            item = self.items.get(key)
            if item is None:
                item = self.items[key] = StatsItem(key[0], key[1], now)
            self._fold_due = min(self._fold_due, item.next_sample_ms)

    def _fold(self, now: int) -> None:
        """Apply the pending puts, then take every sample due by ``now``.

        Every pending put happened before ``_fold_due``, the earliest time any sampler they feed
        (put counter, topic and broker items, latency minute, day roll) takes its next sample, so
        applying them first gives the samples adding them one by one would have given."""
        if self._pending_puts:
            put_times = self.put_times_by_topic
            broker_nums = self.items[(BROKER_PUT_NUMS, self.cluster_name)]
            for topic, (count, size, times) in self._pending_puts.items():
                self.put.value += count
                self.put_size_total += size
                put_times[topic] = put_times.get(topic, 0) + count
                for item, value in (
                    (self.items[(TOPIC_PUT_NUMS, topic)], count),
                    (self.items[(TOPIC_PUT_SIZE, topic)], size),
                    (broker_nums, count),
                ):
                    item.value += value
                    item.times += times
                    item.last_update_ms = self._last_put_ms
            self._pending_puts.clear()
            for elapsed_ms, times in self._pending_latency.items():
                self._distribution[bisect_left(_DISTRIBUTION_LIMITS, elapsed_ms + 1)] += times
                self._latency[bisect_left(PERCENTILE_BOUNDS, elapsed_ms)] += times
                self.put_entire_time_max_ms = max(self.put_entire_time_max_ms, elapsed_ms)
            self._pending_latency.clear()
        if now < self._fold_due:
            return
        self._roll(now)
        self.put.catch_up(now)
        self._rotate_latency(now)
        due = min(self.put.samples[-1][0] + STORE_SAMPLE_MS, self._latency_rotate_at, self._day_end_ms)
        for (name, _key), item in self.items.items():
            if name in _PUT_ITEMS:
                item.catch_up(now)
                due = min(due, item.next_sample_ms)
        self._fold_due = due

    def record_put_failed(self) -> None:
        self.put_failed += 1

    def record_get(self, found: bool, count: int, elapsed_ms: int) -> None:
        """One pull's store read, after filtering: ``found`` or missed, ``count`` messages handed
        out, ``elapsed_ms`` spent reading (``getMessageTimesTotalFound`` / ``…Miss``,
        ``getMessageTransferredMsgCount``, ``getMessageEntireTimeMax``)."""
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
        self._fold(now)  # pending puts first: a day roll reads the put total
        key = f"{topic}@{group}"
        self._add(GROUP_GET_NUMS, key, count, 1, now)
        self._add(GROUP_GET_SIZE, key, size, 1, now)
        self._add(BROKER_GET_NUMS, self.cluster_name, count, 1, now)
        for observer in self.get_observers:
            observer(topic, group, count, size)

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

    @staticmethod
    def _next_midnight_ms(ms: int) -> int:
        local = time.localtime(ms / 1000)
        next_day = (local.tm_year, local.tm_mon, local.tm_mday + 1, 0, 0, 0, 0, 0, -1)
        return int(time.mktime(next_day) * 1000)  # mktime normalises the 32nd of a month

    def _roll(self, now: int) -> None:
        if now < self._day_end_ms:
            return
        self._day_end_ms = self._next_midnight_ms(now)
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
        self._fold(self.clock())
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

    def _tps_text(self, counters: tuple[Counter, ...]) -> str:
        now = self.clock()
        self._fold(now)
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
        self._fold(self.clock())
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
        self._fold(now)
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
