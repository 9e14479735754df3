"""Log lines that a client's input can cause, bounded: one line per kind per interval.

A request with a thousand refused entries, or a client repeating a refused request in a loop,
must not write a line for each: :class:`LogLimiter` lets the first line of each kind through, then
counts the same kind for ``interval_s`` and adds the count to the next line of that kind that gets
through ("... (37 more like it in the last 10 s)"). No Trio, no I/O of its own: ``broker/`` imports
it too. The clock is injectable, so the bound is tested without waiting.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable

DEFAULT_INTERVAL_S = 10.0
MAX_KINDS = 1024  # distinct kinds remembered; past this the oldest are forgotten


class LogLimiter:
    """At most one line per ``kind`` every ``interval_s`` seconds through ``logger``."""

    def __init__(
        self,
        logger: logging.Logger,
        interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.interval_s = interval_s
        self._clock = clock
        self._last: dict[Hashable, tuple[float, int]] = {}  # kind -> (logged at, suppressed since)
        self.suppressed = 0  # lines not written, in total

    def log(self, level: int, kind: Hashable, msg: str, *args: object, stacklevel: int = 2) -> bool:
        """Write ``msg % args`` at ``level`` unless a line of ``kind`` was written less than
        ``interval_s`` ago; True when it was written. The line names the caller's file and line
        (``stacklevel`` as in :meth:`logging.Logger.log`, counted from here)."""
        now = self._clock()
        last = self._last.get(kind)
        if last is not None and now - last[0] < self.interval_s:
            self._last[kind] = (last[0], last[1] + 1)
            self.suppressed += 1
            return False
        if last is not None and last[1]:
            msg += " (%d more like it in the last %.0f s)"
            args = (*args, last[1], now - last[0])
        self._last.pop(kind, None)
        if len(self._last) >= MAX_KINDS:
            del self._last[next(iter(self._last))]
        self._last[kind] = (now, 0)
        self.logger.log(level, msg, *args, stacklevel=stacklevel)
        return True

    def error(self, kind: Hashable, msg: str, *args: object) -> bool:
        return self.log(logging.ERROR, kind, msg, *args, stacklevel=3)

    def warning(self, kind: Hashable, msg: str, *args: object) -> bool:
        return self.log(logging.WARNING, kind, msg, *args, stacklevel=3)

    def info(self, kind: Hashable, msg: str, *args: object) -> bool:
        return self.log(logging.INFO, kind, msg, *args, stacklevel=3)
