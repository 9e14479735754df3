"""Typed headers: every header class round-trips through extFields; missing and malformed fields."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codec.errors import HeaderError
from codec.headers.admin import CreateTopicRequestHeader
from codec.headers.base import CustomHeader
from codec.headers.client import QueryConsumerOffsetRequestHeader, SearchOffsetRequestHeader
from codec.headers.send import SendMessageRequestHeader, SendMessageRequestHeaderV2

MODULES = ["send", "pull", "client", "transaction", "query", "namesrv", "admin", "base"]
HEADER_CLASSES = sorted(
    {
        obj
        for name in MODULES
        for _, obj in inspect.getmembers(importlib.import_module(f"codec.headers.{name}"), inspect.isclass)
        if issubclass(obj, CustomHeader) and obj is not CustomHeader
    },
    key=lambda c: c.__name__,
)

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
_values = {
    str: _text,
    int: st.integers(-(2**63), 2**63 - 1),
    bool: st.booleans(),
    float: st.floats(allow_nan=False, allow_infinity=False),
}


def _strategy(cls: type[CustomHeader]) -> st.SearchStrategy[CustomHeader]:
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        tp = hints[field.name]
        base = next((a for a in typing.get_args(tp) if a is not type(None)), tp)
        strat = _values[base]
        if field.metadata.get("int32"):  # Java int/Integer: Integer.parseInt's range
            strat = st.integers(-(2**31), 2**31 - 1)
        nullable = not field.metadata["required"] and field.default is None
        kwargs[field.name] = st.none() | strat if nullable else strat
    return st.builds(cls, **kwargs)


def test_every_module_defines_headers() -> None:
    assert len(HEADER_CLASSES) > 50


@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=30)
@given(data=st.data())
def test_header_round_trip(cls: type[CustomHeader], data: st.DataObject) -> None:
    header = data.draw(_strategy(cls))
    ext = header.to_ext_fields()
    assert all(isinstance(v, str) for v in ext.values())
    assert cls.from_ext_fields(ext) == header


@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda c: c.__name__)
def test_missing_required_field_is_a_header_error(cls: type[CustomHeader]) -> None:
    required = [f.metadata["key"] for f in dataclasses.fields(cls) if f.metadata["required"]]  # type: ignore[arg-type]
    if not required:
        assert cls.from_ext_fields(None) == cls()
        return
    with pytest.raises(HeaderError, match=f"missing required field {required[0]!r}"):
        cls.from_ext_fields({})


V2_FIELDS = {
    "a": "pg",
    "b": "T",
    "c": "TBW102",
    "d": "4",
    "e": "-1",
    "f": "0",
    "g": "1700000000000",
    "h": "0",
}


def test_send_v2_one_letter_keys_convert_to_v1() -> None:
    optional = {"i": "KEYS\x01k\x02", "j": "2", "k": "false", "l": "16", "m": "true", "n": "broker-a"}
    v2 = SendMessageRequestHeaderV2.from_ext_fields({**V2_FIELDS, **optional})
    v1 = v2.to_v1()
    assert isinstance(v1, SendMessageRequestHeader)
    assert (v1.producer_group, v1.topic, v1.queue_id, v1.born_timestamp) == ("pg", "T", -1, 1700000000000)
    assert v1.properties == "KEYS\x01k\x02"
    assert v1.broker_name == "broker-a"
    # Every V2 field reaches the v1 field of the same name, the one the send processor reads.
    assert {f.name: getattr(v1, f.name) for f in dataclasses.fields(v2)} == dataclasses.asdict(v2)


@pytest.mark.parametrize("bad", ["x", "1.5", " 4", "1_0", "٣", ""])
def test_malformed_number_is_a_header_error(bad: str) -> None:
    with pytest.raises(HeaderError, match="'d' is not a 32-bit int"):
        SendMessageRequestHeaderV2.from_ext_fields({**V2_FIELDS, "d": bad})


def test_booleans_parse_like_java() -> None:
    assert QueryConsumerOffsetRequestHeader.from_ext_fields(
        {"consumerGroup": "g", "topic": "t", "queueId": "0", "setZeroIfNotFound": "TRUE"}
    ).set_zero_if_not_found
    assert not QueryConsumerOffsetRequestHeader.from_ext_fields(
        {"consumerGroup": "g", "topic": "t", "queueId": "0", "setZeroIfNotFound": "yes"}
    ).set_zero_if_not_found


def test_boundary_type_is_lower_unless_upper() -> None:
    base = {"topic": "t", "queueId": "0", "timestamp": "5"}
    assert not SearchOffsetRequestHeader.from_ext_fields(base).is_upper
    assert SearchOffsetRequestHeader.from_ext_fields({**base, "boundaryType": "UPPER"}).is_upper


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("2147483647", True),
        ("-2147483648", True),
        ("2147483648", False),
        ("-2147483649", False),
        ("+7", True),
        ("1_0", False),
        (" 1", False),
        ("١", False),
        ("9" * 5000, False),
    ],
)
def test_int32_fields_take_what_integer_parseint_takes(text: str, ok: bool) -> None:
    ext = {
        "topic": "T",
        "defaultTopic": "TBW102",
        "readQueueNums": text,
        "writeQueueNums": "1",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "order": "false",
    }
    if ok:
        assert CreateTopicRequestHeader.from_ext_fields(ext).read_queue_nums == int(text)
    else:
        with pytest.raises(HeaderError, match="readQueueNums"):
            CreateTopicRequestHeader.from_ext_fields(ext)


@pytest.mark.parametrize(("text", "ok"), [("9223372036854775807", True), ("9223372036854775808", False)])
def test_int64_fields_take_what_long_parselong_takes(text: str, ok: bool) -> None:
    send = {"a": "p", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": text, "h": "0"}
    if ok:
        assert SendMessageRequestHeaderV2.from_ext_fields(send).born_timestamp == int(text)
    else:
        with pytest.raises(HeaderError, match="'g'"):
            SendMessageRequestHeaderV2.from_ext_fields(send)
