"""The sampled counters behind broker statistics: Java's ``StatsItem`` (a sum and a call count
with minute, hour and day sample windows) and ``StoreStatsService``'s per-second counters.

They sample lazily: every update and read first takes the samples a scheduler would have taken
since the last one (values unchanged since), so no timer task is needed. :mod:`broker.stats`
combines them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

MINUTE_SAMPLE_MS = 10_000  # StatsItem.samplingInSeconds period
HOUR_SAMPLE_MS = 600_000  # samplingInMinutes period
DAY_SAMPLE_MS = 3_600_000  # samplingInHour period
STORE_SAMPLE_MS = 1000  # StoreStatsService.FREQUENCY_OF_SAMPLING
STORE_SAMPLES = 601  # MAX_RECORDS_OF_SAMPLING + 1


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    sum: int
    tps: float
    avgpt: float
    times: int


class Window:
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
            Window(MINUTE_SAMPLE_MS, 7, now_ms),
            Window(HOUR_SAMPLE_MS, 7, now_ms),
            Window(DAY_SAMPLE_MS, 25, now_ms),
        )

    def catch_up(self, now_ms: int) -> None:
        """Take the samples due by ``now_ms`` (with the values as they are)."""
        for window in self._windows:
            window.catch_up(now_ms, self.times, self.value)

    @property
    def next_sample_ms(self) -> int:
        return min(window.due for window in self._windows)

    def add(self, value: int, times: int, now_ms: int) -> None:
        self.catch_up(now_ms)
        self.value += value
        self.times += times
        self.last_update_ms = now_ms

    def snapshot(self, window: int, now_ms: int) -> StatsSnapshot:
        """``computeStatsData`` over window 0 (minute), 1 (hour) or 2 (day)."""
        self.catch_up(now_ms)
        samples = self._windows[window].samples
        (t0, times0, v0), (t1, times1, v1) = samples[0], samples[-1]
        total = v1 - v0
        times = times1 - times0
        tps = total * 1000.0 / (t1 - t0) if t1 != t0 else 0.0
        return StatsSnapshot(total, tps, total / times if times > 0 else 0.0, times)


class Counter:
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
