"""HPACK (RFC 7541) as the gRPC server needs it: a full decoder, and an encoder without state.

:class:`HeaderDecoder` decodes the request header blocks of one connection: indexed fields,
literals with and without indexing, the dynamic table with its size updates (up to the 4,096
bytes of SETTINGS_HEADER_TABLE_SIZE the server never changes), Huffman-coded strings (the
``hpack`` package's decoding table, the library ``h2`` itself uses). Names and values are
UTF-8 text, as ``h2`` with ``header_encoding="utf-8"`` gave them; one that is not ends the
connection (COMPRESSION_ERROR would claim the block itself is broken, so it is PROTOCOL_ERROR).

:func:`encode_headers` writes a response's fields as literals without indexing (RFC 7541 6.2.2),
with the name's static-table index where it has one, and ``:status 200`` as static index 8: the
peer's decoder keeps no state for them, so the block of a field never changes and is cached.
No Huffman coding: gRPC's response fields are short, and a byte saved is not worth the CPU.
"""

from __future__ import annotations

from collections import deque

from hpack.huffman_table import decode_huffman
from hpack.table import HeaderTable

from gateway.transport.grpc.request import HEADER_ENTRY_OVERHEAD

DEFAULT_TABLE_SIZE = 4096  # RFC 9113 6.5.2: SETTINGS_HEADER_TABLE_SIZE's initial value, kept
#: RFC 7541 Appendix A, as text: index 1 is STATIC[0].
STATIC: tuple[tuple[str, str], ...] = tuple((n.decode(), v.decode()) for n, v in HeaderTable.STATIC_TABLE)
STATIC_NAME_INDEX: dict[str, int] = {}
for _index, (_name, _) in enumerate(STATIC, start=1):
    STATIC_NAME_INDEX.setdefault(_name, _index)
FIELD_CACHE_SIZE = 1024  # encoded response fields kept (grpc-status values, common messages)


class HeaderBlockError(Exception):
    """A header block that does not decode (the connection ends with ``error_code``)."""

    error_code = 0x9  # COMPRESSION_ERROR (RFC 9113 7)


class HeaderNotText(HeaderBlockError):
    """A name or value that is not UTF-8."""

    error_code = 0x1  # PROTOCOL_ERROR


class HeaderListTooLarge(HeaderBlockError):
    """A header list beyond the decoder's limit (an HPACK bomb, or simply too much metadata)."""

    error_code = 0xB  # ENHANCE_YOUR_CALM, as h2 answers one


class HeaderDecoder:
    """The decoding context of one connection (its dynamic table survives between blocks)."""

    __slots__ = ("_entries", "_max_table_size", "_size", "_table_size_limit", "max_header_list_size")

    def __init__(self, max_header_list_size: int, table_size_limit: int = DEFAULT_TABLE_SIZE) -> None:
        self.max_header_list_size = max_header_list_size
        self._table_size_limit = table_size_limit  # what we advertised: the peer may not exceed it
        self._max_table_size = table_size_limit
        self._entries: deque[tuple[str, str, int]] = deque()  # newest first: name, value, size
        self._size = 0

    @property
    def table_size(self) -> int:
        """Bytes in the dynamic table by RFC 7541 4.1's count."""
        return self._size

    def decode(self, block: bytes | bytearray | memoryview) -> list[tuple[str, str]]:
        """The fields of one whole header block. Raises HeaderBlockError (or a subclass)."""
        data = memoryview(block)
        end = len(data)
        pos = 0
        fields: list[tuple[str, str]] = []
        list_size = 0
        limit = self.max_header_list_size
        leading = True  # a table size update may only open a block (RFC 7541 4.2)
        while pos < end:
            byte = data[pos]
            if byte & 0x80:  # 6.1 indexed field
                index, pos = _integer(data, pos, 7)
                field = self._field(index)
            elif byte & 0x40:  # 6.2.1 literal with incremental indexing
                field, pos = self._literal(data, pos, 6)
                self._add(field)
            elif byte & 0x20:  # 6.3 dynamic table size update
                if not leading:
                    raise HeaderBlockError("dynamic table size update after a field")
                size, pos = _integer(data, pos, 5)
                if size > self._table_size_limit:
                    raise HeaderBlockError(f"dynamic table size {size} over {self._table_size_limit}")
                self._max_table_size = size
                self._evict()
                continue
            else:  # 6.2.2 without indexing, 6.2.3 never indexed: the same to a decoder
                field, pos = self._literal(data, pos, 4)
            leading = False
            list_size += len(field[0]) + len(field[1]) + HEADER_ENTRY_OVERHEAD
            if list_size > limit:
                raise HeaderListTooLarge(f"header list over {limit} bytes")
            fields.append(field)
        return fields

    def _field(self, index: int) -> tuple[str, str]:
        if 0 < index <= len(STATIC):
            return STATIC[index - 1]
        dynamic = index - len(STATIC) - 1
        if index == 0 or dynamic >= len(self._entries):
            raise HeaderBlockError(f"header table index {index} out of range")
        name, value, _ = self._entries[dynamic]
        return name, value

    def _literal(self, data: memoryview, pos: int, prefix: int) -> tuple[tuple[str, str], int]:
        index, pos = _integer(data, pos, prefix)
        if index:
            name = self._field(index)[0]
        else:
            name, pos = _string(data, pos)
        value, pos = _string(data, pos)
        return (name, value), pos

    def _add(self, field: tuple[str, str]) -> None:
        name, value = field
        size = len(name.encode()) + len(value.encode()) + HEADER_ENTRY_OVERHEAD
        if size > self._max_table_size:  # RFC 7541 4.4: the table is emptied, nothing added
            self._entries.clear()
            self._size = 0
            return
        self._entries.appendleft((name, value, size))
        self._size += size
        self._evict()

    def _evict(self) -> None:
        while self._size > self._max_table_size:
            self._size -= self._entries.pop()[2]


def _integer(data: memoryview, pos: int, prefix: int) -> tuple[int, int]:
    """RFC 7541 5.1: the integer whose ``prefix``-bit prefix starts at ``pos``, and the next pos."""
    mask = (1 << prefix) - 1
    value = data[pos] & mask
    pos += 1
    if value < mask:
        return value, pos
    shift = 0
    end = len(data)
    while True:
        if pos >= end:
            raise HeaderBlockError("integer runs past the header block")
        byte = data[pos]
        pos += 1
        value += (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:  # no index, length or size a connection accepts needs more than 4 bytes
            raise HeaderBlockError("integer too large")


def _string(data: memoryview, pos: int) -> tuple[str, int]:
    """RFC 7541 5.2: the string literal at ``pos`` as text, and the next pos."""
    if pos >= len(data):
        raise HeaderBlockError("string literal missing")
    huffman = data[pos] & 0x80
    length, pos = _integer(data, pos, 7)
    end = pos + length
    if end > len(data):
        raise HeaderBlockError("string literal runs past the header block")
    raw = data[pos:end]
    try:
        text = (decode_huffman(raw) if huffman else bytes(raw)).decode()
    except UnicodeDecodeError as err:
        raise HeaderNotText(f"header not UTF-8: {err}") from None
    except Exception as err:  # hpack's HPACKDecodingError: an invalid Huffman code or padding
        raise HeaderBlockError(f"invalid Huffman string: {err}") from None
    return text, end


_field_cache: dict[tuple[str, str], bytes] = {}


def encode_headers(fields: list[tuple[str, str]]) -> bytes:
    """A header block for ``fields`` that leaves the peer's dynamic table alone (see the module)."""
    cache = _field_cache
    parts = []
    for field in fields:
        encoded = cache.get(field)
        if encoded is None:
            encoded = encode_field(*field)
            if len(cache) < FIELD_CACHE_SIZE:
                cache[field] = encoded
        parts.append(encoded)
    return b"".join(parts)


def encode_field(name: str, value: str) -> bytes:
    """One field: a static-table index if the whole field is there, else a literal without
    indexing (RFC 7541 6.2.2) with the name's static index where it has one."""
    try:
        return _encode_integer(STATIC.index((name, value)) + 1, 7, 0x80)
    except ValueError:
        pass
    index = STATIC_NAME_INDEX.get(name, 0)
    out = _encode_integer(index, 4, 0x00)
    if not index:
        out += _encode_string(name.encode())
    return out + _encode_string(value.encode())


def _encode_integer(value: int, prefix: int, first: int) -> bytes:
    mask = (1 << prefix) - 1
    if value < mask:
        return bytes([first | value])
    out = bytearray([first | mask])
    value -= mask
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _encode_string(raw: bytes) -> bytes:
    return _encode_integer(len(raw), 7, 0x00) + raw
