"""Errors raised by the store.

Every store error derives from :class:`StoreError` (itself a :class:`codec.errors.RocketMQError`)
and carries the RocketMQ response code a broker answers with when the error reaches it
(``response_code``, the ints of :class:`codec.codes.ResponseCode`). Most put failures never raise:
they come back as a :class:`store.results.PutMessageResult` status, as in Java; the exceptions
below are for opening, recovering and the few places where Java throws too.
"""

from __future__ import annotations

import logging
import time

from codec.errors import RocketMQError

_SYSTEM_ERROR = 1  # ResponseCode.SYSTEM_ERROR
_MESSAGE_ILLEGAL = 13  # ResponseCode.MESSAGE_ILLEGAL
_SERVICE_NOT_AVAILABLE = 14  # ResponseCode.SERVICE_NOT_AVAILABLE


class StoreError(RocketMQError):
    """Root of the store's errors."""

    response_code = _SYSTEM_ERROR


class StoreConfigError(StoreError):
    """A store setting is out of range or inconsistent (e.g. a file size that is not a unit multiple)."""


class StoreCorruptionError(StoreError):
    """A store file fails its sanity check: wrong length, bad header, impossible values.

    Raised when opening; recovery itself never raises for a torn tail, it truncates it.
    """


class StoreLockedError(StoreError):
    """Another process (our store or a Java broker) holds the store's ``lock`` file."""

    response_code = _SERVICE_NOT_AVAILABLE


class StoreIOError(StoreError):
    """The operating system refused a file operation (read-only file system, permissions, EIO)."""

    response_code = _SERVICE_NOT_AVAILABLE


class DiskFullError(StoreIOError):
    """No space left to create or extend a store file (ENOSPC / EDQUOT)."""


class StoreClosedError(StoreError):
    """The store has been closed (or was never opened)."""

    response_code = _SERVICE_NOT_AVAILABLE


class MessageTooLargeError(StoreError):
    """A record exceeds ``maxMessageSize`` or the size of a commit-log file."""

    response_code = _MESSAGE_ILLEGAL


class RateLimitedLog:
    """Logs at ERROR at most once every ``interval_s``, counting the lines suppressed in between, so a
    condition that refuses every request (a full disk) says so clearly without flooding the log."""

    def __init__(self, logger: logging.Logger, interval_s: float) -> None:
        self.logger = logger
        self.interval_s = interval_s
        self._last = -interval_s
        self.suppressed = 0

    def log(self, msg: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last < self.interval_s:
            self.suppressed += 1
            return
        if self.suppressed:
            msg += f" ({self.suppressed} more like it since the last line)"
        self.logger.error(msg, *args)
        self._last = now
        self.suppressed = 0
