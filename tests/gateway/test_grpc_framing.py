"""gRPC's length-prefixed messages and header values, without sockets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.transport.grpc.framing import (
    MessageDecoder,
    decode_grpc_message,
    encode_grpc_message,
    encode_message,
    parse_timeout,
)
from gateway.transport.grpc.status import GrpcError, StatusCode


@given(st.lists(st.binary(max_size=300), max_size=8), st.data())
def test_messages_split_anywhere_decode_whole(messages: list[bytes], data: st.DataObject) -> None:
    wire = b"".join(encode_message(m) for m in messages)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=10)))
    decoder = MessageDecoder()
    decoded: list[bytes] = []
    for start, end in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        decoded += decoder.feed(wire[start:end])
    assert decoded == messages
    assert decoder.pending == 0


def test_oversized_length_refused_before_the_body_arrives() -> None:
    decoder = MessageDecoder(limit=100)
    with pytest.raises(GrpcError) as info:
        decoder.feed(b"\x00" + (101).to_bytes(4, "big"))
    assert info.value.code == StatusCode.RESOURCE_EXHAUSTED


def test_compressed_message_unimplemented() -> None:
    with pytest.raises(GrpcError) as info:
        MessageDecoder().feed(b"\x01\x00\x00\x00\x01x")
    assert info.value.code == StatusCode.UNIMPLEMENTED


@pytest.mark.parametrize(
    ("value", "seconds"), [("100m", 0.1), ("3S", 3.0), ("2M", 120.0), ("1H", 3600.0), ("5000u", 0.005)]
)
def test_timeouts(value: str, seconds: float) -> None:
    assert parse_timeout(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["", "S", "10", "-1S", "123456789S", "1x"])
def test_malformed_timeouts(value: str) -> None:
    with pytest.raises(GrpcError) as info:
        parse_timeout(value)
    assert info.value.code == StatusCode.INVALID_ARGUMENT


@given(st.text())
def test_status_message_round_trip(text: str) -> None:
    encoded = encode_grpc_message(text)
    assert all(0x20 <= ord(c) < 0x7F for c in encoded)
    assert decode_grpc_message(encoded) == text
