"""The limits of lite topics on our gateway and on Apache RocketMQ 5.5.0's Proxy (cluster mode,
its NameServer and a broker with ``enableLmq``, ``enableMultiDispatch``, ``enableLmqQuota``,
``maxLmqConsumeQueueNum=2`` and ``maxLiteSubscriptionCount=2``), one start of each.

Raw gRPC calls: a lite message for a third lite topic is refused LITE_TOPIC_QUOTA_EXCEEDED with
the broker's remark while the first two still take messages; a PARTIAL_ADD once the broker holds
2 lite subscriptions is refused LITE_SUBSCRIPTION_QUOTA_EXCEEDED with the broker's
``LiteQuotaException`` text (``docs/lite.md``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codec import fastjson
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from compat_tests.grpc_targets import Endpoint, start_cluster_reference, start_ours
from compat_tests.lite55_admin import invoke_all
from compat_tests.pop_raw import wait_route
from compat_tests.test_grpc55_compat import METADATA, VERSION, mqadmin, send, sync
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

PARENT = "LimitChats"
GROUP = "LimitReaders"
CONF = {
    "enableLmq": "true",
    "enableMultiDispatch": "true",
    "enableLmqQuota": "true",
    "maxLmqConsumeQueueNum": "2",
    "maxLiteSubscriptionCount": "2",
}


@pytest.fixture(scope="module", params=("ours", f"reference-{VERSION}"))
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    workdir = tmp_path_factory.mktemp(request.param)
    if request.param == "ours":
        ours = start_ours(workdir, CONF)
        try:
            endpoint = Endpoint("ours", ours.grpc_addr, ours.namesrv_addr)
            mqadmin_resources(endpoint, workdir)
            yield endpoint
        finally:
            ours.stop()
    else:
        endpoint, servers = start_cluster_reference(workdir, VERSION, CONF)
        try:
            mqadmin_resources(endpoint, workdir)
            yield endpoint
        finally:
            servers.stop(kill=True)


def mqadmin_resources(endpoint: Endpoint, home: Path) -> None:
    """The LITE topic and its bound group, with 5.5.0's tools."""
    cluster = ("-c", "DefaultCluster")
    lite = ("-a", "+message.type=LITE")
    mqadmin(endpoint, home, "updateTopic", *cluster, "-t", PARENT, "-r", "1", "-w", "1", *lite)
    wait_route(endpoint.namesrv_addr, PARENT)
    bound = ("--attributes", f"+lite.bind.topic={PARENT}")
    mqadmin(endpoint, home, "updateSubGroup", *cluster, "-g", GROUP, *bound)


def lmq_count(broker_addr: str) -> int:
    """GET_BROKER_LITE_INFO's ``currentLmqNum``."""
    info = RemotingCommand.request(RequestCode.GET_BROKER_LITE_INFO, EmptyHeader())
    answer = invoke_all(broker_addr, {"info": info})["info"]
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    return int(fastjson.loads(answer.body)["currentLmqNum"])


def test_lmq_and_subscription_quotas(target: Endpoint) -> None:
    broker_addr = wait_route(target.namesrv_addr, PARENT)
    assert send(target, PARENT, "quota-a", "a")[0] == pb.OK
    assert send(target, PARENT, "quota-b", "b")[0] == pb.OK
    # The real broker creates an LMQ queue when it dispatches the message, a moment after the put.
    deadline = time.monotonic() + 10
    while lmq_count(broker_addr) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    client_2 = (("x-mq-client-id", "limits-2"), *METADATA[1:])
    answers = {
        "third lite topic": send(target, PARENT, "quota-c", "c"),
        "first lite topic again": send(target, PARENT, "quota-a2", "a"),
        "two subscriptions": sync(target, PARENT, GROUP, "a", "b"),
        "a third": sync(target, PARENT, GROUP, "a", metadata=client_2),
    }
    assert answers == {
        "third lite topic": (
            pb.LITE_TOPIC_QUOTA_EXCEEDED,
            "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]lmq consume queue num exceeded.",
        ),
        "first lite topic again": (pb.OK, "OK"),
        "two subscriptions": (pb.OK, "OK"),
        "a third": (
            pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED,
            "org.apache.rocketmq.broker.lite.LiteQuotaException: lite subscription quota exceeded 2",
        ),
    }
    assert lmq_count(broker_addr) == 2
