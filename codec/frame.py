"""Remoting frames: length prefix, header word, header, body.

::

    offset size  field
    0      4     length       = 4 + headerLength + bodyLength (the prefix does not count itself)
    4      4     headerWord   high byte: serialize type (0 JSON, 1 ROCKETMQ); low 24 bits: headerLength
    8      h     header
    8+h    ...   body

The frame limit is checked on the length prefix *before* a body is buffered, as Netty's
``LengthFieldBasedFrameDecoder`` does in ``NettyDecoder``: the prefix plus the length value may
not exceed the limit. Any malformed frame raises :class:`FrameError`; the Java server then closes
the connection, and so should ours (the stream can no longer be trusted to be in sync).
"""

from __future__ import annotations

import struct

from codec import binary_header, json_header
from codec.codes import SerializeType
from codec.command import RemotingCommand
from codec.errors import FrameError, FrameTooLargeError

MAX_FRAME_SIZE = 16 * 1024 * 1024  # RocketMQ remoting default (com.rocketmq.remoting.frameMaxLength)

_PREFIX = struct.Struct(">iI")  # length (signed, as Java reads it), header word
_WORD = struct.Struct(">I")
_LENGTH = struct.Struct(">i")


def encode_frame(cmd: RemotingCommand) -> bytes:
    """Encode ``cmd`` into one whole frame, length prefix included."""
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        header = binary_header.encode_header(cmd)
    else:
        header = json_header.encode_header(cmd)
    body = cmd.body
    word = (int(cmd.serialize_type) << 24) | len(header)
    return b"".join((_PREFIX.pack(4 + len(header) + len(body), word), header, body))


def decode_frame(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode one frame *without* its 4-byte length prefix (header word, header, body)."""
    if len(frame) < 4:
        raise FrameError(f"frame of {len(frame)} bytes has no header word")
    (word,) = _WORD.unpack_from(frame, 0)
    header_len = word & 0xFFFFFF
    if header_len > len(frame) - 4:
        raise FrameError(f"header length {header_len} exceeds the frame ({len(frame) - 4} bytes)")
    return _decode_parts(word >> 24, bytes(frame[4 : 4 + header_len]), bytes(frame[4 + header_len :]))


def _decode_parts(serialize: int, header: bytes, body: bytes) -> RemotingCommand:
    if serialize == SerializeType.JSON:
        return json_header.decode_header(header, body)
    if serialize == SerializeType.ROCKETMQ:
        return binary_header.decode_header(header, body)
    raise FrameError(f"unknown serialize type {serialize}")


class FrameDecoder:
    """Incremental decoder: ``feed`` bytes as they arrive, get whole commands back.

    Keeps at most one partial frame. A length prefix above the limit raises
    :class:`FrameTooLargeError` as soon as the prefix is seen, before any of the body is kept.
    After an error the decoder is poisoned: the stream is out of sync.
    """

    __slots__ = ("_buf", "_failed", "max_frame_size")

    def __init__(self, max_frame_size: int = MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._failed = False

    @property
    def buffered(self) -> int:
        """Bytes held that do not yet form a whole frame."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        """Add ``data`` and return every command it completes (possibly none)."""
        if self._failed:
            raise FrameError("decoder already failed on this stream")
        buf = self._buf
        buf += data
        commands: list[RemotingCommand] = []
        pos = 0
        try:
            while len(buf) - pos >= 4:
                (length,) = _LENGTH.unpack_from(buf, pos)
                if length < 4:
                    raise FrameError(f"invalid frame length {length}")
                if length + 4 > self.max_frame_size:
                    raise FrameTooLargeError(
                        f"frame length {length} exceeds the limit of {self.max_frame_size} bytes"
                    )
                end = pos + 4 + length
                if end > len(buf):
                    break
                # Slicing the bytearray copies; no view of `buf` outlives this loop, so the
                # buffer can always be compacted (a live memoryview would forbid resizing).
                (word,) = _WORD.unpack_from(buf, pos + 4)
                header_end = pos + 8 + (word & 0xFFFFFF)
                if header_end > end:
                    raise FrameError(
                        f"header length {word & 0xFFFFFF} exceeds the frame ({length - 4} bytes)"
                    )
                commands.append(
                    _decode_parts(word >> 24, bytes(buf[pos + 8 : header_end]), bytes(buf[header_end:end]))
                )
                pos = end
        except FrameError:
            self._failed = True
            buf.clear()
            raise
        if pos:
            del buf[:pos]
        return commands
