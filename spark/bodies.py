"""Inflating compressed message bodies (``MessageSysFlag.COMPRESSED_FLAG``).

Bits 8-10 of SYSFLAG name the algorithm (``MessageSysFlag.getCompressionType``, 5.x): 0 or 3 =
zlib (the only one 4.x producers use), 1 = LZ4 frame format (``Lz4Compressor`` writes an
``LZ4FrameOutputStream``), 2 = Zstandard frame (``ZstdCompressor``). LZ4 and Zstandard are read with
pyarrow's codecs, so no extra dependency is needed. A body that does not inflate is returned as
null and counted in ``stats["bad_bodies"]``, never an exception: one bad record must not fail a scan.
"""

from __future__ import annotations

import zlib

import pyarrow as pa

from codec.message import MessageSysFlag

_ARROW_CODECS = {MessageSysFlag.COMPRESSION_LZ4: "lz4", MessageSysFlag.COMPRESSION_ZSTD: "zstd"}


def inflate(raw: bytes, sys_flag: int, stats: dict[str, int]) -> bytes | None:
    """The producer's body for a record stored with ``COMPRESSED_FLAG``; ``None`` if it cannot be read."""
    kind = sys_flag & MessageSysFlag.COMPRESSION_TYPE_MASK
    try:
        if kind in (0, MessageSysFlag.COMPRESSION_ZLIB):
            return zlib.decompress(raw)
        codec = _ARROW_CODECS.get(kind)
        if codec is not None:
            with pa.CompressedInputStream(pa.BufferReader(raw), codec) as stream:
                return bytes(stream.read())
    except (zlib.error, OSError, pa.ArrowException):
        pass
    stats["bad_bodies"] = stats.get("bad_bodies", 0) + 1
    return None
