"""Topic attributes (``TopicAttributes`` / ``AttributeParser`` / ``AttributeUtil``) and the topics
a broker creates at start, through an in-process broker's wire protocol. The same checks against
the real 5.3.3 broker are in compat_tests/test_topic_fidelity_compat.py."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from broker.config import BrokerConfig
from broker.topic_attributes import java_hash_set_text, parse_modification, requested_attributes
from broker.topic_config_manager import TopicConfigManager
from codec import fastjson
from codec.bodies.register import TopicConfig
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from gateway.transport.connection import Connection
from tests.broker.helpers import running_broker

MESSAGE_TYPES = "[UNSPECIFIED, TRANSACTION, FIFO, MIXED, DELAY, NORMAL]"


def create(topic: str, attributes: str | None = None) -> RemotingCommand:
    ext = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": "4",
        "writeQueueNums": "4",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
    }
    if attributes is not None:
        ext["attributes"] = attributes
    return RemotingCommand(code=RequestCode.UPDATE_AND_CREATE_TOPIC, ext_fields=ext)


async def topic_config(conn: Connection, topic: str) -> dict[str, Any]:
    request = RemotingCommand(code=RequestCode.GET_TOPIC_CONFIG, ext_fields={"topic": topic})
    response = await conn.invoke(request, 3)
    assert response.code == ResponseCode.SUCCESS, response.remark
    doc: dict[str, Any] = json.loads(response.body)
    return doc


def test_java_hash_set_order_of_the_enum_universes() -> None:
    """The order ``value is not in set`` prints, as Java's HashSet iterates."""
    assert (
        java_hash_set_text(("UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"))
        == MESSAGE_TYPES
    )
    assert java_hash_set_text(("BatchCQ", "SimpleCQ")) == "[SimpleCQ, BatchCQ]"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("message.type=FIFO", "add/alter attribute format is wrong: message.type"),
        ("message.type", "delete attribute format is wrong: message.type"),
        ("+a=1,+a=2", "key duplication: +a"),
        ("+a=", "Index 1 out of bounds for length 1"),
    ],
)
def test_malformed_modifications_are_refused_with_javas_message(text: str, message: str) -> None:
    with pytest.raises(RocketMQError, match=f"^{re.escape(message)}$"):
        parse_modification(text)


def test_update_adds_changes_and_deletes_changeable_attributes_only() -> None:
    assert parse_modification("+message.type=FIFO,-reserve.time") == {
        "+message.type": "FIFO",
        "-reserve.time": "",
    }
    assert requested_attributes("+reserve.time=10", None) == {"reserve.time": "10"}
    with pytest.raises(RocketMQError, match=r"^value is not in range\(-1, 9223372036854775807\)$"):
        requested_attributes("+reserve.time=-2", None)
    with pytest.raises(RocketMQError, match=r"^attempt to delete a nonexistent key: message\.type$"):
        requested_attributes("-message.type", _existing({}))
    with pytest.raises(RocketMQError, match=r"^attempt to update an unchangeable attribute\. key: queue"):
        requested_attributes("+queue.type=SimpleCQ", _existing({"message.type": "FIFO"}))
    assert requested_attributes("+message.type=DELAY", _existing({"message.type": "FIFO"})) == {
        "message.type": "DELAY"
    }
    assert requested_attributes("-message.type", _existing({"message.type": "FIFO"})) == {}


def test_batch_queue_and_compaction_are_refused_naming_the_value() -> None:
    with pytest.raises(RocketMQError, match=r"^queue\.type=BatchCQ is not supported by this broker"):
        requested_attributes("+queue.type=BatchCQ", None)
    with pytest.raises(RocketMQError, match=r"^cleanup\.policy=COMPACTION is not supported by this broker"):
        requested_attributes("+cleanup.policy=COMPACTION", None)
    assert requested_attributes("+queue.type=SimpleCQ,+cleanup.policy=DELETE", None) == {
        "queue.type": "SimpleCQ",
        "cleanup.policy": "DELETE",
    }


def _existing(attributes: dict[str, str]) -> TopicConfig:
    return TopicConfig("T", 4, 4, 6, attributes=attributes)


async def test_attributes_round_trip_refusals_and_restart(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (app, conn):
        assert (await conn.invoke(create("AttrT", "+message.type=FIFO"), 3)).code == ResponseCode.SUCCESS
        assert (await topic_config(conn, "AttrT"))["attributes"] == {"message.type": "FIFO"}
        all_topics = await conn.invoke(RemotingCommand(code=RequestCode.GET_ALL_TOPIC_CONFIG), 3)
        table = json.loads(all_topics.body)["topicConfigTable"]
        assert table["AttrT"]["attributes"] == {"message.type": "FIFO"}
        # An update without attributes keeps them (AttributeUtil merges into the current map).
        assert (await conn.invoke(create("AttrT"), 3)).code == ResponseCode.SUCCESS
        assert (await topic_config(conn, "AttrT"))["attributes"] == {"message.type": "FIFO"}
        refusals = {
            "+foo=bar": "unsupported key: foo",
            "+message.type=XYZ": f"value is not in set: {MESSAGE_TYPES}",
            "-message.type": "only add attribute is supported while creating topic. key: message.type",
        }
        for text, remark in refusals.items():
            response = await conn.invoke(create("AttrNew", text), 3)
            assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, remark)
        response = await conn.invoke(create("AttrT", "+queue.type=SimpleCQ"), 3)
        assert (response.code, response.remark) == (
            ResponseCode.SYSTEM_ERROR,
            "attempt to update an unchangeable attribute. key: queue.type",
        )
        response = await conn.invoke(create("AttrNew", "+message.type=MIXED"), 3)
        assert (response.code, response.remark) == (
            ResponseCode.INVALID_PARAMETER,
            "MIXED message type is not supported.",
        )
        assert app.controller.topics.select("AttrNew") is None
        body = {"topicConfigList": [{"topicName": "AttrL", "attributes": {"+message.type": "DELAY"}}]}
        request = RemotingCommand(code=RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=fastjson.dumps(body))
        assert (await conn.invoke(request, 3)).code == ResponseCode.SUCCESS
        assert (await topic_config(conn, "AttrL"))["attributes"] == {"message.type": "DELAY"}
    stored = json.loads((tmp_path / "store" / "config" / "topics.json").read_text())["topicConfigTable"]
    assert stored["AttrT"]["attributes"] == {"message.type": "FIFO"}
    async with running_broker(tmp_path) as (_app, conn):
        assert (await topic_config(conn, "AttrT"))["attributes"] == {"message.type": "FIFO"}


async def test_start_up_topics_are_system_topics_refused_to_clients(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (app, conn):
        response = await conn.invoke(RemotingCommand(code=RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER), 3)
        listed = set(json.loads(response.body)["topicList"])
        config = app.controller.config
        reply = f"{config.broker_cluster_name}_REPLY_TOPIC"
        assert {reply, config.broker_cluster_name, config.broker_name, "CHECKPOINT_TOPIC"} <= listed
        for request in (
            create(reply),
            RemotingCommand(code=RequestCode.DELETE_TOPIC_IN_BROKER, ext_fields={"topic": reply}),
        ):
            response = await conn.invoke(request, 3)
            assert (response.code, response.remark) == (
                ResponseCode.INVALID_PARAMETER,
                f"The topic[{reply}] is conflict with system topic.",
            )
        assert app.controller.topics.select(reply) is not None


def test_a_stored_batch_queue_topic_is_kept_as_written_with_an_error_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A topics.json of the Java broker may hold a BatchCQ topic: it is neither dropped (the file
    keeps it when rewritten) nor taken silently."""
    manager = TopicConfigManager(BrokerConfig())
    entry = {"topicName": "Batchy", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}
    entry["attributes"] = {"queue.type": "BatchCQ"}
    with caplog.at_level(logging.ERROR):
        manager.load_obj({"topicConfigTable": {"Batchy": entry}})
    assert manager.to_obj()["topicConfigTable"]["Batchy"]["attributes"] == {"queue.type": "BatchCQ"}
    assert "queue.type=BatchCQ" in caplog.text
