"""The operations subcommands of ``mqadmin`` 5.3.3 and the statistics and metrics behind
them, run against our gateway AND the real Apache RocketMQ 5.3.3 broker after the same traffic
(a live push consumer, a producer), with identical assertions.

Each subcommand's output is checked for what an operator reads (success lines, table headers,
rows naming the topic and group, figures that moved with the traffic), and the two targets'
outputs are compared for shape: the same keys in ``brokerStatus``, every real key in
``getBrokerConfig`` / ``getNamesrvConfig``. The Prometheus endpoint of both (``metricsExporterType
=PROM``) is scraped after a bounded load and its counters checked against the messages sent and
consumed; during the load our gateway also gets a few gRPC sends, timed next to the remoting
requests (the reference is a broker without a Proxy in front, and Java's Proxy times none).

To keep JVM start-ups few, the subcommands run in batches inside one JVM
(:mod:`compat_tests.mqadmin_batch`), and the two targets run in parallel threads.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from compat_tests.golden_servers import free_port
from compat_tests.mqadmin_batch import mqadmin_batch
from compat_tests.scenario import (
    CLIENT_LINES,
    ScenarioProcess,
    of,
    run_scenario,
    start_scenario,
)
from compat_tests.targets import GatewayTarget, ReferenceTarget, Target, start_target
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

pytestmark = [pytest.mark.compat, pytest.mark.slow]

LINE = CLIENT_LINES[-1]
TOPIC, GROUP = "OpsTopic", "opsGroup"
SENT = 300  # messages of the first producer run; the consumer must see them all
LOAD = 600  # messages of the second run, just before the statistics are read
STEP_S = 120.0
RESET_WAIT_S = 60.0  # the client waits 10 s after RESET_CONSUMER_CLIENT_OFFSET, then rebalances
MIN_UPTIME_S = 70.0  # of the broker before the load whose statistics are read
# statsAll's TPS come from StatsItem's minute samples, taken every 10 s: the load must be at least
# one sample old when they are read, and (for brokerStatus's putTps) less than a minute old.
MINUTE_SAMPLE_S = 12.0
GRPC_TOPIC = "OpsGrpcTopic"  # created on both targets; only ours gets gRPC sends
GRPC_SENT = 5
SEND_MESSAGE = "/apache.rocketmq.v2.MessagingService/SendMessage"


@dataclass
class Run:
    """Everything one target produced: the mqadmin outputs, the clients' events, the scrapes."""

    name: str
    out: dict[str, str] = field(default_factory=dict)
    sent: int = 0
    consumed_distinct: int = 0
    redelivered: int = 0
    metrics_before: str = ""
    metrics_after: str = ""
    consumed_between: int = 0
    sent_between: int = 0
    load_age_s: float = 0.0  # from the load's last send to the start of the statistics batch
    grpc_codes: list[int] = field(default_factory=list)  # of the gRPC sends (gateway only)


def broker_addr(target: Target) -> str:
    if isinstance(target, GatewayTarget):
        return f"127.0.0.1:{target.broker_port}"
    assert isinstance(target, ReferenceTarget)
    return f"127.0.0.1:{target.servers.broker_port}"


def grpc_address(target: Target) -> str | None:
    """The gRPC endpoint of our gateway process, from its ready line (None: the target has none)."""
    if not isinstance(target, GatewayTarget):
        return None
    found = re.search(r"ready: .*grpc=(\S+)", target.log.read_text(errors="replace"))
    return found.group(1) if found else None


def grpc_sends(address: str, count: int) -> list[int]:
    """``count`` SendMessage calls with grpcio, as a 5.x producer makes them; their status codes."""
    metadata = [("x-mq-client-id", "ops-grpc-producer"), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v2")]
    codes = []
    with grpc.insecure_channel(address) as channel:
        send = channel.unary_unary(
            SEND_MESSAGE,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.SendMessageResponse.FromString,
        )
        for i in range(count):
            props = pb.SystemProperties(message_id=f"0A0000010000000000000000{i:08X}", message_type=pb.NORMAL)
            message = pb.Message(topic=pb.Resource(name=GRPC_TOPIC), body=b"grpc", system_properties=props)
            answer = send(pb.SendMessageRequest(messages=[message]), metadata=metadata, timeout=STEP_S)
            codes.append(answer.status.code)
    return codes


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return str(response.read().decode())


def counter_sum(text: str, name: str, **labels: str) -> float:
    """Sum of a metric's samples whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"{name}\{{(.*)\}} (\S+)(?: \d+)?$", line)  # Java's exporter adds a timestamp
        if match and all(f'{k}="{v}"' in match.group(1) for k, v in labels.items()):
            total += float(match.group(2))
    return total


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def exercise(name: str, workdir: Path) -> Run:
    """The scenario, identical for both targets."""
    metrics_port = free_port(("127.0.0.1",))
    conf = {
        "metricsExporterType": "PROM",
        "metricsPromExporterHost": "127.0.0.1",
        "metricsPromExporterPort": str(metrics_port),
    }
    target = start_target(name, workdir / "servers", conf)
    started = time.monotonic()
    run = Run(name)
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    consumer: ScenarioProcess | None = None
    try:
        naddr, addr = target.namesrv_addr, broker_addr(target)
        first = mqadmin_batch(
            naddr,
            {
                "updateTopic": ["updateTopic", "-b", addr, "-t", TOPIC, "-r", "2", "-w", "2"],
                "updateTopic_grpc": ["updateTopic", "-b", addr, "-t", GRPC_TOPIC, "-r", "1", "-w", "1"],
            },
            home,
        )
        assert "success" in first["updateTopic"], first
        assert "success" in first["updateTopic_grpc"], first
        sent = of(
            run_scenario(LINE, "produce", naddr, home, STEP_S, topic=TOPIC, count=SENT, group="opsProducer"),
            "sent",
        )
        consumer = start_scenario(LINE, "consume", naddr, home, 400, topic=TOPIC, group=GROUP, duration=360)
        wait_for(
            lambda: len({e["uid"] for e in of(consumer.events(), "received")}) >= len(sent),
            STEP_S,
            "first consumption",
        )
        conn = mqadmin_batch(naddr, {"conn": ["consumerConnection", "-g", GROUP]}, home)["conn"]
        client_id = next(line.split()[0] for line in conn.splitlines() if "@" in line)
        # putTps and statsAll's TPS are over the last minute: the load goes in once the broker has
        # the 61 one-second samples putTps needs (Java prints an empty field before), and the
        # statistics are read as soon as it has been consumed.
        time.sleep(max(0.0, started + MIN_UPTIME_S - time.monotonic()))
        run.metrics_before = scrape(metrics_port)
        load = start_scenario(LINE, "produce", naddr, home, STEP_S, topic=TOPIC, count=LOAD, group="opsLoad")
        grpc_addr = grpc_address(target)
        if grpc_addr is not None:
            run.grpc_codes = grpc_sends(grpc_addr, GRPC_SENT)
        load_sent = of(load.wait(), "sent")
        load_ended = time.monotonic()
        wait_for(
            lambda: len({e["uid"] for e in of(consumer.events(), "received")}) >= len(sent) + len(load_sent),
            STEP_S,
            "the load's consumption",
        )
        run.sent_between = len(load_sent)
        run.consumed_between = len({e["uid"] for e in of(consumer.events(), "received")}) - len(sent)
        time.sleep(2)  # the consumer commits offsets every 5 s; let pulls report what was delivered
        run.metrics_after = scrape(metrics_port)
        (workdir / "metrics-before.txt").write_text(run.metrics_before)
        (workdir / "metrics-after.txt").write_text(run.metrics_after)
        workdir.joinpath("topics.json").write_text(
            json.dumps([{"topicName": "OpsList1", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6},
                        {"topicName": "OpsList2", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}])
        )  # fmt: skip
        workdir.joinpath("groups.json").write_text(
            json.dumps([{"groupName": "opsListG1", "retryMaxTimes": 5}, {"groupName": "opsListG2"}])
        )
        msg_id = sent[3]["msgId"]
        time.sleep(max(0.0, load_ended + MINUTE_SAMPLE_S - time.monotonic()))
        run.load_age_s = time.monotonic() - load_ended
        run.out = mqadmin_batch(
            naddr,
            {
                "brokerStatus": ["brokerStatus", "-b", addr],
                "statsAll": ["statsAll", "-t", TOPIC],
                "clusterList_m": ["clusterList", "-m"],
                "clusterList": ["clusterList"],
                "getBrokerConfig": ["getBrokerConfig", "-b", addr],
                "getNamesrvConfig": ["getNamesrvConfig"],
                "topicList": ["topicList"],
                "updateTopicList": ["updateTopicList", "-b", addr, "-f", str(workdir / "topics.json")],
                "updateBrokerConfig": [
                    "updateBrokerConfig",
                    "-b",
                    addr,
                    "-k",
                    "defaultTopicQueueNums",
                    "-v",
                    "6",
                ],
                "updateBrokerConfig_black": [
                    "updateBrokerConfig",
                    "-b",
                    addr,
                    "-k",
                    "brokerConfigPath",
                    "-v",
                    "/x",
                ],
                "updateSubGroupList": ["updateSubGroupList", "-b", addr, "-f", str(workdir / "groups.json")],
                "exportMetrics": ["exportMetrics", "-c", "DefaultCluster", "-f", str(workdir / "metrics")],
                "cleanExpiredCQ": ["cleanExpiredCQ", "-b", addr],
                "consumerStatus": ["consumerStatus", "-g", GROUP],
                "consumerStatus_i": ["consumerStatus", "-g", GROUP, "-i", client_id],
                "consumerProgress_s": ["consumerProgress", "-g", GROUP, "-s", "true"],
                "queryMsgByUniqueKey_d": [
                    "queryMsgByUniqueKey",
                    "-i",
                    msg_id,
                    "-t",
                    TOPIC,
                    "-g",
                    GROUP,
                    "-d",
                    client_id,
                ],
                "cleanUnusedTopic": ["cleanUnusedTopic", "-b", addr],
                "brokerConsumeStats": ["brokerConsumeStats", "-b", addr],
                "queryCq": ["queryCq", "-t", TOPIC, "-q", "0", "-i", "0", "-c", "3", "-b", addr],
                "producer": ["producer", "-b", addr],
                "deleteExpiredCommitLog": ["deleteExpiredCommitLog", "-b", addr],
                "haStatus": ["haStatus", "-b", addr],
                "getColdDataFlowCtrInfo": ["getColdDataFlowCtrInfo", "-b", addr],
                "checkRocksdbCqWriteProgress": [
                    "checkRocksdbCqWriteProgress",
                    "-c",
                    "DefaultCluster",
                    "-t",
                    TOPIC,
                ],
                "rocksDBConfigToJson": ["rocksDBConfigToJson", "-c", "DefaultCluster"],
                "resetOffsetByTime_offline": ["resetOffsetByTime", "-g", "opsNobody", "-t", TOPIC, "-s", "0"],
                "resetOffsetByTime": ["resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "0"],
            },
            home,
        )
        # The live consumer is told to start over: it receives the stored messages again.
        wait_for(
            lambda: len(of(consumer.events(), "received")) >= 2 * (len(sent) + len(load_sent)),
            RESET_WAIT_S,
            "redelivery after resetOffsetByTime",
        )
        run.out.update(
            mqadmin_batch(
                naddr,
                {
                    "exportMetadata": ["exportMetadata", "-c", "DefaultCluster", "-f", str(workdir / "meta")],
                    "getBrokerConfig_after": ["getBrokerConfig", "-b", addr],
                    "topicList_after": ["topicList"],
                    "skipAccumulatedMessage": ["skipAccumulatedMessage", "-g", GROUP, "-t", TOPIC],
                },
                home,
            )
        )
        run.out["metadata.json"] = (workdir / "meta" / "metadata.json").read_text()
        (workdir / "outputs.json").write_text(json.dumps(run.out, indent=1))  # for a side-by-side look
        events = consumer.stop()
        received = of(events, "received")
        run.consumed_distinct = len({e["uid"] for e in received})
        run.redelivered = len(received) - run.consumed_distinct
        run.sent = len(sent) + len(load_sent)
        return run
    finally:
        if consumer is not None:
            consumer.stop()
        target.discard()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Both targets through the same scenario, in parallel."""
    with ThreadPoolExecutor(2) as pool:
        futures = {n: pool.submit(exercise, n, tmp_path_factory.mktemp(n)) for n in ("gateway", "reference")}
        return {n: f.result() for n, f in futures.items()}


TARGETS = ("gateway", "reference")


def kv_keys(text: str, sep: str) -> set[str]:
    return {line.split(sep, 1)[0].strip() for line in text.splitlines() if sep in line}


@pytest.mark.parametrize("name", TARGETS)
def test_no_subcommand_is_refused(runs: dict[str, Run], name: str) -> None:
    for command, text in runs[name].out.items():
        assert "not supported" not in text, (command, text)


@pytest.mark.parametrize("name", TARGETS)
def test_updates_are_applied(runs: dict[str, Run], name: str) -> None:
    out = runs[name].out
    assert "submit batch of topic config" in out["updateTopicList"]
    assert "success" in out["updateTopicList"]
    assert {"OpsList1", "OpsList2"} <= set(out["topicList_after"].split())
    assert "update broker config success" in out["updateBrokerConfig"]
    assert re.search(r"defaultTopicQueueNums\s+=\s+6\b", out["getBrokerConfig_after"])
    assert "CODE: 16" in out["updateBrokerConfig_black"]
    assert "Can not update config in black list" in out["updateBrokerConfig_black"]
    assert "submit batch of group config" in out["updateSubGroupList"]
    meta = json.loads(out["metadata.json"])
    assert TOPIC in meta["topicConfigTable"]
    assert "OpsList1" in meta["topicConfigTable"]
    assert meta["subscriptionGroupTable"]["opsListG1"]["retryMaxTimes"] == 5
    for command in ("cleanExpiredCQ", "cleanUnusedTopic", "deleteExpiredCommitLog"):
        assert out[command].strip() == "success", (command, out[command])
    assert "export" in out["exportMetrics"]
    assert "success" in out["exportMetrics"]


@pytest.mark.parametrize("name", TARGETS)
def test_calls_forwarded_to_the_consumer(runs: dict[str, Run], name: str) -> None:
    out = runs[name].out
    assert re.search(r"^1\s+\S+@\S+\s+V5_3_3\s+", out["consumerStatus"], re.M), out["consumerStatus"]
    assert "Rebalance OK" in out["consumerStatus"]
    assert "#Consumer Properties#" in out["consumerStatus_i"]
    assert "PROP_CONSUME_TYPE" in out["consumerStatus_i"]
    assert "CONSUME_PASSIVELY" in out["consumerStatus_i"]
    assert "#Client IP" in out["consumerProgress_s"]
    rows = [r for r in out["consumerProgress_s"].splitlines() if r.startswith(TOPIC)]
    assert len(rows) == 2, rows
    assert all("N/A" not in r.split()[5] for r in rows), rows
    assert "consumeResult=CR_SUCCESS" in out["queryMsgByUniqueKey_d"], out["queryMsgByUniqueKey_d"]


@pytest.mark.parametrize("name", TARGETS)
def test_offset_resets(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    out = run.out
    assert "CODE: 26" in out["resetOffsetByTime_offline"]
    assert "does not exist" in out["resetOffsetByTime_offline"]
    rows = [r.split() for r in out["resetOffsetByTime"].splitlines() if r.startswith("broker-a")]
    assert sorted(rows) == [["broker-a", "0", "0"], ["broker-a", "1", "0"]], out["resetOffsetByTime"]
    assert run.redelivered >= run.sent, "the live consumer did not start over after the reset"
    skipped = [r.split() for r in out["skipAccumulatedMessage"].splitlines() if r.startswith("broker-a")]
    assert len(skipped) == 2
    assert sum(int(r[2]) for r in skipped) >= run.sent  # the max offsets: every message stored


@pytest.mark.parametrize("name", TARGETS)
def test_views_of_a_lone_master(runs: dict[str, Run], name: str) -> None:
    out = runs[name].out
    assert re.search(r"^#SlaveNum\s+0$", out["haStatus"], re.M), out["haStatus"]
    assert "#MasterCommitLogMaxOffset" in out["haStatus"]
    assert '"globalColdReadThreshold":104857600' in out["getColdDataFlowCtrInfo"]
    assert "check doing" in out["checkRocksdbCqWriteProgress"]
    assert "broker export done." in out["rocksDBConfigToJson"]
    assert re.search(
        r"producer group \(\S+\) instance : clientId=\S+,remoteIP=/127\.0\.0\.1:\d+, language=JAVA",
        out["producer"],
    )
    cq = out["queryCq"]
    bounds = re.search(r"max: (\d+), min: 0", cq)
    assert bounds is not None, cq
    assert int(bounds.group(1)) > 0
    assert cq.count("physicSize=") == 3
    stats = [r.split() for r in out["brokerConsumeStats"].splitlines() if r.startswith(TOPIC)]
    assert {r[1] for r in stats} == {GROUP}
    assert len(stats) == 2


@pytest.mark.parametrize("name", TARGETS)
def test_statistics_move_with_the_traffic(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    out = run.out
    row = next(r.split() for r in out["clusterList_m"].splitlines() if r.startswith("DefaultCluster"))
    in_today, out_today = int(row[4]), int(row[5])
    assert in_today >= run.sent, row
    assert out_today >= run.sent, row
    status = dict(
        (k.strip(), v.strip())
        for k, v in (line.split(":", 1) for line in out["brokerStatus"].splitlines() if ":" in line)
    )
    assert int(status["msgPutTotalTodayNow"]) >= run.sent
    assert int(status["msgGetTotalTodayNow"]) >= run.sent
    assert 0 < float(status["commitLogDiskRatio"]) < 1
    assert MINUTE_SAMPLE_S <= run.load_age_s < 45, f"statistics read {run.load_age_s:.1f} s after the load"
    # The last minute saw the load.
    assert float(status["putTps"].split()[1]) > 0, (status["putTps"], f"load age {run.load_age_s:.1f} s")
    cluster = next(r for r in out["clusterList"].splitlines() if r.startswith("DefaultCluster"))
    assert re.search(r"\s0\.\d{4}\s+true$", cluster), cluster  # #SPACE: disk ratio of the store
    stats_row = next(r.split() for r in out["statsAll"].splitlines() if r.split()[:2] == [TOPIC, GROUP])
    assert float(stats_row[3]) > 0, (stats_row, f"load age {run.load_age_s:.1f} s")  # in TPS
    assert float(stats_row[4]) > 0, stats_row  # out TPS
    # 24-hour totals come from samples (StatsItem's minute samples): the newest sends may not be in
    # the last sample yet (the real broker once showed 600 of 900), so they must only have moved.
    assert 0 < int(stats_row[5]) <= run.sent, stats_row
    assert int(stats_row[6]) > 0, stats_row  # (a redelivery may count twice)
    assert re.search(r"Consume TPS: (\d+\.\d+)", out["consumerProgress_s"])
    assert {"rmq_sys_REVIVE_LOG_DefaultCluster", "rmq_sys_wheel_timer"} <= set(out["topicList"].split())


def test_status_and_config_keys_match_the_real_broker(runs: dict[str, Run]) -> None:
    ours, real = runs["gateway"].out, runs["reference"].out
    path_key = re.compile(r"^commitLogDiskRatio_/")
    ours_status = {k for k in kv_keys(ours["brokerStatus"], " : ") if not path_key.match(k)}
    real_status = {k for k in kv_keys(real["brokerStatus"], " : ") if not path_key.match(k)}
    assert ours_status == real_status
    ours_config = kv_keys(ours["getBrokerConfig"], "=")
    assert kv_keys(real["getBrokerConfig"], "=") - ours_config == set()
    assert kv_keys(real["getNamesrvConfig"], "=") - kv_keys(ours["getNamesrvConfig"], "=") == set()
    assert not re.search(r"kvConfigPath\s+=\s*$", ours["getNamesrvConfig"], re.M)


METRICS = (  # what the real broker's exporter serves after this traffic, with the same labels
    "rocketmq_messages_in_total",
    "rocketmq_messages_out_total",
    "rocketmq_throughput_in_total",
    "rocketmq_throughput_out_total",
    "rocketmq_message_size_bucket",
    "rocketmq_rpc_latency_milliseconds_bucket",
    "rocketmq_topic_number",
    "rocketmq_consumer_group_number",
    "rocketmq_broker_permission",
)


@pytest.mark.parametrize("name", TARGETS)
def test_prometheus_counters_follow_the_load(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    for metric in METRICS:
        assert re.search(rf"^{metric}\{{", run.metrics_after, re.M), metric
    labels = {"topic": TOPIC, "node_type": "broker", "cluster": "DefaultCluster"}
    put = counter_sum(run.metrics_after, "rocketmq_messages_in_total", **labels) - counter_sum(
        run.metrics_before, "rocketmq_messages_in_total", **labels
    )
    got = counter_sum(
        run.metrics_after, "rocketmq_messages_out_total", consumer_group=GROUP, **labels
    ) - counter_sum(run.metrics_before, "rocketmq_messages_out_total", consumer_group=GROUP, **labels)
    assert put >= run.sent_between, (put, run.sent_between)  # a producer retry may store a message twice
    assert got >= run.consumed_between, (got, run.consumed_between)
    # The caught-up consumer's pulls were parked until the load arrived: timed as long polling.
    held = {"request_code": "pull_message", "is_long_polling": "true"}
    assert counter_sum(run.metrics_after, "rocketmq_rpc_latency_milliseconds_count", **held) > 0


def test_grpc_sends_are_timed_next_to_remoting_requests(runs: dict[str, Run]) -> None:
    """Our gateway's gRPC sends in the same histogram as the remoting requests, labelled
    ``protocol_type="grpc"``, the RPC as request code and the v2 status as response code, and
    their messages counted as received like any other. (The reference broker has no gRPC door.)"""
    run = runs["gateway"]
    assert run.grpc_codes == [pb.OK] * GRPC_SENT, "the gateway target serves no gRPC endpoint"
    labels = {"protocol_type": "grpc", "request_code": "send_message", "response_code": "ok"}
    count = "rocketmq_rpc_latency_milliseconds_count"
    timed = counter_sum(run.metrics_after, count, **labels) - counter_sum(run.metrics_before, count, **labels)
    assert timed == GRPC_SENT
    assert re.search(
        r'^rocketmq_rpc_latency_milliseconds_bucket\{[^}]*protocol_type="grpc"', run.metrics_after, re.M
    )
    received = counter_sum(run.metrics_after, "rocketmq_messages_in_total", topic=GRPC_TOPIC)
    assert received == GRPC_SENT
    # The remoting series are still there, told apart by their protocol_type.
    assert counter_sum(run.metrics_after, count, protocol_type="remoting", request_code="send_message_v2") > 0
