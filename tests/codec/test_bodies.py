"""JSON bodies and fastjson compatibility."""

from __future__ import annotations

import contextlib
import zlib

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codec import fastjson
from codec.bodies.heartbeat import HeartbeatData, SubscriptionData
from codec.bodies.lock import LockBatchRequestBody, LockBatchResponseBody, MessageQueue
from codec.bodies.register import DataVersion, RegisterBrokerBody, TopicConfig
from codec.bodies.route import BrokerData, ClusterInfo, KVTable, QueueData, TopicRouteData
from codec.errors import BodyError

ROUTE_STANDARD = (
    b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster",'
    b'"enableActingMaster":false}],"filterServerTable":{},'
    b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)


def test_route_standard_and_fastjson_default_forms_read_the_same() -> None:
    standard = TopicRouteData.decode(ROUTE_STANDARD)
    legacy = TopicRouteData.decode(ROUTE_STANDARD.replace(b'{"0":', b"{0:"))
    assert standard == legacy
    assert standard.broker_datas[0].master_addr() == "10.0.0.1:10911"
    assert standard.queue_datas == [QueueData("broker-a", 4, 4, 6, 0)]


def test_route_writes_quoted_integer_keys() -> None:
    route = TopicRouteData(broker_datas=[BrokerData("c", "b", {0: "127.0.0.1:10911", 1: "127.0.0.1:10921"})])
    obj = orjson.loads(route.encode())
    assert obj["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911", "1": "127.0.0.1:10921"}
    assert "orderTopicConf" not in obj  # None fields are left out, as fastjson does


def test_cluster_info_from_java_default_encoding() -> None:
    raw = (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )
    info = ClusterInfo.decode(raw)
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: "127.0.0.1:10911"}


def test_heartbeat_example_from_spec() -> None:
    raw = (
        b'{"clientID":"10.0.0.5@12345#2012345678","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
        b'"consumeType":"CONSUME_PASSIVELY","groupName":"cg1","messageModel":"CLUSTERING","subscriptionDataSet":['
        b'{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1700000000000,'
        b'"tagsSet":[],"topic":"TopicTest"}],"unitMode":false}],"heartbeatFingerprint":0,'
        b'"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}],"withoutSub":false}'
    )
    hb = HeartbeatData.decode(raw)
    assert hb.client_id == "10.0.0.5@12345#2012345678"
    (consumer,) = hb.consumer_data_set
    assert consumer.group_name == "cg1"
    assert consumer.subscription_data_set[0].sub_version == 1700000000000
    assert HeartbeatData.decode(hb.encode()) == hb


def test_subscription_build_hashes_tags_like_java() -> None:
    sub = SubscriptionData.build("T", " TagA || TagB ")
    assert sub.tags_set == ["TagA", "TagB"]
    assert sub.code_set == [2598919, 2598920]
    assert SubscriptionData.build("T", "*").code_set == []


def test_lock_bodies() -> None:
    req = LockBatchRequestBody(
        consumer_group="g",
        client_id="c",
        mq_set=[MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)],
    )
    assert orjson.loads(req.encode())["mqSet"][1] == {"topic": "T", "brokerName": "broker-a", "queueId": 1}
    resp = LockBatchResponseBody(lock_ok_mq_set=req.mq_set[:1])
    assert b'"lockOKMQSet"' in resp.encode()
    assert LockBatchResponseBody.decode(resp.encode()) == resp
    assert len({MessageQueue("T", "b", 0), MessageQueue("T", "b", 0)}) == 1


def _register_body() -> RegisterBrokerBody:
    body = RegisterBrokerBody()
    wrapper = body.topic_config_serialize_wrapper
    wrapper.data_version = DataVersion(0, 1700000000000, 3)
    wrapper.topic_config_table["TopicTest"] = TopicConfig(
        "TopicTest", 4, 4, 6, attributes={"+message.type": "NORMAL"}
    )
    wrapper.topic_config_table["%RETRY%g"] = TopicConfig("%RETRY%g", 1, 1, 6)
    return body


def test_register_body_plain_round_trip() -> None:
    body = _register_body()
    assert RegisterBrokerBody.decode(body.encode()) == body


def test_register_body_compressed_round_trip() -> None:
    body = _register_body()
    decoded = RegisterBrokerBody.decode_compressed(body.encode_compressed(), broker_version=479)
    assert (
        decoded.topic_config_serialize_wrapper.topic_config_table
        == body.topic_config_serialize_wrapper.topic_config_table
    )
    assert decoded.topic_config_serialize_wrapper.data_version == DataVersion(0, 1700000000000, 3)
    old = RegisterBrokerBody.decode_compressed(
        zlib.compress(zlib.decompress(body.encode_compressed())[:-4]), broker_version=409
    )
    assert old.topic_config_serialize_wrapper.topic_queue_mapping_info_map is None


@pytest.mark.parametrize("bad", [b"", b"not zlib", zlib.compress(b"\x00\x00\x00\x10{}")])
def test_register_body_compressed_garbage(bad: bytes) -> None:
    with pytest.raises(BodyError):
        RegisterBrokerBody.decode_compressed(bad, broker_version=479)


def test_topic_config_text_form() -> None:
    config = TopicConfig("T", 8, 4, 6, "MULTI_TAG", attributes={"k": "v"})
    assert config.encode_text() == 'T 8 4 6 MULTI_TAG {"k":"v"}'
    assert TopicConfig.decode_text(config.encode_text()) == config


def test_wrong_shapes_are_body_errors() -> None:
    with pytest.raises(BodyError):
        TopicRouteData.decode(b'{"brokerDatas":{"a":1}}')
    with pytest.raises(BodyError):
        KVTable.decode(b"[1,2]")
    with pytest.raises(BodyError):
        QueueData.decode(b'{"perm":"six"}')


def test_object_keys_written_and_read_fastjson_style() -> None:
    raw = fastjson.dumps_object_keys([({"brokerName": "b", "queueId": 0, "topic": "t"}, {"maxOffset": 5})])
    assert raw == b'{{"brokerName":"b","queueId":0,"topic":"t"}:{"maxOffset":5}}'
    parsed = fastjson.loads(raw)
    ((key, value),) = parsed.items()
    assert orjson.loads(key) == {"brokerName": "b", "queueId": 0, "topic": "t"}
    assert value == {"maxOffset": 5}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b'{0:"a",1:"b"}', {"0": "a", "1": "b"}),
        (b'{"offsetTable":{"T@g":{0:5,1:7}}}', {"offsetTable": {"T@g": {"0": 5, "1": 7}}}),
        (b"{-1:true}", {"-1": True}),
        (b' {"a" : [ 1 , 2.5 , null ] } ', {"a": [1, 2.5, None]}),
        ('{0:"中文\\"q"}'.encode(), {"0": '中文"q'}),
        (b'{"big":9223372036854775807}', {"big": 9223372036854775807}),
    ],
)
def test_lenient_parser(text: bytes, expected: object) -> None:
    assert fastjson.loads(text) == expected


@given(st.text(max_size=60))
def test_lenient_parser_raises_only_body_errors(text: str) -> None:
    with contextlib.suppress(BodyError):
        fastjson.loads(text)


@pytest.mark.parametrize("bad", [b"{0:}", b"{", b'{"a":1', b"[1,]x", b"{0:1}}", b"\xff"])
def test_lenient_parser_rejects_garbage(bad: bytes) -> None:
    with pytest.raises(BodyError):
        fastjson.loads(bad)
