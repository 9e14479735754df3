"""The operations requests of ``mqadmin`` against an in-process broker through the wire protocol:
batch updates, broker configuration, offset resets pushed to a live consumer, calls forwarded to
a consumer, runtime statistics, the lone-master answers, unknown codes, and the Prometheus
exporter. (The same subcommands through the real ``mqadmin``, side by side with the real broker,
are in compat_tests/test_admin_compat.py.)"""

from __future__ import annotations

import json
import logging
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import trio

from codec import fastjson
from codec.bodies.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from codec.bodies.route import KVTable
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from codec.java_properties import parse_properties
from codec.properties import DELAY
from gateway.transport.client import connect
from gateway.transport.dispatch import Dispatcher, RequestContext
from tests.broker.helpers import pull_request, running_broker, send_request

JAVA_RUNTIME_KEYS = {  # GET_BROKER_RUNTIME_INFO keys of a 5.3.3 broker (no timer wheel, no transient pool)
    "EndTransactionQueueSize", "EndTransactionThreadPoolQueueCapacity", "ackThreadPoolQueueCapacity",
    "ackThreadPoolQueueHeadWaitTimeMills", "ackThreadPoolQueueSize", "bootTimestamp", "brokerActive",
    "brokerVersion", "brokerVersionDesc", "commitLogDirCapacity", "commitLogDiskRatio", "commitLogMaxOffset",
    "commitLogMinOffset", "consumeQueueDiskRatio", "dispatchBehindBytes", "dispatchMaxBuffer",
    "earliestMessageTimeStamp", "getFoundTps", "getMessageEntireTimeMax", "getMissTps", "getTotalTps",
    "getTransferredTps", "litePullThreadPoolQueueCapacity", "litePullThreadPoolQueueHeadWaitTimeMills",
    "litePullThreadPoolQueueSize", "msgGetTotalTodayMorning", "msgGetTotalTodayNow",
    "msgGetTotalYesterdayMorning", "msgPutTotalTodayMorning", "msgPutTotalTodayNow",
    "msgPutTotalYesterdayMorning", "pageCacheLockTimeMills", "pullThreadPoolQueueCapacity",
    "pullThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueSize", "putLatency99", "putLatency999",
    "putMessageAverageSize", "putMessageDistributeTime", "putMessageEntireTimeMax", "putMessageFailedTimes",
    "putMessageSizeTotal", "putMessageTimesTotal", "putTps", "queryThreadPoolQueueCapacity",
    "queryThreadPoolQueueHeadWaitTimeMills", "queryThreadPoolQueueSize", "remainHowManyDataToFlush",
    "remainTransientStoreBufferNumbs", "runtime", "sendThreadPoolQueueCapacity",
    "sendThreadPoolQueueHeadWaitTimeMills", "sendThreadPoolQueueSize", "startAcceptSendRequestTimeStamp",
    "timerCongestNum", "timerDequeueTps", "timerEnqueueTps", "timerOffsetBehind", "timerReadBehind",
}  # fmt: skip


def sample(text: str, name: str, **labels: str) -> float:
    """The one sample of ``name`` whose labels include ``labels`` (fails if none or several)."""
    found = []
    for line in text.splitlines():
        match = re.match(rf"{name}\{{(.*)\}} (\S+)$", line)
        if match and all(f'{k}="{v}"' in match.group(1) for k, v in labels.items()):
            found.append(float(match.group(2)))
    assert len(found) == 1, (name, labels, found)
    return found[0]


def request(code: int, header: Any = None, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand.request(code, header if header is not None else EmptyHeader(), body=body)


def consumer_heartbeat(client_id: str, group: str, topic: str) -> RemotingCommand:
    data = HeartbeatData(
        client_id=client_id,
        consumer_data_set=[
            ConsumerData(
                group,
                consume_type="CONSUME_PASSIVELY",
                message_model="CLUSTERING",
                subscription_data_set=[SubscriptionData.build(topic, "*")],
            )
        ],
    )
    heartbeat = RemotingCommand.request(RequestCode.HEART_BEAT, EmptyHeader(), body=data.encode())
    heartbeat.version = 479  # V5_3_3: new enough for calls forwarded to consumers
    return heartbeat


async def test_runtime_info_counts_puts_and_gets(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (_app, conn):
        for i in range(5):
            assert (
                await conn.invoke(send_request("StatT", f"m{i}".encode()), 3)
            ).code == ResponseCode.SUCCESS
        pulled = await conn.invoke(pull_request("StatT", 0), 3)
        assert pulled.code == ResponseCode.SUCCESS
        resp = await conn.invoke(request(RequestCode.GET_BROKER_RUNTIME_INFO), 3)
        table = KVTable.decode(resp.body).table
        assert set(table) - {k for k in table if k.startswith("commitLogDiskRatio_")} == JAVA_RUNTIME_KEYS
        assert table["msgPutTotalTodayNow"] == "5"
        assert table["msgGetTotalTodayNow"] == "5"
        assert table["putMessageTimesTotal"] == "5"
        assert 0 < float(table["commitLogDiskRatio"]) <= 1
        assert int(table["putMessageSizeTotal"]) > 0
        delayed = await conn.invoke(send_request("StatT", b"later", {DELAY: "1"}), 3)
        assert delayed.code == ResponseCode.SUCCESS

        async def delivered() -> dict[str, str]:
            resp = await conn.invoke(request(RequestCode.GET_BROKER_RUNTIME_INFO), 3)
            return KVTable.decode(resp.body).table

        with trio.fail_after(10):
            while (await delivered()).get("scheduleMessageOffset_1") != "1,1":  # noqa: ASYNC110 - polling the broker over the wire
                await trio.sleep(0.2)


async def test_topic_and_group_lists_and_system_topics(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (app, conn):
        topics = {
            "topicConfigList": [{"topicName": "L1", "readQueueNums": 3, "writeQueueNums": 3, "perm": 6}]
        }
        resp = await conn.invoke(
            request(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=fastjson.dumps(topics)), 3
        )
        assert resp.code == ResponseCode.SUCCESS
        assert app.controller.topics.table["L1"].read_queue_nums == 3
        bad = {"topicConfigList": [{"topicName": "SCHEDULE_TOPIC_XXXX"}]}
        resp = await conn.invoke(
            request(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=fastjson.dumps(bad)), 3
        )
        assert resp.code == ResponseCode.INVALID_PARAMETER
        groups = {"groupConfigList": [{"groupName": "G1", "retryMaxTimes": 3}, {"groupName": "G2"}]}
        code = RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST
        assert (await conn.invoke(request(code, body=fastjson.dumps(groups)), 3)).code == ResponseCode.SUCCESS
        assert app.controller.groups.table["G1"].retry_max_times == 3
        resp = await conn.invoke(request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER), 3)
        listed = set(json.loads(resp.body)["topicList"])
        assert {
            "TBW102",
            "SCHEDULE_TOPIC_XXXX",
            "rmq_sys_REVIVE_LOG_DefaultCluster",
            "rmq_sys_wheel_timer",
        } <= listed


async def test_broker_config_update_is_applied_refused_and_persisted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_broker(tmp_path) as (app, conn):
        resp = await conn.invoke(request(RequestCode.GET_BROKER_CONFIG), 3)
        props = parse_properties(resp.body.decode())
        assert len(props) >= 411
        assert props["flushDiskType"] == "ASYNC_FLUSH"
        assert props["transactionTimeOut"] == "6000"
        assert "transactionTimeout" not in props
        # listenPort + 1 by default; when another process holds that port (the suite's other
        # workers pick free ports too) the broker binds a free one and answers that instead.
        ha_port = app.broker.config.ha_listen_port
        assert ha_port == app.server.port + 1 or "(listenPort + 1) is taken" in caplog.text
        assert props["haListenPort"] == str(ha_port)
        black = await conn.invoke(request(RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerConfigPath=/x\n"), 3)
        assert (black.code, black.remark) == (
            ResponseCode.NO_PERMISSION,
            "Can not update config in black list.",
        )
        body = b"defaultTopicQueueNums=3\ntransactionTimeOut=7000\nfileReservedTime=12\n"
        assert (await conn.invoke(request(RequestCode.UPDATE_BROKER_CONFIG, body=body), 3)).code == 0
        assert app.controller.config.default_topic_queue_nums == 3
        assert app.controller.config.transaction_timeout == 7000
        assert app.controller.store.config.file_reserved_time == 12
        props = parse_properties((await conn.invoke(request(RequestCode.GET_BROKER_CONFIG), 3)).body.decode())
        assert (props["defaultTopicQueueNums"], props["fileReservedTime"]) == ("3", "12")
        persisted = parse_properties((tmp_path / "store" / "config" / "broker.properties").read_text())
        assert persisted["defaultTopicQueueNums"] == "3"


async def test_reset_offset_commits_and_pushes_to_the_live_consumer(tmp_path: Path) -> None:
    pushed: list[RemotingCommand] = []
    client_side = Dispatcher("client")

    def on_reset(_ctx: RequestContext, req: RemotingCommand, _header: Any) -> None:
        pushed.append(req)

    client_side.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, on_reset)
    async with running_broker(tmp_path) as (app, conn):
        for i in range(4):
            await conn.invoke(send_request("RsT", f"m{i}".encode()), 3)
        header = {"topic": "RsT", "group": "nobody", "timestamp": "-1", "isForce": "true"}
        resp = await conn.invoke(request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header), 3)
        assert (resp.code, resp.remark) == (
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            "Group nobody does not exist",
        )
        async with connect(f"127.0.0.1:{app.server.port}", client_side) as consumer:
            await consumer.invoke(consumer_heartbeat("c1", "rsG", "RsT"), 3)
            header["group"] = "rsG"
            resp = await conn.invoke(request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header), 3)
            assert resp.code == ResponseCode.SUCCESS
            assert b'"queueId":0,"topic":"RsT"}:4' in resp.body
            assert app.controller.offsets.query("rsG", "RsT", 0) == 4
            with trio.fail_after(3):
                while not pushed:  # noqa: ASYNC110 - polling what the client side received
                    await trio.sleep(0.01)
            assert pushed[0].ext_fields is not None
            assert pushed[0].ext_fields["group"] == "rsG"
            assert pushed[0].body == resp.body
        header["timestamp"] = "0"  # no consumer online: the reset still happens
        resp = await conn.invoke(request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header), 3)
        assert resp.code == ResponseCode.SUCCESS
        assert app.controller.offsets.query("rsG", "RsT", 0) == 0


async def test_running_info_and_direct_consume_are_forwarded(tmp_path: Path) -> None:
    client_side = Dispatcher("client")
    seen: list[RemotingCommand] = []

    def on_running_info(_ctx: RequestContext, req: RemotingCommand, _header: Any) -> RemotingCommand:
        seen.append(req)
        return req.make_response(ResponseCode.SUCCESS, body=b'{"properties":{"x":"1"}}')

    def on_direct(_ctx: RequestContext, req: RemotingCommand, _header: Any) -> RemotingCommand:
        seen.append(req)
        return req.make_response(ResponseCode.SUCCESS, body=b'{"consumeResult":"CR_SUCCESS"}')

    client_side.register(RequestCode.GET_CONSUMER_RUNNING_INFO, on_running_info)
    client_side.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, on_direct)
    async with running_broker(tmp_path) as (app, conn):
        sent = await conn.invoke(send_request("FwT", b"direct"), 3)
        offset_id = (sent.ext_fields or {})["msgId"]
        info = {"consumerGroup": "fwG", "clientId": "c9", "jstackEnable": "false"}
        resp = await conn.invoke(request(RequestCode.GET_CONSUMER_RUNNING_INFO, info), 3)
        assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "The Consumer <fwG> <c9> not online")
        async with connect(f"127.0.0.1:{app.server.port}", client_side) as consumer:
            await consumer.invoke(consumer_heartbeat("c9", "fwG", "FwT"), 3)
            resp = await conn.invoke(request(RequestCode.GET_CONSUMER_RUNNING_INFO, info), 5)
            assert (resp.code, resp.body) == (ResponseCode.SUCCESS, b'{"properties":{"x":"1"}}')
            direct = {"consumerGroup": "fwG", "clientId": "c9", "msgId": offset_id, "topic": "FwT"}
            resp = await conn.invoke(request(RequestCode.CONSUME_MESSAGE_DIRECTLY, direct), 5)
            assert resp.body == b'{"consumeResult":"CR_SUCCESS"}'
        forwarded = seen[-1]
        assert forwarded.ext_fields is not None
        assert forwarded.ext_fields["brokerName"] == "broker-a"
        assert b"direct" in forwarded.body  # the stored record travels with the request


async def test_lone_master_views_and_unknown_codes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with running_broker(tmp_path) as (_app, conn):
        await conn.invoke(send_request("VwT", b"x"), 3)
        ha = json.loads((await conn.invoke(request(RequestCode.GET_BROKER_HA_STATUS), 3)).body)
        assert (ha["master"], ha["inSyncSlaveNums"], ha["haConnectionInfo"]) == (True, 0, [])
        cold = json.loads((await conn.invoke(request(RequestCode.GET_COLD_DATA_FLOW_CTR_INFO), 3)).body)
        assert cold["globalColdReadThreshold"] == 100 * 1024 * 1024
        check = await conn.invoke(request(RequestCode.CHECK_ROCKSDB_CQ_WRITE_PROGRESS, {"topic": "VwT"}), 3)
        assert json.loads(check.body) == {"checkStatus": 2}
        export = await conn.invoke(
            request(RequestCode.EXPORT_ROCKSDB_CONFIG_TO_JSON, {"configType": "topics"}), 3
        )
        assert (export.code, export.remark) == (ResponseCode.SUCCESS, "export done.")
        cq = await conn.invoke(
            request(
                RequestCode.QUERY_CONSUME_QUEUE, {"topic": "VwT", "queueId": "0", "index": "0", "count": "5"}
            ),
            3,
        )
        body = json.loads(cq.body)
        assert (body["maxQueueIndex"], len(body["queueData"])) == (1, 1)
        for code in (RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, RequestCode.DELETE_EXPIRED_COMMITLOG):
            assert (await conn.invoke(request(code), 3)).code == ResponseCode.SUCCESS
        with caplog.at_level(logging.INFO, logger="gateway.transport.dispatch"):
            for _ in range(3):
                resp = await conn.invoke(request(RequestCode.PEEK_MESSAGE), 3)
                assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        lines = [r.getMessage() for r in caplog.records if "not supported" in r.getMessage()]
        assert len(lines) == 1
        assert "PEEK_MESSAGE (200052)" in lines[0]


async def test_prometheus_endpoint_counts_messages_in_and_out(tmp_path: Path) -> None:
    async with running_broker(
        tmp_path,
        metrics_exporter_type="PROM",
        metrics_prom_exporter_host="127.0.0.1",
        metrics_prom_exporter_port=0,
    ) as (app, conn):
        exporter = app.broker.metrics  # created, served and closed by the broker's lifecycle
        assert exporter is not None
        for i in range(7):
            await conn.invoke(send_request("PromT", f"m{i}".encode()), 3)
        await conn.invoke(pull_request("PromT", 0), 3)
        caught_up = await conn.invoke(pull_request("PromT", 7, suspend_ms=100), 3)  # held, then answered
        assert caught_up.code == ResponseCode.PULL_NOT_FOUND
        commit = {"consumerGroup": "cg", "topic": "PromT", "queueId": "0", "commitOffset": "2"}
        assert (await conn.invoke(request(RequestCode.UPDATE_CONSUMER_OFFSET, commit), 3)).code == 0
        exporter.refresh()
        url = f"http://127.0.0.1:{exporter.port}/metrics"

        def scrape() -> str:
            with urllib.request.urlopen(url, timeout=5) as r:
                return str(r.read().decode())

        text = await trio.to_thread.run_sync(scrape)
    assert exporter.server is None  # the stopped broker closed its endpoint
    with pytest.raises(OSError, match="refused"):
        await trio.to_thread.run_sync(scrape)
    base = {"cluster": "DefaultCluster", "node_id": "broker-a", "node_type": "broker", "topic": "PromT"}
    assert sample(text, "rocketmq_messages_in_total", message_type="normal", is_system="false", **base) == 7
    assert sample(text, "rocketmq_messages_out_total", consumer_group="cg", is_system="false", **base) == 7
    assert sample(text, "rocketmq_throughput_in_total", **base) > 7 * len("m0")
    assert sample(text, "rocketmq_consumer_lag_messages", consumer_group="cg", **base) == 5
    assert sample(text, "rocketmq_rpc_latency_milliseconds_count", request_code="send_message_v2") == 7
    for held in ("false", "true"):  # Java labels a request parked by long polling (isSuspended)
        assert sample(
            text, "rocketmq_rpc_latency_milliseconds_count", request_code="pull_message", is_long_polling=held
        ) == 1
    assert re.search(r"^rocketmq_topic_number\{.*\} \d+\.0$", text, re.M)


async def test_refusals_are_answered_counted_and_logged_by_the_dispatcher(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A processor's refusal reaches the client with Java's code, remark and response fields, and
    the dispatcher counts each one and logs one line per request code and error code."""
    async with running_broker(tmp_path) as (app, conn):
        before = app.dispatcher.statistics()["errors"]
        with caplog.at_level(logging.INFO, logger="gateway.transport.dispatch"):
            for _ in range(2):
                resp = await conn.invoke(request(RequestCode.GET_TOPIC_CONFIG, {"topic": "NoSuchTopic"}), 3)
                assert (resp.code, resp.remark) == (
                    ResponseCode.TOPIC_NOT_EXIST,
                    "No topic in this broker. topic: NoSuchTopic",
                )
            query = {"topic": "NoSuchTopic", "key": "k", "maxNum": "32", "beginTimestamp": "0"}
            resp = await conn.invoke(request(RequestCode.QUERY_MESSAGE, {**query, "endTimestamp": "1"}), 3)
            assert resp.code == ResponseCode.QUERY_NOT_FOUND
            assert resp.remark == "can not find message, maybe time range not correct"
            assert set(resp.ext_fields or {}) == {"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"}
        assert app.dispatcher.statistics()["errors"] - before == 3
        lines = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
        assert len(lines) == 2
        assert any("GET_TOPIC_CONFIG" in line and "(code 17)" in line for line in lines)
