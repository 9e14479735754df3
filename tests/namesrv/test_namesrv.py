"""The NameServer end to end: our broker registers, routes and cluster info, KV config, expiry."""

from __future__ import annotations

from pathlib import Path

import trio

from broker.app import BrokerApp
from codec.bodies.route import ClusterInfo, KVTable, TopicList, TopicRouteData
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from gateway.transport.client import connect
from gateway.transport.config import ServerConfig
from namesrv.app import NamesrvApp
from namesrv.config import NamesrvConfig
from tests.helpers import broker_config, registrar_of, wait_until


async def test_broker_registers_and_routes_are_served(tmp_path: Path) -> None:
    namesrv = NamesrvApp(NamesrvConfig(kv_config_path=str(tmp_path / "kv.json")), ServerConfig(port=0))
    async with trio.open_nursery() as nursery:
        await nursery.start(namesrv.run)
        naddr = f"127.0.0.1:{namesrv.server.port}"
        broker = BrokerApp(broker_config(tmp_path, namesrv_addr=naddr), ServerConfig(port=0))
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
            assert resp.remark == (  # as the 5.3.3 NameServer writes it (FAQUrl.suggestTodo)
                "No topic route info in name server for the topic: Nope\n"
                "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
            )

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


async def test_broker_dropped_when_its_connection_closes_and_after_expiry(tmp_path: Path) -> None:
    namesrv = NamesrvApp(
        NamesrvConfig(broker_channel_expired_time=300, scan_not_active_broker_interval=100),
        ServerConfig(port=0),
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(namesrv.run)
        naddr = f"127.0.0.1:{namesrv.server.port}"
        broker = registrar_of(broker_config(tmp_path, namesrv_addr=naddr))
        req = broker.build_request()
        async with connect(naddr) as conn:
            assert (await conn.invoke(req, 3)).code == ResponseCode.SUCCESS
            assert namesrv.routes.live
        await wait_until(lambda: not namesrv.routes.live, 3)  # connection closed: dropped at once
        async with connect(naddr) as conn:
            await conn.invoke(broker.build_request(), 3)
            assert namesrv.routes.live
            await wait_until(lambda: not namesrv.routes.live, 3)  # no re-registration: expired
            assert namesrv.routes.route("TBW102") is None
        nursery.cancel_scope.cancel()


async def test_data_version_compressed_registration_and_topic_lists(tmp_path: Path) -> None:
    from codec.bodies.register import DataVersion, RegisterBrokerBody
    from codec.hashing import body_crc32
    from codec.headers.namesrv import QueryDataVersionRequestHeader, RegisterBrokerRequestHeader

    namesrv = NamesrvApp(NamesrvConfig(), ServerConfig(port=0))
    async with trio.open_nursery() as nursery:
        await nursery.start(namesrv.run)
        naddr = f"127.0.0.1:{namesrv.server.port}"
        broker = registrar_of(broker_config(tmp_path, namesrv_addr=naddr, listen_port=10999))
        plain = broker.build_request()
        body = RegisterBrokerBody.decode(plain.body)
        compressed = body.encode_compressed()
        header = RegisterBrokerRequestHeader.from_ext_fields(plain.ext_fields)
        header.compressed = True
        header.body_crc32 = body_crc32(compressed)
        async with connect(naddr) as conn:
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body=compressed), 3
            )
            assert resp.code == ResponseCode.SUCCESS
            assert namesrv.routes.route("TBW102") is not None

            header.body_crc32 = 12345
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body=compressed), 3
            )
            assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")

            version = body.topic_config_serialize_wrapper.data_version
            q = QueryDataVersionRequestHeader("broker-a", "127.0.0.1:10999", "DefaultCluster", 0)
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, q, body=version.encode()), 3
            )
            assert resp.ext_fields == {"changed": "false"}
            assert DataVersion.decode(resp.body) == version
            newer = DataVersion(version.state_version, version.timestamp, version.counter + 1)
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, q, body=newer.encode()), 3
            )
            assert resp.ext_fields == {"changed": "true"}

            resp = await conn.invoke(RemotingCommand.request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS), 3)
            system = TopicList.decode(resp.body)
            assert set(system.topic_list) == {"DefaultCluster", "broker-a"}
            assert system.broker_addr == "127.0.0.1:10999"
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"}), 3
            )
            assert "TBW102" in TopicList.decode(resp.body).topic_list
            resp = await conn.invoke(RemotingCommand.request(RequestCode.GET_UNIT_TOPIC_LIST), 3)
            assert TopicList.decode(resp.body).topic_list == []
            resp = await conn.invoke(RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG), 3)
            assert b"orderMessageEnable=false" in resp.body
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/etc/x\n"), 3
            )
            assert resp.code == ResponseCode.NO_PERMISSION
            resp = await conn.invoke(
                RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "TBW102"}), 3
            )
            assert namesrv.routes.route("TBW102") is None
        nursery.cancel_scope.cancel()
