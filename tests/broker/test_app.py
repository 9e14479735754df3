"""The broker app over real sockets: registration with a NameServer, heartbeats, consumer lists."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from broker.app import BrokerApp
from codec.bodies.heartbeat import (
    ConsumerData,
    ConsumerListBody,
    HeartbeatData,
    ProducerData,
    SubscriptionData,
)
from codec.bodies.register import RegisterBrokerBody
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.hashing import body_crc32
from codec.headers.base import EmptyHeader
from codec.headers.namesrv import RegisterBrokerRequestHeader
from gateway.transport.client import connect
from gateway.transport.config import ServerConfig
from gateway.transport.dispatch import Dispatcher, RequestContext
from gateway.transport.server import RemotingServer
from tests.helpers import broker_config, wait_until


class FakeNamesrv:
    """Records what the broker sends; answers like a NameServer."""

    def __init__(self) -> None:
        self.registrations: list[tuple[RegisterBrokerRequestHeader, RegisterBrokerBody]] = []
        self.unregistrations = 0
        self.registered = trio.Event()
        d = Dispatcher("fake-namesrv")
        d.register(RequestCode.REGISTER_BROKER, self.register, RegisterBrokerRequestHeader)
        d.register(RequestCode.UNREGISTER_BROKER, self.unregister)
        self.server = RemotingServer(d, ServerConfig(), name="fake-namesrv")

    def register(
        self, ctx: RequestContext, req: RemotingCommand, header: RegisterBrokerRequestHeader
    ) -> RemotingCommand:
        assert header.body_crc32 == body_crc32(req.body)
        self.registrations.append((header, RegisterBrokerBody.decode(req.body)))
        self.registered.set()
        return req.make_response(ResponseCode.SUCCESS, header={})

    def unregister(self, ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
        self.unregistrations += 1
        return req.make_response(ResponseCode.SUCCESS)


@asynccontextmanager
async def broker_with_namesrv(root: Path) -> AsyncIterator[tuple[BrokerApp, FakeNamesrv]]:
    namesrv = FakeNamesrv()
    async with trio.open_nursery() as nursery:
        await nursery.start(namesrv.server.run)
        config = broker_config(root, namesrv_addr=f"127.0.0.1:{namesrv.server.port}")
        app = BrokerApp(config, ServerConfig(port=0))
        await nursery.start(app.run)
        try:
            yield app, namesrv
        finally:
            app.shutdown()
            with trio.fail_after(10):
                await app.server.wait_closed()
            nursery.cancel_scope.cancel()


def heartbeat(client_id: str, group: str, topic: str) -> RemotingCommand:
    data = HeartbeatData(
        client_id=client_id,
        producer_data_set=[ProducerData("pg")],
        consumer_data_set=[
            ConsumerData(group, subscription_data_set=[SubscriptionData.build(topic, "TagA || TagB")])
        ],
    )
    return RemotingCommand.request(RequestCode.HEART_BEAT, EmptyHeader(), body=data.encode())


async def test_full_registration_at_start_lists_system_topics(tmp_path: Path) -> None:
    async with broker_with_namesrv(tmp_path) as (app, namesrv):
        with trio.fail_after(5):
            await namesrv.registered.wait()
        header, body = namesrv.registrations[0]
        assert header.broker_addr == f"127.0.0.1:{app.server.port}"
        assert (header.broker_name, header.cluster_name, header.broker_id) == (
            "broker-a",
            "DefaultCluster",
            0,
        )
        topics = body.topic_config_serialize_wrapper.topic_config_table
        assert topics["TBW102"].perm == 7
        assert {"DefaultCluster", "broker-a", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC"} <= set(
            topics
        )
    assert namesrv.unregistrations == 1


async def test_heartbeat_registers_consumer_and_creates_retry_topic(tmp_path: Path) -> None:
    async with (
        broker_with_namesrv(tmp_path) as (app, namesrv),
        connect(f"127.0.0.1:{app.server.port}") as conn,
    ):
        with trio.fail_after(5):
            await namesrv.registered.wait()
        resp = await conn.invoke(heartbeat("10.0.0.1@c1", "cg1", "TopicTest"), timeout_s=3)
        assert resp.code == ResponseCode.SUCCESS
        assert resp.ext_fields == {"IS_SUPPORT_HEART_BEAT_V2": "false", "IS_SUB_CHANGE": "true"}
        assert "%RETRY%cg1" in app.controller.topics.table
        await wait_until(
            lambda: any(
                list(b.topic_config_serialize_wrapper.topic_config_table) == ["%RETRY%cg1"]
                for _, b in namesrv.registrations
            ),
            5,
        )
        req = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg1"})
        resp = await conn.invoke(req, timeout_s=3)
        assert ConsumerListBody.decode(resp.body).consumer_id_list == ["10.0.0.1@c1"]
        info = app.controller.clients.consumers["cg1"]
        assert info.subscriptions["TopicTest"].code_set == [2598919, 2598920]
        assert "pg" in app.controller.clients.producers


async def test_second_consumer_triggers_notify_and_disconnect_removes_it(tmp_path: Path) -> None:
    notified = trio.Event()
    client_side = Dispatcher("client")

    def on_notify(ctx: RequestContext, req: RemotingCommand, header: Any) -> None:
        assert req.is_oneway
        assert req.ext_fields == {"consumerGroup": "cg1"}
        notified.set()

    client_side.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
    async with broker_with_namesrv(tmp_path) as (app, _namesrv):
        addr = f"127.0.0.1:{app.server.port}"
        async with connect(addr, client_side) as first:
            await first.invoke(heartbeat("c1", "cg1", "T"), timeout_s=3)
            async with connect(addr) as second:
                await second.invoke(heartbeat("c2", "cg1", "T"), timeout_s=3)
                with trio.fail_after(3):
                    await notified.wait()
                assert sorted(app.controller.clients.consumers["cg1"].client_ids()) == ["c1", "c2"]
            await wait_until(lambda: len(app.controller.clients.consumers["cg1"].channels) == 1, 3)
            resp = await first.invoke(
                RemotingCommand.request(
                    RequestCode.UNREGISTER_CLIENT, {"clientID": "c1", "consumerGroup": "cg1"}
                ),
                timeout_s=3,
            )
            assert resp.code == ResponseCode.SUCCESS
            assert "cg1" not in app.controller.clients.consumers
            resp = await first.invoke(
                RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg1"}),
                timeout_s=3,
            )
            assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "no consumer for this group, cg1")
