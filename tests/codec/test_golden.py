"""Golden vectors recorded from the real Apache RocketMQ 5.3.3 NameServer and Broker and the real
4.9.8 / 5.3.3 Java clients in both serialize types (``python -m compat_tests.record_golden``):

* ``frames/``: every frame both ways (client and broker requests, server responses). Each decodes
  to its independently decoded sidecar, re-encodes to the same bytes, and its typed header and
  body parse.
* ``records/``: stored records the real broker wrote to its commit log. Each decodes to its
  sidecar and our encoder writes the same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from codec.batch import decode_batch
from codec.bodies.heartbeat import HeartbeatData
from codec.bodies.lock import LockBatchRequestBody, LockBatchResponseBody
from codec.bodies.register import RegisterBrokerBody
from codec.bodies.route import TopicRouteData
from codec.codes import LanguageCode, RequestCode
from codec.frame import FrameDecoder, encode_frame
from codec.hashing import body_crc32
from codec.headers.client import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from codec.headers.namesrv import GetRouteInfoRequestHeader, RegisterBrokerRequestHeader
from codec.headers.pull import PullMessageRequestHeader
from codec.headers.send import SendMessageRequestHeaderV2
from codec.message import MessageRecord, decode_record, encode_record, iter_records
from codec.message_id import encode_offset_msg_id
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


def test_recordings_cover_both_lines_both_serialize_types_and_both_directions() -> None:
    dirs = {p.parent.name for p in FRAMES}
    assert {"4.9.8-JSON", "4.9.8-ROCKETMQ", "5.3.3-JSON", "5.3.3-ROCKETMQ", "broker-5.3.3-JSON"} <= dirs
    kinds = set()
    for path in FRAMES:
        meta = json.loads(path.with_suffix(".json").read_text())
        name = meta["request_code_name"] if meta["is_response"] else meta["code_name"]
        kinds.add(f"{name} {'resp' if meta['is_response'] else 'req'}")
    wanted = {
        f"{code} {way}"
        for code in (
            "GET_ROUTEINFO_BY_TOPIC",
            "REGISTER_BROKER",
            "HEART_BEAT",
            "SEND_MESSAGE_V2",
            "SEND_BATCH_MESSAGE",
            "PULL_MESSAGE",
            "QUERY_CONSUMER_OFFSET",
            "CONSUMER_SEND_MSG_BACK",
            "LOCK_BATCH_MQ",
        )
        for way in ("req", "resp")
    } | {"UPDATE_CONSUMER_OFFSET req"}
    assert wanted <= kinds, wanted - kinds


def test_a_pull_response_with_messages_was_recorded() -> None:
    for path in FRAMES:
        meta = json.loads(path.with_suffix(".json").read_text())
        if meta["is_response"] and meta["request_code_name"] == "PULL_MESSAGE" and meta["body_len"] > 0:
            return
    raise AssertionError("no PULL_MESSAGE response with a body")


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
    assert cmd.is_response == meta["is_response"]
    assert LanguageCode(cmd.language).name == meta["language"]
    assert cmd.ext_fields == meta["ext_fields"]
    assert len(cmd.body) == meta["body_len"]
    assert encode_frame(cmd) == data, "re-encoding must give the Java side's exact bytes"

    code = meta["request_code"] if cmd.is_response else cmd.code
    if not cmd.is_response:
        header_type = HEADERS.get(RequestCode(code))
        if header_type is not None:
            header_type.from_ext_fields(cmd.ext_fields)
    if code == RequestCode.HEART_BEAT and not cmd.is_response:
        hb = HeartbeatData.decode(cmd.body)
        assert hb.client_id
        assert HeartbeatData.decode(hb.encode()) == hb
    if code == RequestCode.SEND_BATCH_MESSAGE and not cmd.is_response:
        assert decode_batch(cmd.body)
    if code == RequestCode.REGISTER_BROKER and not cmd.is_response:
        header = RegisterBrokerRequestHeader.from_ext_fields(cmd.ext_fields)
        body = (
            RegisterBrokerBody.decode_compressed(cmd.body, cmd.version)
            if header.compressed
            else RegisterBrokerBody.decode(cmd.body)
        )
        assert body.topic_config_serialize_wrapper.topic_config_table  # full, or one topic (incremental)
    if code == RequestCode.GET_ROUTEINFO_BY_TOPIC and cmd.is_response and cmd.code == 0:
        assert TopicRouteData.decode(cmd.body).broker_datas
    if code == RequestCode.LOCK_BATCH_MQ:
        if cmd.is_response:
            LockBatchResponseBody.decode(cmd.body)
        else:
            assert LockBatchRequestBody.decode(cmd.body).mq_set
    if code in (RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE) and cmd.is_response and cmd.body:
        records = list(iter_records(cmd.body))
        assert records
        assert b"".join(encode_record(r) for r in records) == cmd.body


def stem(path: Path) -> str:
    return path.name.removesuffix(".gz").removesuffix(".bin")


RECORDS = sorted(p for p in (GOLDEN.parent / "records").iterdir() if p.name.endswith((".bin", ".bin.gz")))


def test_stored_records_cover_the_cases() -> None:
    names = {stem(p) for p in RECORDS}
    for line in ("4.9.8", "5.3.3"):
        for case in ("ascii", "chinese", "big-4MiB", "compressed", "batch-0", "tx-half", "tx-committed"):
            assert f"{line}-{case}" in names
    assert {"5.3.3-ipv6-born-host", "5.3.3-ipv6-store-host", "python-empty-body"} <= names


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.name)
def test_stored_record_from_the_real_broker(path: Path) -> None:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    meta = json.loads(path.with_name(stem(path) + ".json").read_text())
    record = decode_record(data)
    assert record.topic == meta["topic"]
    assert (record.queue_id, record.queue_offset, record.physical_offset) == (
        meta["queue_id"],
        meta["queue_offset"],
        meta["physical_offset"],
    )
    assert (record.sys_flag, record.flag, record.reconsume_times) == (
        meta["sysflag"],
        meta["flag"],
        meta["reconsume_times"],
    )
    assert (record.born_timestamp, record.store_timestamp) == (
        meta["born_timestamp"],
        meta["store_timestamp"],
    )
    assert record.properties == meta["properties"]
    assert decode_properties(record.properties) == meta["properties_map"]
    assert len(record.body) == meta["body_len"]
    assert hashlib.sha256(record.body).hexdigest() == meta["body_sha256"]
    assert body_crc32(record.body) == meta["body_crc"]
    assert (
        encode_offset_msg_id(record.store_host, record.store_port, record.physical_offset)
        == meta["offset_msg_id"]
    )
    assert encode_record(record) == data, "our encoder must write the real broker's exact bytes"
    fresh = MessageRecord(
        topic=record.topic,
        queue_id=record.queue_id,
        body=record.body,
        properties=record.properties,
        flag=record.flag,
        queue_offset=record.queue_offset,
        physical_offset=record.physical_offset,
        sys_flag=record.sys_flag,
        born_timestamp=record.born_timestamp,
        born_host=record.born_host,
        born_port=record.born_port,
        store_timestamp=record.store_timestamp,
        store_host=record.store_host,
        store_port=record.store_port,
        reconsume_times=record.reconsume_times,
        prepared_transaction_offset=record.prepared_transaction_offset,
    )
    assert encode_record(fresh) == data, "a record built from its fields (CRC computed) must match too"
