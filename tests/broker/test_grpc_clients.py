"""gRPC and remoting clients in one ClientManager: the admin listings (``consumerConnection``,
``producerConnection``) show both, each under a key of its own, as the 5.3.3 Proxy in front of a
broker registers its gRPC clients next to the remoting ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codec.bodies.register import TopicConfig
from codec.codes import RequestCode, ResponseCode
from codec.versions import CURRENT_VERSION
from gateway.transport.client import Connection
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.test_admin_ops import consumer_heartbeat, request
from tests.broker.test_grpc_service import Client, endpoint, in_thread, producer_settings


def consumer_settings(group: str, topic: str) -> pb.Settings:
    return pb.Settings(
        client_type=pb.SIMPLE_CONSUMER,
        subscription=pb.Subscription(
            group=pb.Resource(name=group),
            subscriptions=[
                pb.SubscriptionEntry(
                    topic=pb.Resource(name=topic), expression=pb.FilterExpression(type=pb.TAG, expression="*")
                )
            ],
        ),
    )


async def listing(conn: Connection, code: int, header: dict[str, str]) -> dict[str, Any]:
    response = await conn.invoke(request(code, header), 3)
    assert response.code == ResponseCode.SUCCESS, response.remark
    doc: dict[str, Any] = json.loads(response.body)
    return doc


def by_client(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["clientId"]: c for c in doc["connectionSet"]}


async def test_grpc_and_remoting_consumers_are_listed_side_by_side(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (app, conn, port):
        app.controller.topics.update(TopicConfig("MixT", 1, 1, 6))
        assert (await conn.invoke(consumer_heartbeat("remote-1", "MixG", "MixT"), 3)).code == 0
        grpc_consumer = Client(port, "grpc-1")
        answer = await in_thread(lambda: grpc_consumer.telemetry(consumer_settings("MixG", "MixT")))
        assert answer.status.code == pb.OK
        both = await listing(conn, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "MixG"})
        channels = list(app.controller.clients.consumers["MixG"].channels)
        bye = await in_thread(
            lambda: grpc_consumer.call(
                "NotifyClientTermination",
                pb.NotifyClientTerminationRequest(group=pb.Resource(name="MixG")),
                pb.NotifyClientTerminationResponse,
            )
        )
        after = await listing(conn, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "MixG"})
    clients = by_client(both)
    assert sorted(clients) == ["grpc-1", "remote-1"]
    grpc = clients["grpc-1"]
    assert grpc["language"] == "JAVA"  # x-mq-language
    assert grpc["version"] == CURRENT_VERSION  # no x-mq-client-version naming a release
    assert grpc["clientAddr"].startswith("127.0.0.1:")
    # One numbering for the connections of both doors: the two keys are told apart by their ids too.
    assert len({c.id for c in channels}) == 2
    assert bye.status.code == pb.OK
    assert sorted(by_client(after)) == ["remote-1"]


async def test_a_grpc_producer_is_listed_under_its_topic(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (_app, conn, port):
        producer = Client(port, "grpc-p")
        answer = await in_thread(lambda: producer.telemetry(producer_settings("ProdT")))
        doc = await listing(conn, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "ProdT"})
    assert answer.status.code == pb.OK
    assert list(by_client(doc)) == ["grpc-p"]
    assert by_client(doc)["grpc-p"]["language"] == "JAVA"


async def test_a_simple_consumer_consumes_actively(tmp_path: Path) -> None:
    """``ClientActivity.buildConsumeType``: a simple consumer pulls (CONSUME_ACTIVELY)."""
    async with endpoint(tmp_path) as (_app, conn, port):
        consumer = Client(port, "simple-1")
        await in_thread(lambda: consumer.telemetry(consumer_settings("SimpleG", "SimpleT")))
        doc = await listing(conn, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "SimpleG"})
    assert doc["consumeType"] == "CONSUME_ACTIVELY"
    assert doc["messageModel"] == "CLUSTERING"


async def test_a_consumer_is_told_the_endpoints_long_polling_timeout_and_batch_size(tmp_path: Path) -> None:
    """``GrpcClientSettingsManager``: the settings a consumer gets back carry
    ``grpcClientConsumerMaxLongPollingTimeoutMillis`` and ``grpcClientConsumerLongPollingBatchSize``
    of the endpoint's configuration (20 s and 32 by default, in tests/broker/test_grpc_service.py)."""
    config = {
        "grpc_client_consumer_max_long_polling_timeout_millis": 6_500,
        "grpc_client_consumer_long_polling_batch_size": 8,
    }
    async with endpoint(tmp_path, **config) as (_app, _conn, port):
        answer = await in_thread(lambda: Client(port, "c-1").telemetry(consumer_settings("PollG", "PollT")))
    assert answer.status.code == pb.OK
    assert answer.settings.subscription.long_polling_timeout.ToMilliseconds() == 6_500
    assert answer.settings.subscription.receive_batch_size == 8
