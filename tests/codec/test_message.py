"""Stored records, properties, batch bodies, ids and Java hashes."""

from __future__ import annotations

import contextlib
import zlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from codec.batch import BatchEntry, decode_batch, encode_batch
from codec.errors import CodecError, MessageFormatError
from codec.hashing import body_crc32, java_hashmap_order, java_string_hash, tags_code
from codec.message import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V1,
    MESSAGE_MAGIC_CODE_V2,
    RECORD_FIELDS,
    MessageRecord,
    MessageSysFlag,
    decode_record,
    encode_blank,
    encode_record,
    iter_records,
    peek_record,
    record_size,
)
from codec.message_id import UniqIdGenerator, decode_offset_msg_id, encode_offset_msg_id
from codec.properties import decode_properties, encode_properties

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
prop_text = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x01\x02"), min_size=1, max_size=20
)


@st.composite
def records(draw: st.DrawFn) -> MessageRecord:
    host = st.sampled_from([4, 16]).flatmap(lambda n: st.binary(min_size=n, max_size=n))
    topic = draw(st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=90))
    return MessageRecord(
        topic=topic,
        queue_id=draw(int32),
        body=draw(st.binary(max_size=300)),
        properties=encode_properties(draw(st.dictionaries(prop_text, prop_text, max_size=5))),
        flag=draw(int32),
        queue_offset=draw(int64),
        physical_offset=draw(int64),
        sys_flag=draw(st.integers(0, 0x7FF)) & ~0x30,
        born_timestamp=draw(int64),
        born_host=draw(host),
        born_port=draw(int32),
        store_timestamp=draw(int64),
        store_host=draw(host),
        store_port=draw(int32),
        reconsume_times=draw(int32),
        prepared_transaction_offset=draw(int64),
    )


@given(records())
def test_record_round_trip(record: MessageRecord) -> None:
    data = encode_record(record)
    decoded = decode_record(data)
    assert decoded.store_size == len(data)
    assert decoded.magic == (
        MESSAGE_MAGIC_CODE_V2 if len(record.topic.encode()) > 127 else MESSAGE_MAGIC_CODE_V1
    )
    assert bool(decoded.sys_flag & MessageSysFlag.BORNHOST_V6_FLAG) == (len(record.born_host) == 16)
    assert bool(decoded.sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG) == (len(record.store_host) == 16)
    for name in RECORD_FIELDS:
        if name not in ("sys_flag", "magic", "store_size"):
            assert getattr(decoded, name) == getattr(record, name), name
    assert encode_record(decoded) == data


def test_record_size_matches_spec_formula() -> None:
    record = MessageRecord(topic="TopicTest", queue_id=0, body=b"hello", properties="A\x01B\x02")
    assert len(encode_record(record)) == record_size(0, 5, 9, 4) == 91 + 5 + 9 + 4


def test_long_topic_uses_v2_magic() -> None:
    record = MessageRecord(topic="%RETRY%" + "g" * 130, queue_id=0, body=b"")
    data = encode_record(record)
    assert decode_record(data).magic == MESSAGE_MAGIC_CODE_V2
    assert len(data) == record_size(0, 0, 137, 0)


@given(st.binary(max_size=400))
@example(encode_blank(100))
def test_random_bytes_raise_only_format_errors(data: bytes) -> None:
    with contextlib.suppress(MessageFormatError):
        decode_record(data)


def test_every_truncation_and_size_mismatch_is_detected() -> None:
    data = encode_record(MessageRecord(topic="T", queue_id=1, body=b"body", properties="K\x01V\x02"))
    for cut in range(len(data)):
        with pytest.raises(MessageFormatError):
            decode_record(data[:cut])
    bad = bytearray(data)
    bad[3] += 1  # TOTALSIZE one too large
    with pytest.raises(MessageFormatError):
        decode_record(bytes(bad) + b"\0")


def test_blank_marker_is_recognised() -> None:
    marker = encode_blank(4096)
    assert peek_record(marker) == (4096, BLANK_MAGIC_CODE)
    with pytest.raises(MessageFormatError, match="blank"):
        decode_record(marker + bytes(60))


def test_iter_records_reads_a_pull_body() -> None:
    recs = [MessageRecord(topic="T", queue_id=0, body=bytes([i]) * i, queue_offset=i) for i in range(5)]
    body = b"".join(encode_record(r) for r in recs)
    assert [r.queue_offset for r in iter_records(body)] == list(range(5))


def test_compressed_body_inflates() -> None:
    raw = "压缩".encode() * 3000
    record = MessageRecord(
        topic="T",
        queue_id=0,
        body=zlib.compress(raw, 5),
        sys_flag=MessageSysFlag.COMPRESSED_FLAG | MessageSysFlag.COMPRESSION_ZLIB,
    )
    assert decode_record(encode_record(record)).uncompressed_body() == raw


@given(st.dictionaries(prop_text, prop_text, max_size=10))
def test_properties_round_trip(props: dict[str, str]) -> None:
    text = encode_properties(props)
    assert text.count("\x02") == len(props)
    assert decode_properties(text) == props


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("k\x01\x02", {}),  # empty value: Java skips segments shorter than 3
        ("\x01v\x02", {}),  # empty name
        ("a\x01b", {"a": "b"}),  # no trailing separator
        ("a\x01b\x02\x02c\x01d\x02", {"a": "b", "c": "d"}),
        ("a\x01b\x01c\x02", {"a": "b\x01c"}),
        ("KEYS\x01中文 键\x02", {"KEYS": "中文 键"}),
    ],
)
def test_properties_parse_like_java(text: str, expected: dict[str, str]) -> None:
    assert decode_properties(text) == expected


def _java_string2message_properties(text: str) -> dict[str, str]:
    """MessageDecoder.string2messageProperties, index walk for index walk."""
    props: dict[str, str] = {}
    index, length = 0, len(text)
    while index < length:
        end = text.find("\x02", index)
        if end < 0:
            end = length
        if end - index >= 3:
            sep = text.find("\x01", index)
            if index < sep < end - 1:
                props[text[index:sep]] = text[sep + 1 : end]
        index = end + 1
    return props


@given(st.text(alphabet="ab\x01\x02中", max_size=24))
def test_properties_split_agrees_with_javas_index_walk(text: str) -> None:
    assert decode_properties(text) == _java_string2message_properties(text)


def test_properties_refuse_separators() -> None:
    with pytest.raises(MessageFormatError):
        encode_properties({"a\x01": "b"})


@given(
    st.lists(st.builds(BatchEntry, int32, st.binary(max_size=100), prop_text.map(lambda t: f"K\x01{t}\x02")))
)
def test_batch_round_trip(entries: list[BatchEntry]) -> None:
    assert decode_batch(encode_batch(entries)) == entries


def test_batch_truncations_are_detected() -> None:
    body = encode_batch([BatchEntry(0, b"abc", "K\x01V\x02"), BatchEntry(1, b"", "")])
    for cut in range(1, len(body)):
        if cut == len(encode_batch([BatchEntry(0, b"abc", "K\x01V\x02")])):
            continue
        with pytest.raises(MessageFormatError):
            decode_batch(body[:cut])


@pytest.mark.parametrize(
    ("text", "expected"),
    # Expected values printed by a real JVM (String.hashCode).
    [
        ("", 0),
        ("TagA", 2598919),
        ("中文", 646394),
        ("😀", 1772899),  # a surrogate pair: two UTF-16 code units
        ("TBW102", -1826525782),
        ("DefaultCluster", 1874216089),
        ("%RETRY%group", 995971261),
        ("MSG_REGION", -1929015918),
    ],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected
    assert -(2**31) <= java_string_hash(text) < 2**31


def test_tags_code_of_missing_tag_is_zero() -> None:
    assert tags_code(None) == tags_code("") == 0


@given(st.binary(max_size=2000))
def test_body_crc_is_masked_zlib_crc(data: bytes) -> None:
    assert body_crc32(data) == zlib.crc32(data) & 0x7FFFFFFF


def test_hashmap_order_matches_java() -> None:
    # Expected values printed by a real JVM (java.util.HashMap of capacity 128, these puts in order).
    keys = ["KEYS", "WAIT", "TAGS", "UNIQ_KEY", "MSG_REGION", "TRACE_ON", "CLUSTER", "userProp", "中文键"]
    assert java_hashmap_order(keys) == [
        "MSG_REGION",
        "UNIQ_KEY",
        "CLUSTER",
        "TAGS",
        "中文键",
        "userProp",
        "KEYS",
        "WAIT",
        "TRACE_ON",
    ]


@pytest.mark.parametrize("host", [b"\x7f\x00\x00\x01", bytes(range(16))])
def test_offset_msg_id_round_trip(host: bytes) -> None:
    msg_id = encode_offset_msg_id(host, 10911, 1234567)
    assert len(msg_id) == (32 if len(host) == 4 else 56)
    assert msg_id == msg_id.upper()
    assert decode_offset_msg_id(msg_id) == (host, 10911, 1234567)


def test_offset_msg_id_known_value() -> None:
    assert encode_offset_msg_id(bytes([192, 168, 0, 1]), 10911, 0xE3A) == "C0A8000100002A9F0000000000000E3A"


@pytest.mark.parametrize("bad", ["zz", "C0A8", "C0A8000100002A9F0000000000000E3A00"])
def test_bad_offset_msg_id(bad: str) -> None:
    with pytest.raises(CodecError):
        decode_offset_msg_id(bad)


def test_uniq_ids_are_unique_and_shaped_like_java() -> None:
    gen = UniqIdGenerator()
    ids = {gen.next_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 32 and i == i.upper() for i in ids)
