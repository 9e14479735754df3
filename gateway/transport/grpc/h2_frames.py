"""HTTP/2's frames (RFC 9113 4, 6): their header, types, flags, error codes and settings; no I/O.

The vocabulary :mod:`gateway.transport.grpc.http2` speaks: :func:`frame` builds one frame,
:func:`unpad` takes a DATA or HEADERS payload's padding off, :class:`Http2Error` is a connection
error with its code (GOAWAY), and :class:`StreamWindows` is what the server keeps per open stream.
"""

from __future__ import annotations

import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"  # RFC 9113 3.4
FRAME_HEADER = struct.Struct(">BHBBL")  # length (high byte, low 16 bits), type, flags, stream id
FRAME_HEADER_SIZE = 9
UINT32 = struct.Struct(">L")
SETTING = struct.Struct(">HL")  # identifier, value
GOAWAY_PAYLOAD = struct.Struct(">LL")  # last stream id, error code

# RFC 9113 6: frame types.
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY = range(8)
WINDOW_UPDATE, CONTINUATION = 8, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20

# RFC 9113 7: error codes.
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0x0, 0x1, 0x2, 0x3
STREAM_CLOSED, FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL = 0x5, 0x6, 0x7, 0x8
ENHANCE_YOUR_CALM = 0xB

# RFC 9113 6.5.2: setting identifiers.
SETTINGS_HEADER_TABLE_SIZE, SETTINGS_ENABLE_PUSH, SETTINGS_MAX_CONCURRENT_STREAMS = 0x1, 0x2, 0x3
SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_FRAME_SIZE, SETTINGS_MAX_HEADER_LIST_SIZE = 0x4, 0x5, 0x6

DEFAULT_WINDOW = 65535  # RFC 9113 6.9.2: every window before SETTINGS or WINDOW_UPDATE
MAX_WINDOW = 2**31 - 1  # RFC 9113 6.9.1
DEFAULT_FRAME_SIZE = 16384  # SETTINGS_MAX_FRAME_SIZE's initial value: ours is never raised
MAX_FRAME_SIZE_LIMIT = 2**24 - 1
#: A header block (HEADERS and its CONTINUATIONs) larger than this ends the connection before it
#: is decoded: HPACK compresses a header list by at most ~1/3 but for indexes into the table.
MAX_HEADER_BLOCK = 64 * 1024


class Http2Error(Exception):
    """The client broke the protocol; GOAWAY with ``error_code`` is queued, the connection ends."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class StreamClosed(Exception):
    """The server tried to send on a stream it may no longer send on."""


class StreamWindows:
    """One open stream: who may still send, the send window, the receive window and what was
    consumed of it but not yet given back."""

    __slots__ = ("recv_open", "recv_window", "send_open", "send_window", "unacked")

    def __init__(self, send_window: int, recv_window: int) -> None:
        self.recv_open = True
        self.send_open = True
        self.send_window = send_window
        self.recv_window = recv_window
        self.unacked = 0


def frame(frame_type: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    """One frame (the payload must fit the peer's frame size)."""
    length = len(payload)
    return FRAME_HEADER.pack(length >> 16, length & 0xFFFF, frame_type, flags, stream_id) + payload


def unpad(flags: int, payload: memoryview) -> memoryview:
    """The payload of a DATA or HEADERS frame without its padding (RFC 9113 6.1, 6.2)."""
    if not flags & PADDED:
        return payload
    if not payload:
        raise Http2Error(FRAME_SIZE_ERROR, "PADDED frame without its pad length")
    pad = payload[0]
    if pad >= len(payload):
        raise Http2Error(PROTOCOL_ERROR, f"padding of {pad} bytes in a frame of {len(payload)}")
    return payload[1 : len(payload) - pad]
