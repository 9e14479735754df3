"""Message ids: the broker's offset id and the client's unique id (``UNIQ_KEY``).

Offset message id (``MessageDecoder.createMessageId`` / ``decodeMessageId``): upper-case hex of
store host address (4 or 16 bytes) + port (int32) + commit-log offset (int64); 32 characters for
IPv4, 56 for IPv6.

Unique id (``MessageClientIDSetter.createUniqID``): upper-case hex of IP (4 or 16 bytes) +
pid (2) + class-loader hash (4) + ms since the start of the current month (4) + counter (2).
"""

from __future__ import annotations

import calendar
import os
import random
import struct
import threading
import time

from codec.errors import CodecError

_OFFSET_ID_V4 = struct.Struct(">4siq")
_OFFSET_ID_V6 = struct.Struct(">16siq")


def encode_offset_msg_id(host: bytes, port: int, offset: int) -> str:
    """The offset message id of the record stored at ``offset`` on ``host:port``."""
    layout = _OFFSET_ID_V4 if len(host) == 4 else _OFFSET_ID_V6
    return layout.pack(host, port, offset).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[bytes, int, int]:
    """``(host, port, offset)`` of an offset id; 32 characters mean IPv4, as in Java."""
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError as err:
        raise CodecError(f"message id is not hex: {msg_id!r}") from err
    layout = _OFFSET_ID_V4 if len(msg_id) == 32 else _OFFSET_ID_V6
    if len(raw) != layout.size:
        raise CodecError(f"message id has the wrong length: {msg_id!r}")
    host, port, offset = layout.unpack(raw)
    return host, port, offset


class UniqIdGenerator:
    """Generates ``UNIQ_KEY`` ids for messages that arrive without one (as the Java broker does)."""

    def __init__(self, ip: bytes = b"\x7f\x00\x00\x01") -> None:
        pid = os.getpid() & 0xFFFF
        self._prefix = ip + struct.pack(">HI", pid, random.getrandbits(32))
        self._lock = threading.Lock()
        self._counter = 0
        self._month_start_ms = 0
        self._next_month_ms = 0

    def _roll_month(self, now_ms: int) -> None:
        t = time.localtime(now_ms / 1000)
        start = calendar.timegm((t.tm_year, t.tm_mon, 1, 0, 0, 0)) - t.tm_gmtoff
        year, month = (t.tm_year + 1, 1) if t.tm_mon == 12 else (t.tm_year, t.tm_mon + 1)
        self._month_start_ms = start * 1000
        self._next_month_ms = (calendar.timegm((year, month, 1, 0, 0, 0)) - t.tm_gmtoff) * 1000

    def next_id(self) -> str:
        now = int(time.time() * 1000)
        with self._lock:
            if now >= self._next_month_ms:
                self._roll_month(now)
            self._counter = (self._counter + 1) & 0xFFFF
            counter = self._counter
            elapsed = (now - self._month_start_ms) & 0xFFFFFFFF
        return (self._prefix + struct.pack(">IH", elapsed, counter)).hex().upper()
