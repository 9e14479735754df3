"""Frames written by the real Java clients (tests/golden/frames, see compat_tests/record_golden.py).

Each decodes to its independently decoded sidecar, re-encodes to the same bytes, and its typed
header and body parse.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codec.batch import decode_batch
from codec.bodies.heartbeat import HeartbeatData
from codec.codes import LanguageCode, RequestCode
from codec.frame import FrameDecoder, encode_frame
from codec.headers.client import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from codec.headers.namesrv import GetRouteInfoRequestHeader
from codec.headers.pull import PullMessageRequestHeader
from codec.headers.send import SendMessageRequestHeaderV2
from codec.properties import decode_properties

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "frames"
FRAMES = sorted(GOLDEN.glob("*/*.bin"))

HEADERS = {
    RequestCode.SEND_MESSAGE_V2: SendMessageRequestHeaderV2,
    RequestCode.SEND_BATCH_MESSAGE: SendMessageRequestHeaderV2,
    RequestCode.PULL_MESSAGE: PullMessageRequestHeader,
    RequestCode.LITE_PULL_MESSAGE: PullMessageRequestHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetRequestHeader,
    RequestCode.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetRequestHeader,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupRequestHeader,
    RequestCode.UNREGISTER_CLIENT: UnregisterClientRequestHeader,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: GetRouteInfoRequestHeader,
}


def test_recordings_cover_both_lines_and_serialize_types() -> None:
    dirs = {p.parent.name for p in FRAMES}
    assert dirs == {"4.9.8-JSON", "4.9.8-ROCKETMQ", "5.3.3-JSON", "5.3.3-ROCKETMQ"}
    codes = {json.loads(p.with_suffix(".json").read_text())["code_name"] for p in FRAMES}
    assert {"GET_ROUTEINFO_BY_TOPIC", "HEART_BEAT", "SEND_MESSAGE_V2", "SEND_BATCH_MESSAGE"} <= codes


@pytest.mark.parametrize("path", FRAMES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_frame(path: Path) -> None:
    data = path.read_bytes()
    meta = json.loads(path.with_suffix(".json").read_text())
    decoder = FrameDecoder()
    (cmd,) = decoder.feed(data + b"\x00\x00")  # trailing junk stays buffered
    assert decoder.buffered == 2
    assert cmd.serialize_type.name == meta["serialize_type"]
    assert (cmd.code, cmd.version, cmd.opaque, cmd.flag, cmd.remark) == (
        meta["code"],
        meta["version"],
        meta["opaque"],
        meta["flag"],
        meta["remark"],
    )
    assert LanguageCode(cmd.language).name == meta["language"]
    assert cmd.ext_fields == meta["ext_fields"]
    assert len(cmd.body) == meta["body_len"]
    assert encode_frame(cmd) == data, "re-encoding must give the client's exact bytes"

    header_type = HEADERS.get(RequestCode(cmd.code))
    if header_type is not None:
        header_type.from_ext_fields(cmd.ext_fields)
    if cmd.code == RequestCode.HEART_BEAT:
        hb = HeartbeatData.decode(cmd.body)
        assert hb.client_id
        assert HeartbeatData.decode(hb.encode()) == hb
    if cmd.code == RequestCode.SEND_MESSAGE_V2:
        header = SendMessageRequestHeaderV2.from_ext_fields(cmd.ext_fields)
        props = decode_properties(header.properties)
        assert (props["TAGS"], props["KEYS"], props["color"]) == ("TagA", "key-1 键-2", "蓝")
        assert cmd.body == "hello 你好".encode()
    if cmd.code == RequestCode.SEND_BATCH_MESSAGE:
        entries = decode_batch(cmd.body)
        assert [e.body for e in entries] == [f"batch body {i}".encode() for i in range(3)]
        assert all(decode_properties(e.properties)["TAGS"] == "TagB" for e in entries)
