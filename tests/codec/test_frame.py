"""Frames and the two header serializers: round trips, splitting, and bad input."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from codec.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from codec.command import RPC_ONEWAY, RPC_TYPE_RESPONSE, RemotingCommand
from codec.errors import CodecError, FrameError, FrameTooLargeError
from codec.frame import MAX_FRAME_SIZE, FrameDecoder, decode_frame, encode_frame
from codec.versions import CURRENT_VERSION

int32 = st.integers(-(2**31), 2**31 - 1)
int16 = st.integers(-(2**15), 2**15 - 1)
text = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40)


@st.composite
def commands(draw: st.DrawFn) -> RemotingCommand:
    serialize = draw(st.sampled_from(SerializeType))
    binary = serialize == SerializeType.ROCKETMQ
    ext = draw(st.none() | st.dictionaries(text, text, max_size=6))
    if ext is not None and not binary:
        pass
    elif ext is not None and binary and not ext:
        ext = None  # an empty map area decodes as "no extFields" in the binary form
    return RemotingCommand(
        draw(int16 if binary else int32),
        language=draw(st.sampled_from(LanguageCode)),
        version=draw(int16 if binary else int32),
        opaque=draw(int32),
        flag=draw(st.sampled_from([0, RPC_TYPE_RESPONSE, RPC_ONEWAY])),
        remark=draw(st.none() | text),
        ext_fields=ext,
        body=draw(st.binary(max_size=200)),
        serialize_type=serialize,
    )


@given(commands())
def test_command_round_trip(cmd: RemotingCommand) -> None:
    frame = encode_frame(cmd)
    (length,) = struct.unpack_from(">i", frame)
    assert length == len(frame) - 4
    assert decode_frame(frame[4:]) == cmd


@given(st.lists(commands(), min_size=1, max_size=5), st.data())
def test_frames_split_anywhere_decode_the_same(cmds: list[RemotingCommand], data: st.DataObject) -> None:
    stream = b"".join(encode_frame(c) for c in cmds)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        out += decoder.feed(stream[prev:cut])
        prev = cut
    assert out == cmds
    assert decoder.buffered == 0


def test_one_byte_at_a_time_and_trailing_junk_stays_buffered() -> None:
    cmd = RemotingCommand(RequestCode.SEND_MESSAGE_V2, ext_fields={"a": "g"}, body=b"x" * 10)
    frame = encode_frame(cmd)
    decoder = FrameDecoder()
    got: list[RemotingCommand] = []
    for i in range(len(frame)):
        got += decoder.feed(frame[i : i + 1])
    assert got == [cmd]
    assert decoder.feed(frame + frame[:7]) == [cmd]
    assert decoder.buffered == 7


@given(st.binary(max_size=300))
@example(b"\x00\x00\x00\x04\x05\x00\x00\x00")
@example(b"\xff\xff\xff\xff")
def test_random_bytes_raise_only_codec_errors(data: bytes) -> None:
    with contextlib.suppress(CodecError):
        FrameDecoder().feed(data)
    with contextlib.suppress(CodecError):
        decode_frame(data)


def _frame(word: int, header: bytes, body: bytes = b"", length: int | None = None) -> bytes:
    total = 4 + len(header) + len(body) if length is None else length
    return struct.pack(">iI", total, word) + header + body


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(struct.pack(">i", -1), "invalid frame length", id="negative-length"),
        pytest.param(struct.pack(">i", 2), "invalid frame length", id="length-below-header-word"),
        pytest.param(_frame(200, b"{}"), "exceeds the frame", id="header-longer-than-frame"),
        pytest.param(_frame((7 << 24) | 2, b"{}"), "unknown serialize type", id="unknown-serialize-type"),
        pytest.param(_frame(5, b"{code"), "invalid JSON", id="invalid-json"),
        pytest.param(_frame(4, b"[12]"), "not an object", id="json-not-object"),
        pytest.param(_frame(12, b'{"code":"\xff"}'), "invalid JSON", id="invalid-utf8"),
        pytest.param(_frame(12, b'{"code":1.5}'), "not an integer", id="code-not-integer"),
        pytest.param(
            _frame((1 << 24) | 21, struct.pack(">hbhiii", 1, 0, 1, 1, 0, 99) + b"\0\0\0\0"),
            "remark length",
            id="binary-remark-out-of-bounds",
        ),
        pytest.param(
            _frame((1 << 24) | 23, struct.pack(">hbhiii", 1, 0, 1, 1, 0, 0) + struct.pack(">ih", 2, 50)),
            "key length",
            id="binary-key-out-of-bounds",
        ),
    ],
)
def test_named_bad_input(raw: bytes, message: str) -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError, match=message):
        decoder.feed(raw)
    with pytest.raises(FrameError, match="already failed"):
        decoder.feed(b"")


def test_oversized_frame_is_refused_before_its_body_arrives() -> None:
    decoder = FrameDecoder()
    prefix = struct.pack(">iI", MAX_FRAME_SIZE - 3, 2)
    with pytest.raises(FrameTooLargeError):
        decoder.feed(prefix)
    assert decoder.buffered == 0


def test_largest_allowed_frame_is_accepted() -> None:
    header = b'{"code":0}'
    body = b"b" * (MAX_FRAME_SIZE - 8 - len(header))
    frame = _frame(len(header), header, body)
    assert len(frame) == MAX_FRAME_SIZE
    (cmd,) = FrameDecoder().feed(frame)
    assert len(cmd.body) == len(body)


def test_response_builder_mirrors_request() -> None:
    req = RemotingCommand(
        RequestCode.HEART_BEAT, opaque=42, version=409, serialize_type=SerializeType.ROCKETMQ
    )
    resp = req.make_response(ResponseCode.SUCCESS, header={"IS_SUB_CHANGE": "true"})
    assert resp.is_response
    assert not resp.is_oneway
    assert (resp.opaque, resp.version, resp.serialize_type) == (42, CURRENT_VERSION, SerializeType.ROCKETMQ)
    assert resp.ext_fields == {"IS_SUB_CHANGE": "true"}


def test_json_header_has_fastjson_shape() -> None:
    cmd = RemotingCommand(ResponseCode.SUCCESS, opaque=7, flag=1, ext_fields={"queueId": "2"})
    frame = encode_frame(cmd)
    assert frame[8:] == (
        b'{"code":0,"extFields":{"queueId":"2"},"flag":1,"language":"JAVA","opaque":7,'
        b'"serializeTypeCurrentRPC":"JSON","version":479}'
    )


def test_binary_header_refuses_codes_above_int16() -> None:
    cmd = RemotingCommand(RequestCode.POP_MESSAGE, serialize_type=SerializeType.ROCKETMQ)
    with pytest.raises(CodecError, match="does not fit"):
        encode_frame(cmd)


def test_binary_empty_values_disappear_as_in_java() -> None:
    cmd = RemotingCommand(1, ext_fields={"a": "", "b": "x"}, remark="", serialize_type=SerializeType.ROCKETMQ)
    decoded = decode_frame(encode_frame(cmd)[4:])
    assert decoded.ext_fields == {"b": "x"}
    assert decoded.remark is None


def test_json_header_tolerates_missing_and_extra_keys() -> None:
    header = b'{"code":105,"opaque":3,"futureKey":[1,2],"language":"SOMETHING_NEW"}'
    cmd = decode_frame(_frame(len(header), header)[4:])
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.ext_fields, cmd.remark) == (105, 3, 0, None, None)
    assert cmd.language == LanguageCode.OTHER
