"""The 5.5 lite admin request codes (``LiteManagerProcessor``) on a broker assembled in-process,
without sockets: the bodies as fastjson writes them and Java's refusals. (The same through the
5.5.0 ``mqadmin`` beside the real 5.5.0 broker: compat_tests/test_grpc55_compat.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio

from broker.app import Broker
from broker.lite import to_lmq_name
from broker.subscription_group_manager import SubscriptionGroupConfig
from codec import fastjson
from codec.bodies.register import TopicConfig
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import CustomHeader, EmptyHeader
from codec.headers.lite import (
    GetLiteClientInfoRequestHeader,
    GetLiteGroupInfoRequestHeader,
    GetLiteTopicInfoRequestHeader,
    GetParentTopicInfoRequestHeader,
    TriggerLiteDispatchRequestHeader,
)
from codec.message import MessageRecord
from gateway.transport.config import ServerConfig
from gateway.transport.dispatch import ConnectionInfo, RequestContext
from tests.helpers import broker_config

PARENT = "Chats"
GROUP = "ChatReaders"
CLIENT = "client-1"


@contextmanager
def lite_broker(root: Path) -> Iterator[Broker]:
    """A broker with the LITE topic Chats (2 messages in l0, 1 in l1), the plain topic Plain, the
    group ChatReaders bound to Chats (committed offset 1 on l0) and CLIENT subscribed to l0, l5."""
    broker = Broker(broker_config(root), ServerConfig(port=0), [], trio.Event())
    broker.store.open()
    try:
        controller = broker.controller
        controller.topics.update(TopicConfig(PARENT, 4, 4, 6, attributes={"message.type": "LITE"}))
        controller.topics.update(TopicConfig("Plain", 4, 4, 6))
        controller.groups.update(SubscriptionGroupConfig(GROUP, attributes={"lite.bind.topic": PARENT}))
        controller.groups.update(SubscriptionGroupConfig("Unbound"))
        for lite, count in (("l0", 2), ("l1", 1)):
            for index in range(count):
                record = MessageRecord(topic=to_lmq_name(PARENT, lite), queue_id=0, body=b"m%d" % index)
                assert broker.store.put_message(record).ok
        controller.offsets.commit(GROUP, to_lmq_name(PARENT, "l0"), 0, 1)
        broker.services.lite.add_partial(CLIENT, GROUP, PARENT, ["l0", "l5"])
        yield broker
    finally:
        broker.store.close()


async def ask(broker: Broker, code: int, header: CustomHeader) -> RemotingCommand:
    ctx = RequestContext(ConnectionInfo(1, "127.0.0.1:50000", "127.0.0.1:10911"))
    response = await broker.dispatcher.dispatch(ctx, RemotingCommand.request(code, header))
    assert response is not None
    return response


async def body_of(broker: Broker, code: int, header: CustomHeader) -> dict[str, Any]:
    response = await ask(broker, code, header)
    assert (response.code, response.remark) == (ResponseCode.SUCCESS, None)
    found: dict[str, Any] = fastjson.loads(response.body)
    assert list(found) == sorted(found)  # fastjson's field order
    return found


def store_time(broker: Broker, lite: str, offset: int) -> int:
    return broker.store.get_message_store_timestamp(to_lmq_name(PARENT, lite), 0, offset)


async def test_broker_lite_info_counts_lite_queues_subscriptions_and_metadata(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        info = await body_of(broker, RequestCode.GET_BROKER_LITE_INFO, EmptyHeader())
        assert info["storeType"] == "default"
        assert info["maxLmqNum"] == 20000
        assert info["currentLmqNum"] == 2
        assert info["liteSubscriptionCount"] == 2
        assert info["topicMeta"] == {PARENT: -1}
        assert info["groupMeta"] == {PARENT: [GROUP]}
        assert info["offsetTableSize"] == len(broker.controller.offsets.table)
        assert info["eventMapSize"] == 0


async def test_parent_topic_info_and_its_refusals(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        code = RequestCode.GET_PARENT_TOPIC_INFO
        info = await body_of(broker, code, GetParentTopicInfoRequestHeader(topic=PARENT))
        assert info == {"groups": [GROUP], "liteTopicCount": 2, "lmqNum": 2, "topic": PARENT, "ttl": -1}
        refusals = [
            await ask(broker, code, GetParentTopicInfoRequestHeader(topic=topic))
            for topic in ("Nope", "Plain")
        ]
        assert [(r.code, r.remark) for r in refusals] == [
            (ResponseCode.TOPIC_NOT_EXIST, "Topic [Nope] not exist."),
            (ResponseCode.INVALID_PARAMETER, "Topic [Plain] type not match."),
        ]


async def test_lite_topic_info_gives_offsets_and_subscribers(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        code = RequestCode.GET_LITE_TOPIC_INFO
        l0 = await body_of(broker, code, GetLiteTopicInfoRequestHeader(parent_topic=PARENT, lite_topic="l0"))
        assert l0 == {
            "liteTopic": "l0",
            "parentTopic": PARENT,
            "shardingToBroker": True,
            "subscriber": [{"clientId": CLIENT, "group": GROUP}],
            "topicOffset": {
                "lastUpdateTimestamp": store_time(broker, "l0", 1),
                "maxOffset": 2,
                "minOffset": 0,
            },
        }
        l5 = await body_of(broker, code, GetLiteTopicInfoRequestHeader(parent_topic=PARENT, lite_topic="l5"))
        assert l5["topicOffset"] == {"lastUpdateTimestamp": 0, "maxOffset": 0, "minOffset": 0}
        refused = await ask(
            broker, code, GetLiteTopicInfoRequestHeader(parent_topic="Plain", lite_topic="l0")
        )
        assert (refused.code, refused.remark) == (
            ResponseCode.INVALID_PARAMETER,
            "Topic [Plain] type not match.",
        )


async def test_lite_client_info_lists_the_clients_lmq_names(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        code = RequestCode.GET_LITE_CLIENT_INFO

        def header(client: str, group: str = GROUP, count: int = 1000) -> GetLiteClientInfoRequestHeader:
            return GetLiteClientInfoRequestHeader(
                parent_topic=PARENT, group=group, client_id=client, max_count=count
            )

        info = await body_of(broker, code, header(CLIENT))
        assert info == {
            "clientId": CLIENT,
            "group": GROUP,
            "lastAccessTime": -1,
            "lastConsumeTime": 0,
            "liteTopicCount": 2,
            "liteTopicSet": [to_lmq_name(PARENT, "l0"), to_lmq_name(PARENT, "l5")],
            "parentTopic": PARENT,
        }
        registry = broker.services.lite
        registry.open_events(CLIENT, 1000)  # a subscription opens the client's event set
        registry.open_events(CLIENT, 1100)  # once
        assert (await body_of(broker, code, header(CLIENT)))["lastAccessTime"] == 1000
        registry.touch(CLIENT, 1234)  # a receive
        registry.touch("nobody", 1234)  # no subscription, no event set
        info = await body_of(broker, RequestCode.GET_BROKER_LITE_INFO, EmptyHeader())
        assert info["eventMapSize"] == 1
        assert (await body_of(broker, code, header(CLIENT, count=1)))["liteTopicSet"] == [
            to_lmq_name(PARENT, "l0")
        ]
        assert (await body_of(broker, code, header(CLIENT)))["lastAccessTime"] == 1234
        unknown = await body_of(broker, code, header("nobody"))
        assert (unknown["liteTopicCount"], "liteTopicSet" in unknown) == (-1, False)
        refusals = [await ask(broker, code, header(CLIENT, group)) for group in ("Unbound", "bad group")]
        assert [(r.code, r.remark) for r in refusals] == [
            (ResponseCode.INVALID_PARAMETER, f"Subscription [Unbound]-[{PARENT}] not match."),
            (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "Group [bad group] not exist."),
        ]
        zero = await ask(broker, code, header(CLIENT, count=0))
        assert (zero.code, zero.remark) == (ResponseCode.SYSTEM_ERROR, "[maxCount] field invalid")


async def test_lite_group_info_gives_the_lag(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        code = RequestCode.GET_LITE_GROUP_INFO
        whole = await body_of(broker, code, GetLiteGroupInfoRequestHeader(group=GROUP, top_k=20))
        assert whole == {
            "earliestUnconsumedTimestamp": -1,
            "group": GROUP,
            "lagCountTopK": [
                {"earliestUnconsumedTimestamp": store_time(broker, "l0", 1), "lagCount": 1, "liteTopic": "l0"}
            ],
            "lagTimestampTopK": [],
            "parentTopic": PARENT,
            "totalLagCount": 1,
        }
        l0 = await body_of(
            broker, code, GetLiteGroupInfoRequestHeader(group=GROUP, lite_topic="l0", top_k=20)
        )
        assert l0 == {
            "earliestUnconsumedTimestamp": store_time(broker, "l0", 1),
            "group": GROUP,
            "liteTopic": "l0",
            "liteTopicOffsetWrapper": {
                "brokerOffset": 2,
                "consumerOffset": 1,
                "lastTimestamp": store_time(broker, "l0", 0),
                "pullOffset": 0,
            },
            "parentTopic": PARENT,
            "totalLagCount": 1,
        }
        l1 = await body_of(
            broker, code, GetLiteGroupInfoRequestHeader(group=GROUP, lite_topic="l1", top_k=20)
        )
        assert (l1["totalLagCount"], "liteTopicOffsetWrapper" in l1) == (0, False)
        l9 = await body_of(
            broker, code, GetLiteGroupInfoRequestHeader(group=GROUP, lite_topic="l9", top_k=20)
        )
        assert (l9["totalLagCount"], l9["earliestUnconsumedTimestamp"]) == (-1, -1)


async def test_group_refusals_and_trigger_dispatch(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        done = await ask(
            broker, RequestCode.TRIGGER_LITE_DISPATCH, TriggerLiteDispatchRequestHeader(group=GROUP)
        )
        assert (done.code, done.remark, done.body) == (ResponseCode.SUCCESS, None, b"")
        answers = [
            await ask(
                broker, RequestCode.TRIGGER_LITE_DISPATCH, TriggerLiteDispatchRequestHeader(group="Unbound")
            ),
            # An unknown group is auto-created (autoCreateSubscriptionGroup), so it is no LITE group.
            await ask(broker, RequestCode.GET_LITE_GROUP_INFO, GetLiteGroupInfoRequestHeader(group="Fresh")),
            await ask(
                broker, RequestCode.GET_LITE_GROUP_INFO, GetLiteGroupInfoRequestHeader(group="bad group")
            ),
        ]
        assert [(r.code, r.remark) for r in answers] == [
            (ResponseCode.INVALID_PARAMETER, "Group [Unbound] is not a LITE group."),
            (ResponseCode.INVALID_PARAMETER, "Group [Fresh] is not a LITE group."),
            (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "Group [bad group] not exist."),
        ]


def ctl(*entries: dict[str, Any]) -> RemotingCommand:
    body = fastjson.dumps({"subscriptionSet": list(entries)})
    return RemotingCommand.request(RequestCode.LITE_SUBSCRIPTION_CTL, EmptyHeader(), body=body)


async def test_lite_subscription_ctl_changes_the_shared_registry(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        ctx = RequestContext(ConnectionInfo(1, "127.0.0.1:50000", "127.0.0.1:10911"))
        registry = broker.services.lite
        entry = {"clientId": "proxy-client", "group": GROUP, "topic": PARENT, "version": 1}
        steps = [
            ({**entry, "action": "PARTIAL_ADD", "liteTopicSet": ["l0", "l1"]}, ["l0", "l1"]),
            ({**entry, "action": "PARTIAL_REMOVE", "liteTopicSet": ["l0"]}, ["l1"]),
            ({**entry, "action": "COMPLETE_ADD", "liteTopicSet": ["l2", "l3"]}, ["l2", "l3"]),
            ({**entry, "action": "COMPLETE_REMOVE"}, []),
        ]
        for step, wanted in steps:
            response = await broker.dispatcher.dispatch(ctx, ctl(step))
            assert response is not None
            assert (response.code, response.remark) == (ResponseCode.SUCCESS, None), step
            assert registry.lmq_names_of("proxy-client") == [to_lmq_name(PARENT, t) for t in wanted], step
        skipped = await broker.dispatcher.dispatch(
            ctx, ctl({**entry, "clientId": " ", "action": "PARTIAL_ADD"})
        )
        assert skipped is not None
        assert (skipped.code, "  " in registry.by_client) == (ResponseCode.SUCCESS, False)


async def test_lite_subscription_ctl_refusals(tmp_path: Path) -> None:
    with lite_broker(tmp_path) as broker:
        ctx = RequestContext(ConnectionInfo(1, "127.0.0.1:50000", "127.0.0.1:10911"))
        broker.controller.groups.update(
            SubscriptionGroupConfig("Closed", consume_enable=False, attributes={"lite.bind.topic": PARENT})
        )
        closed = {
            "clientId": "c",
            "group": "Closed",
            "topic": PARENT,
            "action": "COMPLETE_ADD",
            "liteTopicSet": [],
        }
        no_body = RemotingCommand.request(RequestCode.LITE_SUBSCRIPTION_CTL, EmptyHeader())
        answers = [
            await broker.dispatcher.dispatch(ctx, command) for command in (no_body, ctl(), ctl(closed))
        ]
        assert [(a.code, a.remark) for a in answers if a is not None] == [
            (ResponseCode.ILLEGAL_OPERATION, "Request body is null."),
            (ResponseCode.ILLEGAL_OPERATION, "LiteSubscriptionCtlRequestBody is empty."),
            (
                ResponseCode.ILLEGAL_OPERATION,
                "java.lang.IllegalStateException: Consumer group is not allowed to consume.",
            ),
        ]
        bad = await broker.dispatcher.dispatch(ctx, ctl({**closed, "action": "JUMP"}))
        assert bad is not None
        assert bad.code == ResponseCode.SYSTEM_ERROR
