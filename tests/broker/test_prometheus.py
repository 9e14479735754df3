"""The exporter's names and labels (:mod:`broker.prometheus`): ``message_type`` as Java's
``BrokerMetricsManager.getMessageType``, retry topics left out of ``messages_in``, the
``protocol_type`` / ``is_system`` labels of the connection gauges, the unit in the names of the
latency gauges, the storage gauges, and gRPC requests timed in the remoting requests' histogram."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest
import trio

from broker.prometheus import message_type
from codec.bodies.register import TopicConfig
from codec.codes import RequestCode
from codec.properties import DELAY, TRAN_MSG
from gateway.launcher import start_grpc
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.helpers import running_broker, send_request
from tests.broker.test_admin_ops import consumer_heartbeat, request, sample
from tests.broker.test_grpc_service import Client, in_thread, message

DELIVERY_TIMEOUT_S = 20.0


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({}, "normal"),
        ({"TAGS": "TagA", "KEYS": "k"}, "normal"),
        ({TRAN_MSG: "true"}, "transaction"),
        ({TRAN_MSG: "TRUE"}, "transaction"),  # Boolean.parseBoolean ignores case
        ({TRAN_MSG: "false"}, "normal"),
        ({"__SHARDINGKEY": "order-1"}, "fifo"),
        ({DELAY: "3"}, "delay"),
        ({"__STARTDELIVERTIME": "1700000000000"}, "delay"),
        ({"TIMER_DELIVER_MS": "1700000000000"}, "delay"),
        ({"TIMER_DELAY_SEC": "5"}, "delay"),
        ({"TIMER_DELAY_MS": "5000"}, "delay"),
        # Java's order: a transaction wins over a message group, a message group over a delay.
        ({TRAN_MSG: "true", "__SHARDINGKEY": "g", DELAY: "2"}, "transaction"),
        ({"__SHARDINGKEY": "g", DELAY: "2"}, "fifo"),
    ],
)
def test_message_type_follows_java_precedence(properties: dict[str, str], expected: str) -> None:
    assert message_type(properties) == expected


async def test_sends_are_labelled_by_message_type_and_retry_topics_left_out(tmp_path: Path) -> None:
    async with running_broker(
        tmp_path,
        metrics_exporter_type="PROM",
        metrics_prom_exporter_host="127.0.0.1",
        metrics_prom_exporter_port=0,
    ) as (app, conn):
        exporter = app.broker.metrics
        assert exporter is not None
        for i in range(3):
            assert (await conn.invoke(send_request("TypeT", f"n{i}".encode()), 3)).code == 0
        for i in range(2):
            assert (await conn.invoke(send_request("TypeT", f"d{i}".encode(), {DELAY: "1"}), 3)).code == 0
        fifo = send_request("TypeT", b"f", {"__SHARDINGKEY": "group-1"})
        assert (await conn.invoke(fifo, 3)).code == 0
        retry = send_request("%RETRY%typeGroup", b"r")
        assert (await conn.invoke(retry, 3)).code == 0
        heartbeat = consumer_heartbeat("client-1", "CID_RMQ_SYS_TEST", "TypeT")
        assert (await conn.invoke(heartbeat, 3)).code == 0
        commit = {"consumerGroup": "typeGroup", "topic": "TypeT", "queueId": "0", "commitOffset": "1"}
        assert (await conn.invoke(request(RequestCode.UPDATE_CONSUMER_OFFSET, commit), 3)).code == 0

        def scrape() -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics", timeout=5) as r:
                return str(r.read().decode())

        def delivered(text: str) -> int:
            pattern = r'^rocketmq_messages_out_total\{[^}]*"SCHEDULE_CONSUMER"[^}]*\} (\S+)$'
            found = re.search(pattern, text, re.M)
            return int(float(found.group(1))) if found else 0

        with trio.fail_after(DELIVERY_TIMEOUT_S):  # the two delayed messages delivered (level 1: 1 s)
            while delivered(text := await trio.to_thread.run_sync(scrape)) < 2:  # noqa: ASYNC110 - an HTTP poll
                await trio.sleep(0.2)
        exporter.refresh()  # the gauges as of now, after the deliveries
        text = await trio.to_thread.run_sync(scrape)
    base = {"cluster": "DefaultCluster", "node_id": "broker-a", "node_type": "broker"}
    normal = {**base, "topic": "TypeT", "is_system": "false"}
    assert sample(text, "rocketmq_messages_in_total", message_type="normal", **normal) == 3
    assert sample(text, "rocketmq_messages_in_total", message_type="fifo", **normal) == 1
    # A delayed send is stored in the schedule topic, a system topic, as in Java (the put hook
    # rewrites the message's topic before SendMessageProcessor labels it).
    delayed = {**base, "topic": "SCHEDULE_TOPIC_XXXX", "is_system": "true"}
    assert sample(text, "rocketmq_messages_in_total", message_type="delay", **delayed) == 2
    assert not re.search(r'^rocketmq_messages_in_total\{[^}]*topic="%RETRY%', text, re.M)
    # Delivered, each is read from the schedule topic by SCHEDULE_CONSUMER and received again on
    # its own topic, still a delay message (ScheduleMessageService.PutResultProcess.onSuccess).
    schedule = {**delayed, "consumer_group": "SCHEDULE_CONSUMER"}
    assert sample(text, "rocketmq_messages_out_total", **schedule) == 2
    assert sample(text, "rocketmq_messages_in_total", message_type="delay", **normal) == 2
    assert sample(text, "rocketmq_consumer_connections", consumer_group="CID_RMQ_SYS_TEST",
                  protocol_type="remoting", is_system="true", consume_mode="push") == 1  # fmt: skip
    lagging = {**normal, "consumer_group": "typeGroup", "is_retry": "false"}
    # Queue 0 holds the 3 normal, the fifo and the 2 delivered delayed messages; 1 is committed.
    assert sample(text, "rocketmq_consumer_lag_messages", **lagging) == 5
    assert sample(text, "rocketmq_consumer_lag_latency_milliseconds", **lagging) >= 0
    assert sample(text, "rocketmq_consumer_queueing_latency_milliseconds", **lagging) >= 0
    storage = {**base, "storage_type": "local", "storage_medium": "disk"}
    assert sample(text, "rocketmq_storage_size_bytes", **storage) > 0
    assert sample(text, "rocketmq_storage_flush_behind_bytes", **storage) >= 0
    assert sample(text, "rocketmq_storage_dispatch_behind_bytes", **storage) == 0
    assert sample(text, "rocketmq_storage_message_reserve_time_milliseconds", **storage) >= 0


async def test_grpc_requests_are_timed_next_to_remoting_ones(tmp_path: Path) -> None:
    async with (
        running_broker(
            tmp_path,
            metrics_exporter_type="PROM",
            metrics_prom_exporter_host="127.0.0.1",
            metrics_prom_exporter_port=0,
        ) as (app, conn),
        trio.open_nursery() as nursery,
    ):
        exporter = app.broker.metrics
        assert exporter is not None
        server = await start_grpc(nursery, app, GrpcServerConfig(grpc_server_port=0))
        app.controller.topics.update(TopicConfig("GrpcT", 1, 1, 6))
        client = Client(server.port)

        def send(topic: str, message_id: str) -> int:
            request = pb.SendMessageRequest(messages=[message(topic, b"x", message_id)])
            return client.call("SendMessage", request, pb.SendMessageResponse).status.code

        codes = await in_thread(
            lambda: [send("GrpcT", f"ID{i}") for i in range(3)] + [send("Missing", "ID9")]
        )
        assert (await conn.invoke(send_request("GrpcT", b"remoting"), 3)).code == 0

        def scrape() -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics", timeout=5) as r:
                return str(r.read().decode())

        text = await trio.to_thread.run_sync(scrape)
        await server.shutdown()
        nursery.cancel_scope.cancel()
    assert codes == [pb.OK, pb.OK, pb.OK, pb.TOPIC_NOT_FOUND]
    count = "rocketmq_rpc_latency_milliseconds_count"
    grpc = {"protocol_type": "grpc", "request_code": "send_message", "is_long_polling": "false"}
    assert sample(text, count, response_code="ok", result="success", **grpc) == 3
    assert sample(text, count, response_code="topic_not_found", **grpc) == 1
    assert (
        sample(text, "rocketmq_rpc_latency_milliseconds_bucket", response_code="ok", le="+Inf", **grpc) == 3
    )
    remoting = {"protocol_type": "remoting", "request_code": "send_message_v2", "response_code": "success"}
    assert sample(text, count, **remoting) == 1
    # The messages are counted as received whichever door they came in by.
    received = {"topic": "GrpcT", "message_type": "normal", "node_id": "broker-a"}
    assert sample(text, "rocketmq_messages_in_total", **received) == 4
