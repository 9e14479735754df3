"""The limits and life of lite topics, on a broker assembled in-process, without sockets: the LMQ
quota of sends (remoting 2017, gRPC 42901), the broker-wide subscription limit (remoting 2018,
gRPC 42902), the offset option of SyncLiteSubscription / LITE_SUBSCRIPTION_CTL, and lite topic
expiry under a fake clock (``LiteLifecycleManager``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from broker.app import Broker
from broker.config import BrokerConfig
from broker.grpc.common import ClientContext, StatusError, status_of
from broker.grpc.lite import LiteActivity
from broker.grpc.send import SendActivity
from broker.lite import (
    OFFSET_OFFSET,
    OFFSET_POLICY,
    OFFSET_TAIL_N,
    OFFSET_TIMESTAMP,
    POLICY_LAST,
    POLICY_MAX,
    POLICY_MIN,
    OffsetOption,
    to_lmq_name,
)
from broker.lite_lifecycle import LiteLifecycleManager
from broker.service.send_values import SendRefused
from broker.subscription_group_manager import SubscriptionGroupConfig
from codec import fastjson
from codec.bodies.register import TopicConfig
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.admin import TopicRequestHeader
from codec.headers.base import EmptyHeader
from codec.message import MessageRecord
from gateway.transport.config import ServerConfig
from gateway.transport.dispatch import ConnectionInfo, RequestContext
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.helpers import send_request
from tests.helpers import broker_config

PARENT = "Chats"
GROUP = "ChatReaders"
MINUTE = 60_000
LMQ_REMARK = "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]lmq consume queue num exceeded."
SUB_QUOTA = "org.apache.rocketmq.broker.lite.LiteQuotaException: lite subscription quota exceeded {}"


class Clock:
    """The broker's clock: the wall clock (which stamps stored messages) moved on by ``ahead``."""

    def __init__(self) -> None:
        self.ahead = 0

    def __call__(self) -> int:
        return int(time.time() * 1000) + self.ahead


@contextmanager
def lite_broker(root: Path, ttl_minutes: int | None = None, **config: Any) -> Iterator[Broker]:
    """A broker (store open, no sockets) with the LITE topic Chats and the group ChatReaders
    bound to it; ``config``: broker.conf keys."""
    props = broker_config(root).to_properties()
    props.update({key: str(value) for key, value in config.items()})
    broker = Broker(BrokerConfig.from_properties(props), ServerConfig(port=0), [], trio.Event())
    broker.store.open()
    try:
        attributes = {"message.type": "LITE"}
        if ttl_minutes is not None:
            attributes["lite.topic.expiration"] = str(ttl_minutes)
        broker.controller.topics.update(TopicConfig(PARENT, 4, 4, 6, attributes=attributes))
        broker.controller.groups.update(
            SubscriptionGroupConfig(GROUP, attributes={"lite.bind.topic": PARENT})
        )
        yield broker
    finally:
        broker.store.close()


def put(broker: Broker, lite: str, count: int = 1) -> None:
    for index in range(count):
        record = MessageRecord(topic=to_lmq_name(PARENT, lite), queue_id=0, body=b"m%d" % index)
        assert broker.store.put_message(record).ok


def ctx(client_id: str = "client-1") -> ClientContext:
    return ClientContext(client_id, "127.0.0.1:50000", "PYTHON", "5.1.2", {})


def sync_request(
    action: int, *lite_topics: str, option: pb.OffsetOption | None = None
) -> pb.SyncLiteSubscriptionRequest:
    request = pb.SyncLiteSubscriptionRequest(
        action=action,  # type: ignore[arg-type]
        topic=pb.Resource(name=PARENT),
        group=pb.Resource(name=GROUP),
        lite_topic_set=lite_topics,
    )
    if option is not None:
        request.offset_option.CopyFrom(option)
    return request


def lite_activity(broker: Broker) -> LiteActivity:
    services = broker.services
    return LiteActivity(broker.controller, services.consume, services.lite, services.lite_lifecycle)


def ctl(**entry: Any) -> RemotingCommand:
    entry = {"clientId": "proxy-client", "group": GROUP, "topic": PARENT, "version": 1, **entry}
    body = fastjson.dumps({"subscriptionSet": [entry]})
    return RemotingCommand.request(RequestCode.LITE_SUBSCRIPTION_CTL, EmptyHeader(), body=body)


async def dispatch(broker: Broker, request: RemotingCommand) -> RemotingCommand:
    context = RequestContext(ConnectionInfo(1, "127.0.0.1:50000", "127.0.0.1:10911"))
    response = await broker.dispatcher.dispatch(context, request)
    assert response is not None
    return response


def lite_send(lite: str) -> pb.SendMessageRequest:
    sent = pb.Message(topic=pb.Resource(name=PARENT), body=b"x")
    sent.system_properties.message_id = "0A" * 16
    sent.system_properties.message_type = pb.LITE
    sent.system_properties.lite_topic = lite
    return pb.SendMessageRequest(messages=[sent])


# -- the LMQ quota of sends ----------------------------------------------------------------------


async def test_a_new_lite_topic_past_the_lmq_quota_is_refused_on_both_doors(tmp_path: Path) -> None:
    with lite_broker(tmp_path, enableLmqQuota="true", maxLmqConsumeQueueNum=2) as broker:
        put(broker, "a")
        put(broker, "b")
        refused = await dispatch(broker, send_request(PARENT, b"x", {"__LITE_TOPIC": "c"}, queue_id=-1))
        assert (refused.code, refused.remark) == (ResponseCode.LMQ_QUOTA_EXCEEDED, LMQ_REMARK)
        # An existing lite topic still takes messages.
        taken = await dispatch(broker, send_request(PARENT, b"x", {"__LITE_TOPIC": "a"}, queue_id=-1))
        assert taken.code == ResponseCode.SUCCESS
        assert broker.store.get_max_offset_in_queue(to_lmq_name(PARENT, "a"), 0) == 2
        sends = SendActivity(broker.controller, service=broker.services.send)
        with pytest.raises(SendRefused) as caught:
            await sends.send_message(ctx(), lite_send("c"))
        assert status_of(caught.value) == pb.Status(code=pb.LITE_TOPIC_QUOTA_EXCEEDED, message=LMQ_REMARK)
        answer = await sends.send_message(ctx(), lite_send("b"))
        assert answer.status.code == pb.OK
        assert broker.store.queues.find(to_lmq_name(PARENT, "c"), 0) is None


async def test_the_lmq_quota_is_off_by_default(tmp_path: Path) -> None:
    with lite_broker(tmp_path, maxLmqConsumeQueueNum=1) as broker:
        put(broker, "a")
        taken = await dispatch(broker, send_request(PARENT, b"x", {"__LITE_TOPIC": "b"}, queue_id=-1))
        assert taken.code == ResponseCode.SUCCESS
        assert broker.store.get_max_offset_in_queue(to_lmq_name(PARENT, "b"), 0) == 1


# -- the broker-wide subscription limit -----------------------------------------------------------


async def test_partial_adds_past_max_lite_subscription_count_are_refused(tmp_path: Path) -> None:
    with lite_broker(tmp_path, maxLiteSubscriptionCount=3) as broker:
        lite = lite_activity(broker)
        lite.sync_lite_subscription(ctx("c1"), sync_request(pb.PARTIAL_ADD, "a", "b"))
        # 2 held, under 3: this one is taken even though it makes 4 (the check is before adding).
        lite.sync_lite_subscription(ctx("c2"), sync_request(pb.PARTIAL_ADD, "a", "b"))
        assert broker.services.lite.active_count() == 4
        with pytest.raises(StatusError) as caught:
            lite.sync_lite_subscription(ctx("c3"), sync_request(pb.PARTIAL_ADD, "z"))
        assert (caught.value.code, caught.value.message) == (
            pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED,
            SUB_QUOTA.format(3),
        )
        refused = await dispatch(broker, ctl(action="PARTIAL_ADD", liteTopicSet=["z"]))
        assert (refused.code, refused.remark) == (
            ResponseCode.LITE_SUBSCRIPTION_QUOTA_EXCEEDED,
            SUB_QUOTA.format(3),
        )
        # COMPLETE_ADD is not limited; a removal makes room again.
        lite.sync_lite_subscription(ctx("c3"), sync_request(pb.COMPLETE_ADD, "z"))
        lite.sync_lite_subscription(ctx("c1"), sync_request(pb.COMPLETE_REMOVE))
        lite.sync_lite_subscription(ctx("c2"), sync_request(pb.PARTIAL_REMOVE, "a"))
        lite.sync_lite_subscription(ctx("c4"), sync_request(pb.PARTIAL_ADD, "y"))
        assert broker.services.lite.lmq_names_of("c4") == [to_lmq_name(PARENT, "y")]
        # mqadmin updateBrokerConfig raises the limit at run time.
        assert broker.services.lite.active_count() == 3
        update = RemotingCommand.request(
            RequestCode.UPDATE_BROKER_CONFIG, EmptyHeader(), body=b"maxLiteSubscriptionCount=4\n"
        )
        assert (await dispatch(broker, update)).code == ResponseCode.SUCCESS
        lite.sync_lite_subscription(ctx("c5"), sync_request(pb.PARTIAL_ADD, "x"))
        assert broker.services.lite.active_count() == 4


# -- the offset option ------------------------------------------------------------------------------


def test_offset_option_targets_as_reset_offset() -> None:
    cases = [
        (OffsetOption(OFFSET_POLICY, POLICY_MIN), 5, 9, 0),
        (OffsetOption(OFFSET_POLICY, POLICY_MAX), 5, 9, 9),
        (OffsetOption(OFFSET_POLICY, POLICY_LAST), 5, 9, None),
        (OffsetOption(OFFSET_POLICY, POLICY_MAX), 9, 9, None),  # already there
        (OffsetOption(OFFSET_OFFSET, 3), -1, 9, 3),
        (OffsetOption(OFFSET_OFFSET, -2), 5, 9, None),  # assignResetOffset ignores it
        (OffsetOption(OFFSET_TAIL_N, 2), 5, 9, 3),
        (OffsetOption(OFFSET_TAIL_N, 8), 5, 9, 0),
        (OffsetOption(OFFSET_TAIL_N, 2), -1, 9, None),  # only from a committed offset
        (OffsetOption(OFFSET_TIMESTAMP, 1_700_000_000_000), 5, 9, None),  # disabled in 5.5.0
    ]
    assert [option.target(current, end) for option, current, end, _ in cases] == [c[3] for c in cases]


async def test_offset_option_of_a_partial_add_moves_the_groups_offset(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        put(broker, "a", 6)
        put(broker, "b", 4)
        offsets = broker.controller.offsets
        lmq_a, lmq_b = to_lmq_name(PARENT, "a"), to_lmq_name(PARENT, "b")
        offsets.commit(GROUP, lmq_a, 0, 5)
        broker.services.consume.orders.update(None, lmq_a, GROUP, 0, 1, 60_000, [4])
        lite = lite_activity(broker)
        maximum = pb.OffsetOption(policy=pb.OffsetOption.MAX)
        lite.sync_lite_subscription(ctx(), sync_request(pb.PARTIAL_ADD, "a", "b", option=maximum))
        assert (offsets.query(GROUP, lmq_a, 0), offsets.query(GROUP, lmq_b, 0)) == (6, 4)
        assert broker.services.consume.orders.get(lmq_a, GROUP, 0) is None
        tail = pb.OffsetOption(tail_n=2)
        lite.sync_lite_subscription(ctx(), sync_request(pb.PARTIAL_ADD, "a", option=tail))
        assert offsets.query(GROUP, lmq_a, 0) == 4
        # Other actions carry no option (the Proxy reads it for PARTIAL_ADD only).
        lite.sync_lite_subscription(ctx(), sync_request(pb.COMPLETE_ADD, "a", "b", option=tail))
        assert offsets.query(GROUP, lmq_a, 0) == 4
        with pytest.raises(StatusError) as caught:
            lite.sync_lite_subscription(ctx(), sync_request(pb.PARTIAL_ADD, "a", option=pb.OffsetOption()))
        assert caught.value.code == pb.INTERNAL_SERVER_ERROR
        assert caught.value.message.startswith(
            "Unknown OffsetOption type: OFFSETTYPE_NOT_SET. IllegalArgumentException."
        )
        taken = await dispatch(
            broker, ctl(action="PARTIAL_ADD", liteTopicSet=["a"], offsetOption={"type": "POLICY", "value": 1})
        )
        assert taken.code == ResponseCode.SUCCESS
        assert offsets.query(GROUP, lmq_a, 0) == 0
        bad = await dispatch(
            broker, ctl(action="PARTIAL_ADD", liteTopicSet=["a"], offsetOption={"type": "X"})
        )
        assert bad.code == ResponseCode.SYSTEM_ERROR


# -- expiry -------------------------------------------------------------------------------------------


def test_a_lite_topic_expires_after_its_ttl_with_its_offsets_and_subscriptions(tmp_path: Path) -> None:
    clock = Clock()
    with lite_broker(tmp_path, ttl_minutes=30) as broker:
        broker.controller.now_ms = broker.store.clock = clock
        registry, consume = broker.services.lite, broker.services.consume
        lifecycle = LiteLifecycleManager(broker.controller, registry, consume.orders, consume.state)
        put(broker, "old", 3)
        put(broker, "new", 1)
        lmq_old, lmq_new = to_lmq_name(PARENT, "old"), to_lmq_name(PARENT, "new")
        broker.controller.offsets.commit(GROUP, lmq_old, 0, 2)
        broker.controller.offsets.commit("OtherGroup", lmq_old, 0, 1)  # not bound to Chats: kept
        registry.add_partial("c1", GROUP, PARENT, ["old", "new"])
        # Within minLiteTTl of the start nothing is checked, and the next look is in 20 s.
        clock.ahead = 31 * MINUTE - 1
        lifecycle.started_ms = clock() - 15 * MINUTE + 1
        assert lifecycle.run_once() == 20_000
        assert broker.store.queues.find(lmq_old, 0) is not None
        clock.ahead = 29 * MINUTE
        lifecycle.started_ms = clock() - 15 * MINUTE
        assert lifecycle.run_once() == 120_000  # liteTtlCheckInterval
        assert lifecycle.collect_expired() == []
        put(broker, "new", 1)  # "new" stays in use
        clock.ahead = 31 * MINUTE
        assert lifecycle.clean_expired() == [lmq_old]
        assert broker.store.queues.find(lmq_old, 0) is None
        assert broker.store.get_max_offset_in_queue(lmq_new, 0) == 2
        assert broker.controller.offsets.query(GROUP, lmq_old, 0) == -1
        assert broker.controller.offsets.query("OtherGroup", lmq_old, 0) == 1
        assert registry.lmq_names_of("c1") == [lmq_new]
        assert registry.subscribers_of(lmq_old) == set()
        # The lite topic comes back with its next message, from offset 0.
        put(broker, "old", 1)
        assert broker.store.get_max_offset_in_queue(lmq_old, 0) == 1


def test_no_expiry_without_a_ttl_or_within_min_lite_ttl(tmp_path: Path) -> None:
    clock = Clock()
    with lite_broker(tmp_path, ttl_minutes=1) as broker:
        broker.controller.now_ms = broker.store.clock = clock
        lifecycle = LiteLifecycleManager(broker.controller, broker.services.lite)
        put(broker, "a")
        clock.ahead = 14 * MINUTE  # past the TTL of 1 minute, but not minLiteTTl (15 minutes)
        assert lifecycle.collect_expired() == []
        clock.ahead = 16 * MINUTE
        assert lifecycle.collect_expired() == [(PARENT, to_lmq_name(PARENT, "a"))]
        for ttl in ("-1", "0"):
            broker.controller.topics.update(
                TopicConfig(
                    PARENT, 4, 4, 6, attributes={"message.type": "LITE", "lite.topic.expiration": ttl}
                )
            )
            clock.ahead = 10_000 * MINUTE
            assert lifecycle.collect_expired() == []


def test_an_empty_lite_queue_goes_after_five_rounds(tmp_path: Path) -> None:
    with lite_broker(tmp_path, ttl_minutes=30) as broker:
        lmq = to_lmq_name(PARENT, "empty")
        broker.store.queues.find_or_create(lmq, 0)
        lifecycle = LiteLifecycleManager(broker.controller, broker.services.lite)
        rounds = [lifecycle.clean_expired() for _ in range(6)]
        assert rounds == [[], [], [], [], [], [lmq]]
        assert broker.store.queues.find(lmq, 0) is None


def test_min_lite_ttl_and_check_interval_are_broker_conf_keys(tmp_path: Path) -> None:
    with lite_broker(tmp_path, minLiteTTl=60_000, liteTtlCheckInterval=5_000) as broker:
        config = broker.config
        assert (config.min_lite_ttl, config.lite_ttl_check_interval) == (60_000, 5_000)
        assert config.to_properties()["minLiteTTl"] == "60000"
        lifecycle = LiteLifecycleManager(broker.controller, broker.services.lite)
        lifecycle.started_ms -= 60_000
        assert lifecycle.run_once() == 5_000


# -- exclusive groups --------------------------------------------------------------------------------


class Session:
    """A client's Telemetry stream: what the server posts on it."""

    def __init__(self) -> None:
        self.posted: list[pb.TelemetryCommand] = []

    def post(self, payload: bytes) -> bool:
        self.posted.append(pb.TelemetryCommand.FromString(payload))
        return True


def test_an_exclusive_group_moves_a_lite_topic_to_its_newest_subscriber(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        attributes = {
            "lite.bind.topic": PARENT,
            "+lite.sub.model": "Exclusive",
            "+lite.sub.reset.offset.exclusive": "true",
        }
        broker.controller.groups.update(SubscriptionGroupConfig(GROUP, attributes=attributes))
        put(broker, "a", 3)
        lmq_a, lmq_b = to_lmq_name(PARENT, "a"), to_lmq_name(PARENT, "b")
        broker.controller.offsets.commit(GROUP, lmq_a, 0, 3)
        sessions = {"c1": Session()}
        services = broker.services
        lite = LiteActivity(
            broker.controller,
            services.consume,
            services.lite,
            services.lite_lifecycle,
            sessions,  # type: ignore[arg-type]
        )
        lite.sync_lite_subscription(ctx("c1"), sync_request(pb.PARTIAL_ADD, "a", "b"))
        lite.sync_lite_subscription(ctx("c2"), sync_request(pb.PARTIAL_ADD, "a"))
        registry = services.lite
        assert (registry.lmq_names_of("c1"), registry.lmq_names_of("c2")) == ([lmq_b], [lmq_a])
        assert registry.subscribers_of(lmq_a) == {("c2", GROUP)}
        assert [c.notify_unsubscribe_lite_command.lite_topic for c in sessions["c1"].posted] == ["a"]
        assert broker.controller.offsets.query(GROUP, lmq_a, 0) == 0  # lite.sub.reset.offset.exclusive
        # c1's last lite topic goes too: c1 is forgotten; c2 was not told anything (no stream).
        lite.sync_lite_subscription(ctx("c2"), sync_request(pb.PARTIAL_ADD, "b"))
        assert "c1" not in registry.by_client
        assert registry.lmq_names_of("c2") == [lmq_a, lmq_b]
        assert registry.active_count() == 2


def test_a_shared_group_keeps_every_subscriber_and_may_reset_on_unsubscribe(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        attributes = {"lite.bind.topic": PARENT, "lite.sub.reset.offset.unsubscribe": "true"}
        broker.controller.groups.update(SubscriptionGroupConfig(GROUP, attributes=attributes))
        put(broker, "a", 3)
        lmq_a = to_lmq_name(PARENT, "a")
        lite = lite_activity(broker)
        lite.sync_lite_subscription(ctx("c1"), sync_request(pb.PARTIAL_ADD, "a"))
        lite.sync_lite_subscription(ctx("c2"), sync_request(pb.PARTIAL_ADD, "a"))
        assert broker.services.lite.subscribers_of(lmq_a) == {("c1", GROUP), ("c2", GROUP)}
        broker.controller.offsets.commit(GROUP, lmq_a, 0, 3)
        lite.sync_lite_subscription(ctx("c1"), sync_request(pb.PARTIAL_REMOVE, "x"))  # not subscribed
        assert broker.controller.offsets.query(GROUP, lmq_a, 0) == 3
        lite.sync_lite_subscription(ctx("c1"), sync_request(pb.PARTIAL_REMOVE, "a"))
        assert broker.controller.offsets.query(GROUP, lmq_a, 0) == 0


async def test_deleting_a_lite_parent_topic_deletes_its_lite_topics(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        put(broker, "a", 2)
        lmq_a = to_lmq_name(PARENT, "a")
        broker.controller.offsets.commit(GROUP, lmq_a, 0, 1)
        broker.services.lite.add_partial("c1", GROUP, PARENT, ["a"])
        header = TopicRequestHeader(topic=PARENT)
        answer = await dispatch(broker, RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, header))
        assert answer.code == ResponseCode.SUCCESS
        assert broker.store.queues.find(lmq_a, 0) is None
        assert broker.controller.offsets.query(GROUP, lmq_a, 0) == -1
        assert broker.services.lite.lmq_names_of("c1") == []
