"""POP codec: receipt handles, offset-info strings, revive records and POP bodies.

The JSON vectors were printed by fastjson 1.2.83 (``JSON.toJSONString`` / ``RemotingSerializable.encode``)
from the 5.3.3 classes ``PopCheckPoint``, ``AckMsg``, ``BatchAckMsg``, ``BatchAckMessageRequestBody``,
``SetMessageRequestModeRequestBody``, ``QueryAssignmentRequestBody`` and ``QueryAssignmentResponseBody``,
the handle by ``ExtraInfoUtil.buildExtraInfo``.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codec import extra_info as ei
from codec.bodies.lock import MessageQueue
from codec.bodies.pop import (
    AckMsg,
    BatchAck,
    BatchAckMessageRequestBody,
    BatchAckMsg,
    MessageQueueAssignment,
    PopCheckPoint,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from codec.errors import BodyError, CodecError, HeaderError
from codec.headers.pop import AckMessageRequestHeader, PopMessageRequestHeader, PopMessageResponseHeader

CK_JAVA = (
    b'{"bm":0,"bn":"broker-a","c":"GroupA","d":[0,1,4],"it":60000,"n":3,"pt":1700000000000,"q":2,'
    b'"reviveTime":1700000060000,"ro":0,"so":5,"t":"TopicA"}'
)
CK_REPUT_JAVA = (
    b'{"bm":0,"bn":"broker-a","c":"GroupA","d":[0,1,4],"it":60000,"n":3,"pt":1700000000000,"q":2,'
    b'"reviveTime":1700000060000,"ro":7,"rp":"2","so":5,"t":"TopicA"}'
)
ACK_JAVA = b'{"ao":6,"bn":"broker-a","c":"GroupA","pt":1700000000000,"q":0,"so":5,"t":"%RETRY%GroupA_TopicA"}'
BACK_JAVA = b'{"ao":-1,"aol":[5,7],"bn":"broker-a","c":"GroupA","pt":1700000000000,"q":1,"so":5,"t":"TopicA"}'
BATCH_BODY_JAVA = (
    b'{"acks":[{"b":"BQI=","c":"G","it":30000,"pt":1700000000000,"q":1,"r":"0","rq":3,"so":10,"t":"T"}],'
    b'"brokerName":"broker-a"}'
)


def test_checkpoint_written_as_fastjson_writes_it() -> None:
    ck = PopCheckPoint(
        start_offset=5,
        pop_time=1700000000000,
        invisible_time=60000,
        num=3,
        queue_id=2,
        topic="TopicA",
        group="GroupA",
        broker_name="broker-a",
        queue_offset_diff=[0, 1, 4],
    )
    assert ck.encode() == CK_JAVA
    ck.re_put_times, ck.revive_offset = "2", 7
    assert ck.encode() == CK_REPUT_JAVA
    back = PopCheckPoint.decode(CK_REPUT_JAVA)
    assert back == ck
    assert [back.ack_offset_by_index(i) for i in range(3)] == [5, 6, 9]
    assert (back.index_of_ack(9), back.index_of_ack(7), back.index_of_ack(4)) == (2, -1, -1)
    assert back.parse_re_put_times() == 2


def test_old_checkpoint_without_diff_counts_from_start() -> None:
    ck = PopCheckPoint.decode(b'{"so":1,"pt":2,"it":3,"n":2,"q":0,"t":"T","c":"G","bn":"b"}')
    assert (ck.index_of_ack(2), ck.index_of_ack(3), ck.ack_offset_by_index(1)) == (1, -1, 2)
    assert ck.revive_time == 5


def test_ack_records_round_trip_and_take_long_names() -> None:
    ack = AckMsg(
        ack_offset=6,
        start_offset=5,
        group="GroupA",
        topic="%RETRY%GroupA_TopicA",
        queue_id=0,
        pop_time=1700000000000,
        broker_name="broker-a",
    )
    assert ack.encode() == ACK_JAVA
    assert AckMsg.decode(ACK_JAVA) == ack
    assert AckMsg.decode(b'{"ackOffset":6,"startOffset":5,"consumerGroup":"G"}').ack_offset == 6
    back = BatchAckMsg(
        start_offset=5,
        group="GroupA",
        topic="TopicA",
        queue_id=1,
        pop_time=1700000000000,
        broker_name="broker-a",
        ack_offset_list=[5, 7],
    )
    assert back.encode() == BACK_JAVA
    assert BatchAckMsg.decode(BACK_JAVA) == back


def test_batch_ack_body_bitset_is_base64_of_java_bytes() -> None:
    body = BatchAckMessageRequestBody.decode(BATCH_BODY_JAVA)
    (entry,) = body.acks
    assert entry.bits == [0, 2, 9]
    assert (entry.group, entry.topic, entry.retry, entry.revive_queue_id) == ("G", "T", "0", 3)
    assert body.encode() == BATCH_BODY_JAVA
    assert BatchAck.from_obj({"bitSet": [5], "startOffset": 3}).bits == [0, 2]


@pytest.mark.parametrize("bad", [b'{"acks":[{"b":"***"}]}', b'{"acks":[{"b":{}}]}', b'{"acks":3}', b"[1"])
def test_bad_batch_bodies_raise_body_error(bad: bytes) -> None:
    with pytest.raises(BodyError):
        BatchAckMessageRequestBody.decode(bad)


def test_assignment_and_mode_bodies() -> None:
    mode = SetMessageRequestModeRequestBody(topic="T", consumer_group="G", mode="POP", pop_share_queue_num=1)
    assert mode.encode() == b'{"consumerGroup":"G","mode":"POP","popShareQueueNum":1,"topic":"T"}'
    query = QueryAssignmentRequestBody(
        topic="T", consumer_group="G", client_id="c1", strategy_name="AVG", message_model="CLUSTERING"
    )
    assert query.encode() == (
        b'{"clientId":"c1","consumerGroup":"G","messageModel":"CLUSTERING","strategyName":"AVG","topic":"T"}'
    )
    answer = QueryAssignmentResponseBody(
        [MessageQueueAssignment(message_queue=MessageQueue("T", "broker-a", -1), mode="POP")]
    )
    assert answer.encode() == (
        b'{"messageQueueAssignments":[{"messageQueue":{"brokerName":"broker-a","queueId":-1,"topic":"T"},'
        b'"mode":"POP"}]}'
    )


def test_extra_info_as_java_builds_and_reads_it() -> None:
    text = ei.build_extra_info(5, 1700000000000, 60000, 3, "%RETRY%G+T", "broker-a", 0, 9)
    assert text == "5 1700000000000 60000 3 2 broker-a 0 9"
    info = ei.parse_extra_info(text)
    assert info == ei.ExtraInfo(5, 1700000000000, 60000, 3, "2", "broker-a", 0, 9)
    assert info.real_topic("T", "G") == "%RETRY%G+T"
    assert ei.parse_extra_info("1 2 3 999 1 b").is_order()
    assert ei.build_extra_info(1, 2, 3, 4, "%RETRY%G_T", "b", 0) == "1 2 3 4 1 b 0"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "1 2 3 4 0",
        "x 2 3 4 0 b 0 1",
        "1 2 3 99999999999 0 b 0 1",
        "1 2 3 4 0 b q",
        "1 2 3 4 0 b 0 ９",
        "1 2 3 4 0 b 0 99999999999999999999",
        "1 2 3 4 0 b 0 -",
    ],
)
def test_garbage_extra_info_raises_codec_error(bad: str) -> None:
    with pytest.raises(CodecError):
        ei.parse_extra_info(bad)


@given(st.text(max_size=60))
def test_any_text_parses_or_raises_codec_error(text: str) -> None:
    with contextlib.suppress(CodecError):
        ei.parse_extra_info(text)


def test_offset_info_strings() -> None:
    start = ei.join_entries([ei.start_offset_entry("%RETRY%G_T", 0, 3), ei.start_offset_entry("T", 2, 10)])
    msgs = ei.join_entries(
        [ei.msg_offset_entry("%RETRY%G_T", 0, [3]), ei.msg_offset_entry("T", 2, [10, 11, 14])]
    )
    assert start == "1 0 3;0 2 10"
    assert msgs == "1 0 3;0 2 10,11,14"
    assert ei.parse_start_offset_info(start) == {"1@0": 3, "0@2": 10}
    assert ei.parse_msg_offset_info(msgs) == {"1@0": [3], "0@2": [10, 11, 14]}
    counts = ei.join_entries(
        [ei.offset_order_count_entry("T", 1, 7, 2), ei.queue_order_count_entry("T", 1, 0)]
    )
    assert counts == "0 qo1%7 2;0 1 0"
    assert ei.parse_order_count_info(counts) == {"0@qo1%7": 2, "0@1": 0}
    with pytest.raises(CodecError):
        ei.parse_start_offset_info("0 1 2;0 1 3")
    with pytest.raises(CodecError):
        ei.parse_msg_offset_info("0 1")


def test_retry_topic_names() -> None:
    assert ei.build_pop_retry_topic("T", "G") == "%RETRY%G_T"
    assert ei.build_pop_retry_topic("T", "G", v2=True) == "%RETRY%G+T"
    assert ei.parse_normal_topic("%RETRY%G_T_x", "G") == "T_x"
    assert ei.parse_normal_topic("%RETRY%G+T", "G") == "T"
    assert ei.retry_flag("%RETRY%G_T") == "1"
    with pytest.raises(CodecError):
        ei.real_topic("T", "G", "7")


def test_pop_headers() -> None:
    ext = {
        "consumerGroup": "G",
        "topic": "T",
        "queueId": "-1",
        "maxMsgNums": "32",
        "invisibleTime": "60000",
        "pollTime": "15000",
        "bornTime": "1000",
        "initMode": "1",
        "order": "false",
        "bname": "broker-a",
    }
    header = PopMessageRequestHeader.from_ext_fields(ext)
    assert (header.queue_id, header.is_order(), header.born_time) == (-1, False, 1000)
    assert header.is_timeout_too_much(1000 + 15000 + 501)
    assert not header.is_timeout_too_much(1000 + 15000 + 500)
    assert header.to_ext_fields() == ext
    with pytest.raises(HeaderError):
        AckMessageRequestHeader.from_ext_fields(
            {"consumerGroup": "G", "topic": "T", "queueId": "0", "offset": "1"}
        )
    resp = PopMessageResponseHeader(1, 2, 3, 4, "0 1 2", "0 1 2")
    assert resp.to_ext_fields()["startOffsetInfo"] == "0 1 2"
