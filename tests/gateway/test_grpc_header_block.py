"""HPACK for the gRPC server (gateway.transport.grpc.header_block): RFC 7541 Appendix C's examples,
the ``hpack`` package as an independent encoder and decoder, and the malformed blocks."""

from __future__ import annotations

import hpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.transport.grpc.header_block import (
    HeaderBlockError,
    HeaderDecoder,
    HeaderListTooLarge,
    HeaderNotText,
    encode_field,
    encode_headers,
)
from gateway.transport.grpc.request import RESPONSE_HEADERS

LIMIT = 65536
EXAMPLE_REQUESTS = [
    [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
    [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
        ("cache-control", "no-cache"),
    ],
    [
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ],
]
EXAMPLE_TABLE_SIZES = [57, 110, 164]
C3 = [  # RFC 7541 C.3: requests without Huffman coding, one connection
    "828684410f7777772e6578616d706c652e636f6d",
    "828684be58086e6f2d6361636865",
    "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
]
C4 = [  # RFC 7541 C.4: the same requests with Huffman coding
    "828684418cf1e3c2e5f23a6ba0ab90f4ff",
    "828684be5886a8eb10649cbf",
    "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
]


@pytest.mark.parametrize("blocks", [C3, C4], ids=["C.3", "C.4"])
def test_rfc7541_request_examples(blocks: list[str]) -> None:
    decoder = HeaderDecoder(LIMIT)
    for block, expected, size in zip(blocks, EXAMPLE_REQUESTS, EXAMPLE_TABLE_SIZES, strict=True):
        assert decoder.decode(bytes.fromhex(block)) == expected
        assert decoder.table_size == size


def test_rfc7541_response_examples_evict_with_a_256_byte_table() -> None:
    """RFC 7541 C.5: the table limited to 256 bytes evicts the oldest entries."""
    decoder = HeaderDecoder(LIMIT, table_size_limit=256)
    first = bytes.fromhex(
        "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d54"
        "6e1768747470733a2f2f7777772e6578616d706c652e636f6d"
    )
    date = ("date", "Mon, 21 Oct 2013 20:13:21 GMT")
    location = ("location", "https://www.example.com")
    assert decoder.decode(first) == [(":status", "302"), ("cache-control", "private"), date, location]
    assert decoder.table_size == 222
    second = bytes.fromhex("4803333037c1c0bf")
    assert decoder.decode(second) == [(":status", "307"), ("cache-control", "private"), date, location]
    assert decoder.table_size == 222


def test_dynamic_table_size_update_evicts_and_is_bounded() -> None:
    decoder = HeaderDecoder(LIMIT)
    decoder.decode(bytes.fromhex(C3[0]))
    assert decoder.decode(bytes([0x20])) == []  # size update to 0: the table empties
    assert decoder.table_size == 0
    with pytest.raises(HeaderBlockError, match="index 62"):
        decoder.decode(bytes([0xBE]))
    with pytest.raises(HeaderBlockError, match="over 4096"):
        decoder.decode(bytes([0x3F, 0xE2, 0x1F]))  # 4097 bytes: more than the advertised 4,096
    with pytest.raises(HeaderBlockError, match="after a field"):
        decoder.decode(bytes([0x82, 0x20]))


@pytest.mark.parametrize(
    ("block", "error"),
    [
        (b"\x80", HeaderBlockError),  # index 0
        (b"\xff\xff\xff\xff\xff\xff", HeaderBlockError),  # integer runs past the block
        (b"\x40\x05abc", HeaderBlockError),  # string runs past the block
        (b"\x40", HeaderBlockError),  # literal without its name
        (b"\x00\x81\xff", HeaderBlockError),  # Huffman code of EOS bits only, too long
        (b"\x00\x01a\x02\xff\xfe", HeaderNotText),
    ],
)
def test_malformed_blocks_raise_the_decoders_error(block: bytes, error: type[Exception]) -> None:
    with pytest.raises(error) as raised:
        HeaderDecoder(LIMIT).decode(block)
    assert type(raised.value) is error


def test_header_list_over_the_limit() -> None:
    encoder = hpack.Encoder()
    block = encoder.encode([("x-big", "m" * 200)])
    with pytest.raises(HeaderListTooLarge):
        HeaderDecoder(200).decode(block)
    assert HeaderDecoder(300).decode(block) == [("x-big", "m" * 200)]


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1, max_size=20)
_values = st.text(max_size=60)
_lists = st.lists(st.tuples(_names, _values), max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    blocks=st.lists(st.tuples(_lists, st.booleans()), min_size=1, max_size=6),
    table=st.sampled_from([0, 256, 4096]),
)
def test_hpack_encoder_output_decodes_to_the_same_lists(
    blocks: list[tuple[list[tuple[str, str]], bool]], table: int
) -> None:
    """The ``hpack`` package's encoder (indexing, Huffman, a size update) is the oracle."""
    encoder = hpack.Encoder()
    encoder.header_table_size = table
    decoder = HeaderDecoder(LIMIT)
    for headers, huffman in blocks:
        assert decoder.decode(encoder.encode(headers, huffman=huffman)) == headers


@given(headers=_lists)
def test_encoded_responses_decode_with_hpack(headers: list[tuple[str, str]]) -> None:
    decoder = hpack.Decoder()
    assert decoder.decode(encode_headers(headers)) == headers
    assert decoder.header_table_size == 4096
    assert len(decoder.header_table.dynamic_entries) == 0  # ours never adds to the peer's table


def test_response_headers_are_static_index_and_literals() -> None:
    assert encode_field(":status", "200") == b"\x88"
    assert encode_field("content-type", "application/grpc") == b"\x0f\x10\x10application/grpc"
    assert encode_field("grpc-status", "0") == b"\x00\x0bgrpc-status\x010"
    block = encode_headers(RESPONSE_HEADERS)
    assert hpack.Decoder().decode(block) == RESPONSE_HEADERS
