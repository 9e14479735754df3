"""``brokerVersion``: each difference between 5.3.3 and 5.5.0 on both settings, without sockets
(:mod:`broker.followed_version`; compat_tests/test_rocketmq55_compat.py compares the 5.5.0 setting
with the real 5.5.0 broker)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from broker.app import Broker, BrokerApp
from broker.config import BrokerConfig
from broker.followed_version import followed_version
from broker.processors.broker_status import BrokerStatusProcessor, java_defaults
from broker.topic_attributes import requested_attributes
from broker.topic_config_manager import TopicConfigManager
from codec.bodies.register import TopicConfig
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.frame import FrameDecoder, encode_frame
from codec.java_properties import parse_properties
from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection
from gateway.transport.dispatch import ConnectionInfo, Dispatcher, RequestContext
from tests.helpers import broker_config

V5_3_3, V5_5_0 = 479, 513  # MQVersion.Version ordinals
ROCKSDB_TOPICS = {"RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC", "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC"}
# What each real broker answers to updateTopic -a +message.type=BAD (EnumAttribute.verify).
REFUSAL = {
    "5.3.3": "value is not in set: [UNSPECIFIED, TRANSACTION, FIFO, MIXED, DELAY, NORMAL]",
    "5.5.0": "value is not in set: [UNSPECIFIED, MIXED, TRANSACTION, PRIORITY, FIFO, DELAY, LITE, NORMAL]",
}
BOTH = ("5.3.3", "5.5.0")


def config_of(version: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"brokerVersion": version})


def test_the_setting_defaults_to_5_3_3_and_refuses_other_releases() -> None:
    assert BrokerConfig.from_properties({}).followed.name == "5.3.3"
    assert config_of(" 5.5.0").followed.mq_version == V5_5_0
    assert followed_version("5.3.3").mq_version == V5_3_3
    with pytest.raises(ValueError, match=r"brokerVersion: '5\.4\.0' is not one of 5\.3\.3, 5\.5\.0"):
        config_of("5.4.0")


@pytest.mark.parametrize("version", BOTH)
def test_system_topics_created_at_start(version: str) -> None:
    topics = TopicConfigManager(config_of(version))
    created = ROCKSDB_TOPICS & set(topics.table)
    if version == "5.3.3":
        assert created == set()
        assert not any(topics.is_not_allowed_send(t) for t in ROCKSDB_TOPICS)
        return
    assert created == ROCKSDB_TOPICS
    for name in ROCKSDB_TOPICS:
        topic = topics.table[name]
        assert (topic.read_queue_nums, topic.write_queue_nums, topic.perm) == (1, 1, 6)
        assert topics.is_system(name)
        assert topics.is_not_allowed_send(name)
    assert len(topics.table) == len(TopicConfigManager(config_of("5.3.3")).table) + 2


@pytest.mark.parametrize("version", BOTH)
def test_message_type_refusal_lists_the_releases_types(version: str) -> None:
    types = config_of(version).followed.message_types
    with pytest.raises(RocketMQError) as refused:
        requested_attributes("+message.type=BAD", None, types)
    assert str(refused.value) == REFUSAL[version]
    existing = TopicConfig("T", 4, 4)
    assert requested_attributes("+message.type=PRIORITY", existing, types) == {"message.type": "PRIORITY"}
    assert requested_attributes("+message.type=LITE", None, types) == {"message.type": "LITE"}


@pytest.mark.parametrize("version", BOTH)
def test_pop_walks_the_queues_from_its_random_start(version: str) -> None:
    order = config_of(version).followed.pop_queue_order
    if version == "5.3.3":
        assert order(4, 0) == [0, 1, 2, 3]
        assert order(4, 6) == [2, 3, 0, 1]
    else:
        assert order(4, 0) == [3, 2, 1, 0]
        assert order(4, 6) == [1, 0, 3, 2]
    for start in range(100):
        assert sorted(order(3, start)) == [0, 1, 2]


@pytest.mark.parametrize("version", BOTH)
def test_broker_config_and_runtime_info(tmp_path: Path, version: str) -> None:
    config = broker_config(tmp_path, broker_version=version)
    broker = Broker(config, ServerConfig(), [], trio.Event())
    try:
        status = BrokerStatusProcessor(broker.controller, broker.stats)
        props = status.config_properties()
        info = status.runtime_info()
    finally:
        broker.store.close()
    base = set(java_defaults())
    assert "brokerVersion" not in props
    if version == "5.3.3":
        assert set(props) == base
        assert props["transactionMetricFlushInterval"] == "3000"
        assert (info["brokerVersion"], info["brokerVersionDesc"]) == (str(V5_3_3), "V5_3_3")
        return
    added = set(props) - base
    assert base <= set(props)
    assert len(added) == 76
    assert {"priorityOrderAsc", "timerRocksDBEnable", "transRocksDBEnable", "enableLiteEventMode"} <= added
    assert (props["priorityOrderAsc"], props["minLiteTTl"], props["splitMetadataSize"]) == (
        "true",
        "900000",
        "2000",
    )
    assert props["transactionMetricFlushInterval"] == "10000"
    assert info["brokerVersionDesc"] == "V5_5_0"
    assert "brokerVersion" not in info


def test_update_broker_config_leaves_the_release_for_the_next_start(tmp_path: Path) -> None:
    """``brokerVersion`` is read at start (the topics depend on it): an update is persisted only."""
    config = broker_config(tmp_path, broker_version="5.5.0")
    broker = Broker(config, ServerConfig(), [], trio.Event())
    try:
        status = BrokerStatusProcessor(broker.controller, broker.stats)
        ctx = RequestContext(ConnectionInfo(1, "127.0.0.1:1", "127.0.0.1:2"))
        request = RemotingCommand(
            RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerVersion=5.3.3\ndefaultQueryMaxNum=16\n"
        )
        response = status.update_broker_config(ctx, request, None)
    finally:
        broker.store.close()
    assert response.code == ResponseCode.SUCCESS
    assert (config.broker_version, config.default_query_max_num) == ("5.5.0", 16)
    persisted = parse_properties((tmp_path / "store" / "config" / "broker.properties").read_text())
    assert persisted["brokerVersion"] == "5.3.3"


@pytest.mark.parametrize("version", BOTH)
def test_every_command_the_broker_writes_carries_its_version(version: str) -> None:
    app = BrokerApp(config_of(version))
    assert app.server_config.command_version == followed_version(version).mq_version


@pytest.mark.parametrize("command_version", [None, V5_5_0])
async def test_a_connection_stamps_its_version_on_answers_and_requests(command_version: int | None) -> None:
    def answer(_ctx: RequestContext, request: RemotingCommand, _header: object) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS)

    dispatcher = Dispatcher("test")
    dispatcher.register(RequestCode.GET_BROKER_CONFIG, answer, None)
    ours, peer = trio.testing.memory_stream_pair()
    conn = Connection(ours, 1, dispatcher, ServerConfig(command_version=command_version))
    decoder = FrameDecoder(1 << 20)
    frames: list[RemotingCommand] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.serve)
        await peer.send_all(
            encode_frame(RemotingCommand(RequestCode.GET_BROKER_CONFIG, version=V5_3_3, opaque=7))
        )
        await conn.invoke_oneway(RemotingCommand.request(RequestCode.HEART_BEAT))
        with trio.fail_after(5):
            while len(frames) < 2:
                frames += decoder.feed(await peer.receive_some())
        conn.close()
    expected = V5_3_3 if command_version is None else command_version
    assert sorted((f.is_response, f.version) for f in frames) == [(False, expected), (True, expected)]
