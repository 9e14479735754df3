"""Lite topic names, checks and the subscription registry (broker/lite.py), without sockets."""

from __future__ import annotations

from pathlib import Path

from broker.lite import (
    LiteSubscriptionRegistry,
    lite_bind_topic,
    lite_sub_client_quota,
    lite_topic_problem,
    quota_problem,
    split_lmq_name,
    to_lmq_name,
)
from broker.topic_config_manager import TopicConfigManager
from codec.bodies.register import TopicConfig
from tests.helpers import broker_config


def test_lmq_names_round_trip_and_reject_other_names() -> None:
    assert to_lmq_name("Chats", "room-1") == "%LMQ%$Chats$room-1"
    assert split_lmq_name("%LMQ%$Chats$room-1") == ("Chats", "room-1")
    for name in ("Chats", "%LMQ%Chats", "%LMQ%$Chats", "%LMQ%$Chats$", "%LMQ%$$a", "%LMQ%$a$b$c"):
        assert split_lmq_name(name) is None, name


def test_lite_topic_checks_mirror_validate_lite_topic() -> None:
    assert lite_topic_problem("room_1-A") is None
    assert lite_topic_problem("x" * 64) is None
    assert lite_topic_problem("x" * 65) == "lite topic exceed the max size 64"
    assert lite_topic_problem(" \t") == "lite topic cannot be the char sequence of whitespace"
    assert lite_topic_problem("é") == (
        "lite topic can only contain alphanumeric characters, hyphens(-), and underscores(_)"
    )


def test_group_attributes_under_plain_and_plus_names() -> None:
    assert lite_bind_topic({"+lite.bind.topic": "Chats"}) == "Chats"
    assert lite_bind_topic({"lite.bind.topic": "Chats"}) == "Chats"
    assert lite_bind_topic({}) is None
    assert lite_sub_client_quota({}) == 2000
    assert lite_sub_client_quota({"+lite.sub.client.quota": "3"}) == 3
    assert lite_sub_client_quota({"lite.sub.client.quota": "many"}) == 2000


def test_quota_allows_the_proxys_buffer_of_300() -> None:
    assert quota_problem(301, 1) is None
    assert quota_problem(302, 1) == "lite subscription quota exceeded: 1"


def test_registry_actions() -> None:
    registry = LiteSubscriptionRegistry()
    registry.add_partial("c1", "G", "Chats", ["a", "b"])
    registry.add_partial("c2", "G", "Chats", ["a"])
    assert registry.lmq_names_of("c1") == [to_lmq_name("Chats", "a"), to_lmq_name("Chats", "b")]
    assert registry.subscribers_of(to_lmq_name("Chats", "a")) == {("c1", "G"), ("c2", "G")}
    assert registry.remove_partial("c1", "G", "Chats", ["a", "zzz"]) == {to_lmq_name("Chats", "a")}
    assert registry.subscribers_of(to_lmq_name("Chats", "a")) == {("c2", "G")}
    assert registry.add_complete("c1", "G", "Chats", ["c"]) == {to_lmq_name("Chats", "b")}
    assert registry.lmq_names_of("c1") == [to_lmq_name("Chats", "c")]
    assert registry.subscribers_of(to_lmq_name("Chats", "b")) == set()
    # A client's other topic replaces its subscription.
    registry.add_partial("c1", "G", "Other", ["x"])
    assert registry.lmq_names_of("c1") == [to_lmq_name("Other", "x")]
    assert registry.subscribers_of(to_lmq_name("Chats", "c")) == set()
    registry.remove_complete("c1")
    registry.remove_complete("nobody")
    assert registry.lmq_names_of("c1") == []
    assert registry.statistics() == {"clients": 1, "subscriptions": 1, "lite_topics": 1}


def test_lite_queues_have_one_queue_only_under_a_lite_parent(tmp_path: Path) -> None:
    topics = TopicConfigManager(broker_config(tmp_path))
    topics.update(TopicConfig("Chats", 4, 4, 6, attributes={"+message.type": "LITE"}))
    topics.update(TopicConfig("Plain", 4, 4, 6))
    queue = topics.select(to_lmq_name("Chats", "a"))
    assert queue is not None
    assert (queue.topic_name, queue.read_queue_nums, queue.write_queue_nums) == ("%LMQ%$Chats$a", 1, 1)
    assert topics.select(to_lmq_name("Plain", "a")) is None
    assert topics.select(to_lmq_name("Missing", "a")) is None
    assert to_lmq_name("Chats", "a") not in topics.table
