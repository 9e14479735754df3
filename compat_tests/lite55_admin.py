"""The lite admin part of ``compat_tests/test_grpc55_compat.py``: the resources' names, the
six lite subcommands of the 5.5.0 ``mqadmin`` run in one JVM, their output normalized and expected
(the same on our gateway and on the real 5.5.0, after that module's push scenario), raw lite
admin requests with the refusals both brokers give, and LITE_SUBSCRIPTION_CTL as a cluster-mode
Proxy sends it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import trio

from codec import fastjson
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
from compat_tests.mqadmin_batch import mqadmin_batch
from gateway.transport.client import connect

VERSION = "5.5.0"
PARENT = "LiteChats"
SIMPLE_PARENT = "LiteChatsSimple"
NORMAL_TOPIC = "LiteNormal"
PUSH_GROUP = "LitePushGroup"
SIMPLE_GROUP = "LiteSimpleGroup"
ADMIN_CLIENT = "lite-admin-check"


def admin_outputs(namesrv_addr: str, home: Path) -> dict[str, str]:
    """The six lite subcommands of the 5.5.0 tools (one JVM), after the push scenario and a raw
    subscription of ADMIN_CLIENT to l0, l2 and l9 (no message)."""
    p, g = ("-p", PARENT), ("-g", PUSH_GROUP)
    commands = {
        "broker": ["getBrokerLiteInfo", "-c", "DefaultCluster", "-d"],
        "parent": ["getParentTopicInfo", *p],
        "parent-normal": ["getParentTopicInfo", "-p", NORMAL_TOPIC],
        "parent-unknown": ["getParentTopicInfo", "-p", "NoSuchParent"],
        "topic-l0": ["getLiteTopicInfo", *p, "-l", "l0", "-s"],
        "topic-l3": ["getLiteTopicInfo", *p, "-l", "l3", "-s"],
        "topic-l9": ["getLiteTopicInfo", *p, "-l", "l9"],
        "client": ["getLiteClientInfo", *p, *g, "-c", ADMIN_CLIENT, "-s"],
        "client-unknown": ["getLiteClientInfo", *p, *g, "-c", "nobody", "-s"],
        "client-other-group": ["getLiteClientInfo", *p, "-g", SIMPLE_GROUP, "-c", ADMIN_CLIENT],
        "group": ["getLiteGroupInfo", *p, *g],
        "group-l1": ["getLiteGroupInfo", *p, *g, "-l", "l1"],
        "group-l9": ["getLiteGroupInfo", *p, *g, "-l", "l9"],
        "group-unknown": ["getLiteGroupInfo", *p, "-g", "NoSuchGroup"],
        "dispatch": ["triggerLiteDispatch", *p, *g],
        "dispatch-client": ["triggerLiteDispatch", *p, *g, "-c", ADMIN_CLIENT],
        "dispatch-unknown": ["triggerLiteDispatch", *p, "-g", "NoSuchGroup"],
    }
    return mqadmin_batch(namesrv_addr, commands, home, version=VERSION)


TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}")  # UtilAll.timeMillisToHumanString2
MIN_UNCONSUMED = re.compile(r"Min Unconsumed Timestamp: \d+ \(\d+ s ago\)")
TRACE = re.compile(r"^\s+(at |\.\.\. \d+ more)")


def normalized(name: str, output: str) -> list[str]:
    """The lines of one subcommand's output, runs of spaces as one, times as ``<time>``, stack
    frames dropped; in getBrokerLiteInfo's row the broker address and the two figures that count
    every consume queue and every offset entry of the broker (not only lite ones) as ``*``."""
    lines = []
    for line in output.splitlines():
        if TRACE.match(line):
            continue
        line = MIN_UNCONSUMED.sub("Min Unconsumed Timestamp: <ms>", TIME.sub("<time>", line))
        fields = line.split()
        if name == "broker" and len(fields) == 9 and not line.startswith("#"):
            fields[0] = fields[6] = fields[7] = "*"
        lines.append(" ".join(fields))
    return lines


LAG_HEADER = "NO Lite Topic Lag Count UnconsumedTimestamp"
TOPIC_HEADER = "#Broker Name #MinOffset #MaxOffset #LastUpdate #Sharding #SubClientCount"
CLIENT_HEADER = "#Broker #LiteTopicCount #LastAccessTime #LastConsumeTime"
OFFSET_HEADER = "#Broker Name #BrokerOffset #ConsumeOffset #LagCount #LastUpdate"
PARENT_HEADER = "#Broker Name #TTL #Lite Count #LMQ NUM #GROUPS"
EXPECTED_ADMIN = {
    "broker": [
        "#Broker #Store Type #Max LMQ #Current LMQ #SubscriptionCount #OrderInfoCount #CQTableSize"
        " #OffsetTableSize #eventMapSize",
        # The push scenario's 4 LMQs (l0..l3; this test runs before test_lite_simple_consumer,
        # whose sends add 2 on ours only), the 3 lite topics of ADMIN_CLIENT, 2 lite queues read
        # orderly (l0, l1), 1 client event set (ADMIN_CLIENT's).
        "* default 20000 4 3 2 * * 1",
        f'Topic Meta: {{"{PARENT}":-1,"{SIMPLE_PARENT}":-1}}',
        f'Group Meta: {{"{PARENT}":["{PUSH_GROUP}"],"{SIMPLE_PARENT}":["{SIMPLE_GROUP}"]}}',
    ],
    "parent": [f"Parent Topic Info: [{PARENT}]", PARENT_HEADER, f"broker-a -1 4 4 [{PUSH_GROUP}]"],
    "parent-normal": [f"Parent Topic Info: [{NORMAL_TOPIC}]", PARENT_HEADER, "[broker-a] error."],
    "parent-unknown": [
        "org.apache.rocketmq.tools.command.SubCommandException: GetParentTopicInfoSubCommand command failed",
        "Caused by: org.apache.rocketmq.client.exception.MQClientException: CODE: 17 DESC: No topic route"
        " info in name server for the topic: NoSuchParent",
        "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.",
    ],
    "topic-l0": [
        f"Lite Topic Info: [{PARENT}] [l0] [%LMQ%${PARENT}$l0]",
        TOPIC_HEADER,
        "broker-a 0 4 <time> true 1",
        f"[{ADMIN_CLIENT}@{PUSH_GROUP}]",
    ],
    "topic-l3": [
        f"Lite Topic Info: [{PARENT}] [l3] [%LMQ%${PARENT}$l3]",
        TOPIC_HEADER,
        "broker-a 0 3 <time> true 0",
        "[]",
    ],
    "topic-l9": [
        f"Lite Topic Info: [{PARENT}] [l9] [%LMQ%${PARENT}$l9]",
        TOPIC_HEADER,
        "broker-a 0 0 - true 1",
    ],
    "client": [
        f"Lite Client Info: [{PARENT}] [{PUSH_GROUP}] [{ADMIN_CLIENT}]",
        CLIENT_HEADER,
        "broker-a 3 <time> N/A",
        "LITE TOPICS",
    ],
    "client-unknown": [
        f"Lite Client Info: [{PARENT}] [{PUSH_GROUP}] [nobody]",
        CLIENT_HEADER,
        "broker-a N/A N/A N/A",
    ],
    "client-other-group": [
        f"Lite Client Info: [{PARENT}] [{SIMPLE_GROUP}] [{ADMIN_CLIENT}]",
        CLIENT_HEADER,
        "[broker-a] error.",
    ],
    "group": [
        f"Lite Group Info: [{PUSH_GROUP}] [{PARENT}]",
        "Total Lag Count: 1",  # l1-after, sent after unsubscribing l1
        "Min Unconsumed Timestamp: <ms>",
        "------TopK by lag count-----",
        LAG_HEADER,
        "1 l1 1 <time>",
        "------TopK by lag time------",
        LAG_HEADER,
    ],
    "group-l1": [
        f"Lite Group Info: [{PUSH_GROUP}] [{PARENT}]",
        OFFSET_HEADER,
        "broker-a 4 3 1 <time>",
        "Total Lag Count: 1",
        "Min Unconsumed Timestamp: <ms>",
    ],
    "group-l9": [
        f"Lite Group Info: [{PUSH_GROUP}] [{PARENT}]",
        OFFSET_HEADER,
        "broker-a - - - -",
        "Total Lag Count: 0",
        "Min Unconsumed Timestamp: <ms>",
    ],
    "group-unknown": [
        f"Lite Group Info: [NoSuchGroup] [{PARENT}]",
        "[broker-a] error.",
        "Total Lag Count: 0",
        "Min Unconsumed Timestamp: <ms>",
        "------TopK by lag count-----",
        LAG_HEADER,
        "------TopK by lag time------",
        LAG_HEADER,
    ],
    "dispatch": [f"Group And Topic Info: [{PUSH_GROUP}] [{PARENT}]", "broker-a dispatched"],
    "dispatch-client": [f"Group And Topic Info: [{PUSH_GROUP}] [{PARENT}]", "broker-a dispatched"],
    "dispatch-unknown": [f"Group And Topic Info: [NoSuchGroup] [{PARENT}]", "broker-a error"],
}
ADMIN_LMQS = {f"%LMQ%${PARENT}${lite}" for lite in ("l0", "l2", "l9")}


def lite_admin_refusals(broker_addr: str) -> dict[str, tuple[int, str | None]]:
    """Raw lite admin requests the broker refuses: (code, remark) of each."""
    asks: dict[str, tuple[int, CustomHeader]] = {
        "unknown parent": (
            RequestCode.GET_PARENT_TOPIC_INFO,
            GetParentTopicInfoRequestHeader("NoSuchParent"),
        ),
        "normal parent": (RequestCode.GET_PARENT_TOPIC_INFO, GetParentTopicInfoRequestHeader(NORMAL_TOPIC)),
        "lite topic of an unknown parent": (
            RequestCode.GET_LITE_TOPIC_INFO,
            GetLiteTopicInfoRequestHeader("NoSuchParent", "l0"),
        ),
        "client of another group": (
            RequestCode.GET_LITE_CLIENT_INFO,
            GetLiteClientInfoRequestHeader(PARENT, SIMPLE_GROUP, ADMIN_CLIENT),
        ),
        "client of an invalid group": (
            RequestCode.GET_LITE_CLIENT_INFO,
            GetLiteClientInfoRequestHeader(PARENT, "bad group", ADMIN_CLIENT),
        ),
        "unknown group": (
            RequestCode.GET_LITE_GROUP_INFO,
            GetLiteGroupInfoRequestHeader("NoSuchGroup", None, 20),
        ),
        "invalid group": (
            RequestCode.GET_LITE_GROUP_INFO,
            GetLiteGroupInfoRequestHeader("bad group", None, 20),
        ),
        "dispatch of an unknown group": (
            RequestCode.TRIGGER_LITE_DISPATCH,
            TriggerLiteDispatchRequestHeader("NoSuchGroup2"),
        ),
    }

    commands = {name: RemotingCommand.request(code, header) for name, (code, header) in asks.items()}
    commands["subscription change without body"] = ctl_request(None)
    commands["subscription change of no entries"] = ctl_request([])
    return {name: (answer.code, answer.remark) for name, answer in invoke_all(broker_addr, commands).items()}


def invoke_all(broker_addr: str, commands: dict[str, RemotingCommand]) -> dict[str, RemotingCommand]:
    """Each command on one connection to the broker; the answers."""

    async def run() -> dict[str, RemotingCommand]:
        async with connect(broker_addr) as conn:
            return {name: await conn.invoke(command, 10) for name, command in commands.items()}

    return trio.run(run)


def ctl_request(entries: list[dict[str, Any]] | None) -> RemotingCommand:
    """LITE_SUBSCRIPTION_CTL, as a cluster-mode Proxy sends it (no body when ``entries`` is None)."""
    body = fastjson.dumps({"subscriptionSet": entries}) if entries is not None else b""
    return RemotingCommand.request(RequestCode.LITE_SUBSCRIPTION_CTL, EmptyHeader(), body=body)


REMOTING_CLIENT = "lite-remoting-check"


def subscribe_over_remoting(broker_addr: str) -> dict[str, Any]:
    """REMOTING_CLIENT's lite topics l1 and l3 set by LITE_SUBSCRIPTION_CTL (PARTIAL_ADD, then
    PARTIAL_REMOVE of l3, then PARTIAL_ADD of l3 again), then read back by GET_LITE_CLIENT_INFO:
    the codes of the changes and the figures of the answer."""
    entry = {"clientId": REMOTING_CLIENT, "group": PUSH_GROUP, "topic": PARENT, "version": 0}
    commands = {
        "add": ctl_request([{**entry, "action": "PARTIAL_ADD", "liteTopicSet": ["l1", "l3"]}]),
        "remove": ctl_request([{**entry, "action": "PARTIAL_REMOVE", "liteTopicSet": ["l3"]}]),
        "add again": ctl_request([{**entry, "action": "PARTIAL_ADD", "liteTopicSet": ["l3"]}]),
        "info": RemotingCommand.request(
            RequestCode.GET_LITE_CLIENT_INFO,
            GetLiteClientInfoRequestHeader(PARENT, PUSH_GROUP, REMOTING_CLIENT),
        ),
    }
    answers = invoke_all(broker_addr, commands)
    info = fastjson.loads(answers["info"].body)
    return {
        **{name: (answers[name].code, answers[name].remark) for name in ("add", "remove", "add again")},
        "liteTopicCount": info.get("liteTopicCount"),
        "liteTopicSet": sorted(info.get("liteTopicSet") or ()),
        "lastAccessTime set": info.get("lastAccessTime", -1) > 0,
    }


EXPECTED_REFUSALS = {
    "unknown parent": (ResponseCode.TOPIC_NOT_EXIST, "Topic [NoSuchParent] not exist."),
    "normal parent": (ResponseCode.INVALID_PARAMETER, f"Topic [{NORMAL_TOPIC}] type not match."),
    "lite topic of an unknown parent": (ResponseCode.TOPIC_NOT_EXIST, "Topic [NoSuchParent] not exist."),
    "client of another group": (
        ResponseCode.INVALID_PARAMETER,
        f"Subscription [{SIMPLE_GROUP}]-[{PARENT}] not match.",
    ),
    "client of an invalid group": (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "Group [bad group] not exist."),
    # An unknown group with a valid name is auto-created (autoCreateSubscriptionGroup).
    "unknown group": (ResponseCode.INVALID_PARAMETER, "Group [NoSuchGroup] is not a LITE group."),
    "invalid group": (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "Group [bad group] not exist."),
    "dispatch of an unknown group": (
        ResponseCode.INVALID_PARAMETER,
        "Group [NoSuchGroup2] is not a LITE group.",
    ),
    "subscription change without body": (ResponseCode.ILLEGAL_OPERATION, "Request body is null."),
    "subscription change of no entries": (
        ResponseCode.ILLEGAL_OPERATION,
        "LiteSubscriptionCtlRequestBody is empty.",
    ),
}
