"""gRPC's message framing over an HTTP/2 stream, and its header values; no I/O.

Each message on the stream is a 5-byte prefix, a compressed flag (0 or 1) and a big-endian
32-bit length, then that many bytes (grpc's ``doc/PROTOCOL-HTTP2.md``, "Length-Prefixed-Message").
The length is checked against the inbound limit *before* the body is buffered, as Netty's
``MessageDeframer`` does with ``maxInboundMessageSize``; a gzip message (``grpc-encoding: gzip``)
is inflated under the same limit ("Decompressed gRPC message exceeds maximum size").
"""

from __future__ import annotations

import struct
import urllib.parse
import zlib

from gateway.transport.grpc.config import MAX_INBOUND_MESSAGE_SIZE
from gateway.transport.grpc.status import GrpcError, StatusCode

_PREFIX = struct.Struct(">BI")  # compressed flag (uint8), message length (uint32)
PREFIX_SIZE = _PREFIX.size


# grpc-timeout units (PROTOCOL-HTTP2.md "TimeoutUnit") in seconds.
_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


def encode_message(payload: bytes) -> bytes:
    """One uncompressed length-prefixed message."""
    return _PREFIX.pack(0, len(payload)) + payload


class MessageDecoder:
    """Feed it the DATA of one stream; it returns the whole messages and keeps the rest."""

    __slots__ = ("_buffer", "_encoding", "_limit")

    def __init__(self, limit: int = MAX_INBOUND_MESSAGE_SIZE, encoding: str = "identity") -> None:
        self._buffer = bytearray()
        self._limit = limit
        self._encoding = encoding

    def feed(self, data: bytes) -> list[bytes]:
        """Append ``data``; return the messages now complete.

        Raises GrpcError RESOURCE_EXHAUSTED for a message over the limit (compressed or inflated),
        UNIMPLEMENTED for a compressed one on a call without ``grpc-encoding``, INVALID_ARGUMENT
        for a gzip message that does not inflate.
        """
        self._buffer += data
        messages: list[bytes] = []
        while len(self._buffer) >= PREFIX_SIZE:
            compressed, length = _PREFIX.unpack_from(self._buffer)
            if length > self._limit:
                raise GrpcError(
                    StatusCode.RESOURCE_EXHAUSTED,
                    f"gRPC message exceeds maximum size {self._limit}: {length}",
                )
            if compressed and self._encoding == "identity":
                raise GrpcError(StatusCode.UNIMPLEMENTED, "compressed messages are not supported")
            end = PREFIX_SIZE + length
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[PREFIX_SIZE:end])
            messages.append(gunzip(body, self._limit) if compressed else body)
            del self._buffer[:end]
        return messages

    @property
    def pending(self) -> int:
        """Bytes of a partial message still buffered (non-zero at end of stream is an error)."""
        return len(self._buffer)


def gunzip(body: bytes, limit: int) -> bytes:
    """Inflate one gzip message, at most ``limit`` bytes of it."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as err:
        raise GrpcError(StatusCode.INVALID_ARGUMENT, f"gzip message does not inflate: {err}") from None
    if len(out) > limit:
        raise GrpcError(
            StatusCode.RESOURCE_EXHAUSTED, f"Decompressed gRPC message exceeds maximum size {limit}"
        )
    if not inflater.eof:
        raise GrpcError(StatusCode.INVALID_ARGUMENT, "gzip message ends early")
    return out


def parse_timeout(value: str) -> float:
    """The seconds of a ``grpc-timeout`` value (``"100m"`` is 0.1 s).

    Raises GrpcError INVALID_ARGUMENT for a malformed value.
    """
    digits, unit = value[:-1], value[-1:]
    if not digits.isdigit() or len(digits) > 8 or unit not in _TIMEOUT_UNITS:
        raise GrpcError(StatusCode.INVALID_ARGUMENT, f"malformed grpc-timeout: {value!r}")
    return int(digits) * _TIMEOUT_UNITS[unit]


def encode_grpc_message(text: str) -> str:
    """Percent-encode a status message for the ``grpc-message`` trailer (printable ASCII but ``%``)."""
    return urllib.parse.quote(text, safe=" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~")


def decode_grpc_message(text: str) -> str:
    """The inverse of :func:`encode_grpc_message`."""
    return urllib.parse.unquote(text)
