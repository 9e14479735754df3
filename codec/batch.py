"""The SEND_BATCH_MESSAGE body (``MessageDecoder.encodeMessages`` / ``decodeMessages``).

One entry per message, back to back::

    size  field
    4     TOTALSIZE    size of this entry
    4     MAGICCODE    0 (the client writes 0)
    4     BODYCRC      0 (the broker computes the real CRC)
    4     FLAG
    4     BODYLEN, then BODY (never compressed)
    2     PROPLEN, then PROPERTIES (the message's own, UTF-8)
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from codec.errors import MessageFormatError

_ENTRY_HEAD = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLEN
_SHORT = struct.Struct(">h")


class BatchEntry(NamedTuple):
    flag: int
    body: bytes
    properties: str


def encode_batch(entries: list[BatchEntry]) -> bytes:
    """Encode a batch body as the Java producer does."""
    parts: list[bytes] = []
    for entry in entries:
        props = entry.properties.encode()
        if len(props) > 32767:
            raise MessageFormatError("batch entry properties exceed 32767 bytes")
        size = _ENTRY_HEAD.size + len(entry.body) + 2 + len(props)
        parts += [
            _ENTRY_HEAD.pack(size, 0, 0, entry.flag, len(entry.body)),
            entry.body,
            _SHORT.pack(len(props)),
            props,
        ]
    return b"".join(parts)


def decode_batch(body: bytes | bytearray | memoryview) -> list[BatchEntry]:
    """Split a batch body; raises :class:`MessageFormatError` on any inconsistent length."""
    view = memoryview(body)
    entries: list[BatchEntry] = []
    pos, end = 0, len(view)
    while pos < end:
        if end - pos < _ENTRY_HEAD.size + 2:
            raise MessageFormatError(f"batch entry at {pos} truncated")
        size, _magic, _crc, flag, body_len = _ENTRY_HEAD.unpack_from(view, pos)
        cur = pos + _ENTRY_HEAD.size
        if body_len < 0 or cur + body_len + 2 > end:
            raise MessageFormatError(f"batch entry at {pos}: body length {body_len} out of bounds")
        entry_body = bytes(view[cur : cur + body_len])
        cur += body_len
        (props_len,) = _SHORT.unpack_from(view, cur)
        cur += 2
        if props_len < 0 or cur + props_len > end:
            raise MessageFormatError(f"batch entry at {pos}: properties length {props_len} out of bounds")
        try:
            props = str(view[cur : cur + props_len], "utf-8")
        except UnicodeDecodeError as err:
            raise MessageFormatError(f"batch entry at {pos}: properties are not UTF-8") from err
        cur += props_len
        if size != cur - pos:
            raise MessageFormatError(f"batch entry at {pos}: TOTALSIZE {size} does not match {cur - pos}")
        entries.append(BatchEntry(flag, entry_body, props))
        pos = cur
    return entries
