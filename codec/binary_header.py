"""The ROCKETMQ binary header (serialize type 1), byte by byte.

Mirrors ``org.apache.rocketmq.remoting.protocol.RocketMQSerializable``::

    offset size  field
    0      2     code          signed int16
    2      1     language      LanguageCode byte
    3      2     version       signed int16
    5      4     opaque        int32
    9      4     flag          int32
    13     4     remarkLen     int32, 0 for a null or empty remark
    17     n     remark        UTF-8
    ..     4     extLen        int32, bytes of the map area
    ..     m     map area      entries of (int16 keyLen, key, int32 valLen, value) until extLen

Zero-length strings decode as null (so an empty ext value disappears), as in Java. Codes above
32767 (the 5.x pop family) cannot be carried here; encoding one raises :class:`CodecError`.
"""

from __future__ import annotations

import struct

from codec.codes import SerializeType
from codec.command import RemotingCommand
from codec.errors import CodecError, FrameError

_FIXED = struct.Struct(">hbhii")  # code, language, version, opaque, flag: 13 bytes
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")


def encode_header(cmd: RemotingCommand) -> bytes:
    """Encode the header of ``cmd`` in the binary form."""
    if not -32768 <= cmd.code <= 32767:
        raise CodecError(f"code {cmd.code} does not fit the binary header; use JSON")
    if not -32768 <= cmd.version <= 32767 or not -128 <= cmd.language <= 127:
        raise CodecError("version or language does not fit the binary header")
    remark = cmd.remark.encode() if cmd.remark else b""
    parts = [_FIXED.pack(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag)]
    parts += [_INT.pack(len(remark)), remark]
    area = bytearray()
    for key, value in (cmd.ext_fields or {}).items():
        k = key.encode()
        v = value.encode()
        area += _SHORT.pack(len(k))
        area += k
        area += _INT.pack(len(v))
        area += v
    parts += [_INT.pack(len(area)), bytes(area)]
    return b"".join(parts)


def decode_header(data: bytes | memoryview, body: bytes) -> RemotingCommand:
    """Decode a binary header; raises :class:`FrameError` on any inconsistency."""
    view = memoryview(data)
    size = len(view)
    if size < _FIXED.size + 8:
        raise FrameError(f"binary header too short: {size} bytes")
    code, language, version, opaque, flag = _FIXED.unpack_from(view, 0)
    pos = _FIXED.size
    (remark_len,) = _INT.unpack_from(view, pos)
    pos += 4
    if remark_len < 0 or pos + remark_len + 4 > size:
        raise FrameError(f"binary header remark length {remark_len} is out of bounds")
    remark = _text(view[pos : pos + remark_len]) if remark_len else None
    pos += remark_len
    (ext_len,) = _INT.unpack_from(view, pos)
    pos += 4
    if ext_len < 0 or pos + ext_len > size:
        raise FrameError(f"binary header ext length {ext_len} is out of bounds")
    ext_fields = _decode_map(bytes(view[pos : pos + ext_len])) if ext_len else None
    return RemotingCommand(
        code,
        language=language,
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext_fields,
        body=body,
        serialize_type=SerializeType.ROCKETMQ,
    )


def _decode_map(area: bytes) -> dict[str, str]:
    fields: dict[str, str] = {}
    pos, end = 0, len(area)
    unpack_short, unpack_int = _SHORT.unpack_from, _INT.unpack_from
    try:
        while pos < end:
            if pos + 2 > end:
                raise FrameError("binary header map entry truncated")
            (key_len,) = unpack_short(area, pos)
            pos += 2
            if key_len < 0 or pos + key_len + 4 > end:
                raise FrameError(f"binary header key length {key_len} is out of bounds")
            key = area[pos : pos + key_len].decode()
            pos += key_len
            (val_len,) = unpack_int(area, pos)
            pos += 4
            if val_len < 0 or pos + val_len > end:
                raise FrameError(f"binary header value length {val_len} is out of bounds")
            if key_len and val_len:
                fields[key] = area[pos : pos + val_len].decode()
            pos += val_len
    except UnicodeDecodeError as err:
        raise FrameError(f"binary header string is not UTF-8: {err}") from err
    return fields


def _text(view: memoryview) -> str:
    try:
        return str(view, "utf-8")
    except UnicodeDecodeError as err:
        raise FrameError(f"binary header string is not UTF-8: {err}") from err
