"""The NameServer end to end: our broker registers, routes and cluster info, KV config, expiry."""

from __future__ import annotations

from pathlib import Path

import trio

from broker.app import BrokerApp
from broker.config import BrokerConfig
from codec.bodies.route import ClusterInfo, KVTable, TopicList, TopicRouteData
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from gateway.client import connect
from gateway.server import ServerConfig
from namesrv.app import NamesrvApp
from namesrv.config import NamesrvConfig
from tests.helpers import wait_until


async def test_broker_registers_and_routes_are_served(tmp_path: Path) -> None:
    namesrv = NamesrvApp(NamesrvConfig(kv_config_path=str(tmp_path / "kv.json")), ServerConfig(port=0))
    async with trio.open_nursery() as nursery:
        await nursery.start(namesrv.run)
        naddr = f"127.0.0.1:{namesrv.server.port}"
        broker = BrokerApp(BrokerConfig(namesrv_addr=naddr, listen_port=0), ServerConfig(port=0))
        await nursery.start(broker.run)
        await wait_until(lambda: namesrv.routes.live, 5)
        async with connect(naddr) as conn:
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}), 3
            )
            assert resp.code == ResponseCode.SUCCESS
            assert b'"brokerAddrs":{"0":' in resp.body
            route = TopicRouteData.decode(resp.body)
            assert route.broker_datas[0].master_addr() == f"127.0.0.1:{broker.server.port}"
            assert route.queue_datas[0].perm == 7

            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"}), 3
            )
            assert resp.code == ResponseCode.TOPIC_NOT_EXIST
            assert (resp.remark or "").startswith("No topic route info in name server for the topic: Nope")

            info = ClusterInfo.decode(
                (await conn.invoke(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 3)).body
            )
            assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
            topics = TopicList.decode(
                (
                    await conn.invoke(
                        RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), 3
                    )
                ).body
            )
            assert "SCHEDULE_TOPIC_XXXX" in topics.topic_list

            kv = {"namespace": "ns", "key": "k", "value": "v"}
            assert (await conn.invoke(RemotingCommand.request(RequestCode.PUT_KV_CONFIG, kv), 3)).code == 0
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}), 3
            )
            assert resp.ext_fields == {"value": "v"}
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"}), 3
            )
            assert KVTable.decode(resp.body).table == {"k": "v"}
            assert (tmp_path / "kv.json").exists()
            await conn.invoke(
                RemotingCommand.request(RequestCode.DELETE_KV_CONFIG, {"namespace": "ns", "key": "k"}), 3
            )
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}), 3
            )
            assert resp.code == ResponseCode.QUERY_NOT_FOUND

            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}), 3
            )
            assert int(resp.ext_fields["wipeTopicCount"]) > 5  # type: ignore[index]
            route = TopicRouteData.decode(
                (
                    await conn.invoke(
                        RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}), 3
                    )
                ).body
            )
            assert route.queue_datas[0].perm == 5
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}), 3
            )
            assert resp.ext_fields == {"addTopicCount": resp.ext_fields["addTopicCount"]}  # type: ignore[index]

        broker.shutdown()
        await wait_until(lambda: not namesrv.routes.live, 10)
        namesrv.shutdown()


async def test_broker_dropped_when_its_connection_closes_and_after_expiry() -> None:
    namesrv = NamesrvApp(
        NamesrvConfig(broker_channel_expired_time=300, scan_not_active_broker_interval=100),
        ServerConfig(port=0),
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(namesrv.run)
        naddr = f"127.0.0.1:{namesrv.server.port}"
        broker = BrokerApp(BrokerConfig(namesrv_addr=naddr, listen_port=0), ServerConfig(port=0))
        req = broker.registrar.build_request()
        async with connect(naddr) as conn:
            assert (await conn.invoke(req, 3)).code == ResponseCode.SUCCESS
            assert namesrv.routes.live
        await wait_until(lambda: not namesrv.routes.live, 3)  # connection closed: dropped at once
        async with connect(naddr) as conn:
            await conn.invoke(broker.registrar.build_request(), 3)
            assert namesrv.routes.live
            await wait_until(lambda: not namesrv.routes.live, 3)  # no re-registration: expired
            assert namesrv.routes.route("TBW102") is None
        nursery.cancel_scope.cancel()
