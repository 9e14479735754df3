"""What RocketMQ 5.5.0 added that this gateway serves, judged against the real 5.5.0 broker.

Each test runs against ours (``rmq-gateway standalone``) and the real Apache RocketMQ 5.5.0
NameServer and broker (target ``reference-5.5.0``), one of each per module:

* priority messages (:mod:`broker.priority`, ``docs/priority.md``): a topic created by the 5.5.0
  ``mqadmin updateTopic -a +message.type=PRIORITY``, messages sent over remoting with the
  ``_SYS_MSG_PRIORITY_`` property, the queue the broker stores each in, and the order POP
  (raw frames, :mod:`compat_tests.pop_raw`) hands a backlog of mixed priorities out in;
* ``mqadmin switchTimerEngine`` (5.5.0 tools, request code 5001 SWITCH_TIMER_ENGINE) with each
  engine type, and the same request as raw frames (missing and unknown types);
* where 5.5.0 answers otherwise than 5.3.3 (:mod:`broker.followed_version`; ours runs with
  ``brokerVersion=5.5.0`` here): the version it reports (every frame, ``brokerStatus``,
  ``clusterList``), the two RocksDB transaction topics created at start, the ``message.type``
  refusal, ``getBrokerConfig``'s keys, and a POP walking the queues downward. The default setting
  answers as 5.3.3 against the real 5.3.3 in the other compat modules.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.frame_oracle import repair_fastjson
from compat_tests.pop_raw import RawSession, popped, send, wait_route
from compat_tests.pop_raw import pop as raw_pop
from compat_tests.reference import run_mqadmin
from compat_tests.targets import Target, start_target

VERSION = "5.5.0"
GET_MAX_OFFSET = 30
UPDATE_AND_CREATE_TOPIC = 17
GET_BROKER_CONFIG = 26
GET_BROKER_RUNTIME_INFO = 28
V5_5_0 = 513  # MQVersion.Version.V5_5_0.ordinal()
ROCKSDB_TOPICS = ["RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC", "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC"]
SWITCH_TIMER_ENGINE = 5001
INVALID_PARAMETER = 29
QUEUES = 4
# (priority, body) in the order they are sent; each send names queue 0, the broker picks the queue.
BACKLOG = [(0, "a"), (3, "b"), (1, "c"), (7, "d"), (2, "e"), (0, "f"), (3, "g"), (1, "h"), (2, "i")]
# Highest queue first, FIFO within a queue; priority 7 is stored in the last queue (3).
EXPECTED_ORDER = ["b", "d", "g", "e", "i", "c", "h", "a", "f"]


@pytest.fixture(scope="module", params=("gateway", f"reference-{VERSION}"))
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    name: str = request.param
    conf = {"brokerVersion": VERSION} if name == "gateway" else None
    started = start_target(name, tmp_path_factory.mktemp(name), conf)
    try:
        yield started
    finally:
        started.discard()


def mqadmin(target: Target, home: Path, *args: str) -> str:
    return run_mqadmin(target.namesrv_addr, *args, home=home, version=VERSION)


def create_priority_topic(target: Target, home: Path, topic: str) -> str:
    """The topic, created with the 5.5.0 tools; returns the broker it is routed to."""
    out = mqadmin(
        target,
        home,
        "updateTopic",
        "-c",
        "DefaultCluster",
        "-t",
        topic,
        "-r",
        str(QUEUES),
        "-w",
        str(QUEUES),
        "-a",
        "+message.type=PRIORITY",
    )
    assert "create topic to" in out, out
    assert "success" in out, out
    return wait_route(target.namesrv_addr, topic)


def wait_queued(session: RawSession, topic: str, counts: dict[int, int]) -> None:
    """Wait until every queue's max offset reaches its count: all sends are dispatched, so one POP
    sees the whole backlog."""
    deadline = time.monotonic() + 30
    for queue_id, count in counts.items():
        while True:
            resp = session.call(GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)})
            if int((resp["ext_fields"] or {}).get("offset", "-1")) >= count:
                break
            assert time.monotonic() < deadline, f"queue {queue_id} never reached {count}: {resp}"
            time.sleep(0.1)


def test_priority_picks_the_queue_and_pop_reads_the_highest_first(target: Target, home: Path) -> None:
    topic = f"PrioTopic{target.name.replace('.', '').replace('-', '')}"
    broker = create_priority_topic(target, home, topic)
    with RawSession(broker) as s:
        stored = []
        for priority, body in BACKLOG:
            resp = send(s, topic, body.encode(), 0, {"_SYS_MSG_PRIORITY_": str(priority)})
            assert resp["code"] == 0, resp
            stored.append(int(resp["ext_fields"]["queueId"]))
        assert stored == [min(p, QUEUES - 1) for p, _ in BACKLOG]
        counts = {q: stored.count(q) for q in range(QUEUES)}
        wait_queued(s, topic, counts)
        first = popped(raw_pop(s, topic, "PrioGroupA", -1, 60_000, maxMsgNums="4"))
        rest = popped(raw_pop(s, topic, "PrioGroupA", -1, 60_000, maxMsgNums="32"))
        whole = popped(raw_pop(s, topic, "PrioGroupB", -1, 60_000, maxMsgNums="32"))
    assert [m["body_text"] for m in whole] == EXPECTED_ORDER
    assert [m["body_text"] for m in first] == EXPECTED_ORDER[:4]
    assert [m["body_text"] for m in rest] == EXPECTED_ORDER[4:]
    assert [m["queue_id"] for m in whole] == sorted(stored, reverse=True)
    assert all(m["properties_map"]["_SYS_MSG_PRIORITY_"] for m in whole)


def test_priority_of_an_ordered_message_is_dropped(target: Target, home: Path) -> None:
    """A sharding key makes the message FIFO (``parseFromMessageProperty``): it stays in the queue
    it was sent to and loses the priority property; one without priority is left alone."""
    topic = f"PrioFifo{target.name.replace('.', '').replace('-', '')}"
    broker = create_priority_topic(target, home, topic)
    with RawSession(broker) as s:
        fifo = send(s, topic, b"fifo", 1, {"_SYS_MSG_PRIORITY_": "3", "__SHARDINGKEY": "k"})
        plain = send(s, topic, b"plain", 2)
        assert (fifo["code"], fifo["ext_fields"]["queueId"]) == (0, "1")
        assert (plain["code"], plain["ext_fields"]["queueId"]) == (0, "2")
        wait_queued(s, topic, {1: 1, 2: 1})
        got = popped(raw_pop(s, topic, "PrioFifoGroup", -1, 60_000))
    assert [m["body_text"] for m in got] == ["plain", "fifo"]
    assert "_SYS_MSG_PRIORITY_" not in got[1]["properties_map"]
    assert got[1]["properties_map"]["__SHARDINGKEY"] == "k"


def broker_addr(target: Target) -> str:
    return wait_route(target.namesrv_addr, "TBW102")


def test_mqadmin_switch_timer_engine(target: Target, home: Path) -> None:
    addr = broker_addr(target)
    to_wheel = mqadmin(target, home, "switchTimerEngine", "-b", addr, "-e", "F")
    assert to_wheel == f"switchTimerEngine to FILE_TIME_WHEEL success, {addr}"
    to_rocksdb = mqadmin(target, home, "switchTimerEngine", "-b", addr, "-e", "R")
    assert "SwitchTimerEngineSubCommand command failed" in to_rocksdb
    assert "CODE: 29  DESC: timerRocksDBEnable must be configured true when broker start" in to_rocksdb
    unknown = mqadmin(target, home, "switchTimerEngine", "-b", addr, "-e", "X")
    assert unknown == "switchTimerEngine engineType must be R or F"


def test_switch_timer_engine_raw_requests(target: Target) -> None:
    with RawSession(broker_addr(target)) as s:
        answers = [
            s.call(SWITCH_TIMER_ENGINE, ext)
            for ext in ({}, {"E_T": ""}, {"E_T": "r"}, {"E_T": "F"}, {"E_T": "F"}, {"E_T": "R"})
        ]
    assert [(a["code"], a["remark"]) for a in answers] == [
        (INVALID_PARAMETER, "param error"),
        (INVALID_PARAMETER, "param error"),
        (INVALID_PARAMETER, "param error"),
        (0, "switch timer engine success"),
        (0, "switch timer engine success"),
        (INVALID_PARAMETER, "timerRocksDBEnable must be configured true when broker start"),
    ]


def test_the_5_5_1_batch_deletions_are_unknown_to_5_5_0(target: Target) -> None:
    """DELETE_TOPIC_IN_BROKER_LIST (5002) and DELETE_SUBSCRIPTION_GROUP_LIST (5003) are defined by
    rocketmq-remoting 5.5.1, not 5.5.0: its broker answers them as any unknown code, so does ours."""
    bodies = {
        5002: b'{"topicList":["NoSuchTopic55"]}',
        5003: b'{"cleanOffset":false,"groupNameList":["NoSuchGroup55"]}',
    }
    with RawSession(broker_addr(target)) as s:
        answers = {code: s.call(code, {}, body) for code, body in bodies.items()}
    assert {code: (a["code"], a["remark"]) for code, a in answers.items()} == {
        code: (3, f" request type {code} not supported") for code in bodies
    }


# -- where 5.5.0 differs from 5.3.3 (ours with brokerVersion=5.5.0) --------------------------------


def test_the_broker_reports_5_5_0(target: Target, home: Path) -> None:
    """Every frame carries V5_5_0; ``brokerStatus`` has ``brokerVersionDesc`` and (unlike 5.3.3) no
    ``brokerVersion``; ``clusterList`` prints the version."""
    addr = broker_addr(target)
    with RawSession(addr) as s:
        resp = s.call(GET_BROKER_RUNTIME_INFO)
    table = json.loads(repair_fastjson(resp["body"].decode()))["table"]
    assert (resp["code"], resp["version"]) == (0, V5_5_0)
    assert table["brokerVersionDesc"] == "V5_5_0"
    assert "brokerVersion" not in table
    rows = mqadmin(target, home, "clusterList").splitlines()
    assert rows[0].split()[6] == "#Version", rows
    assert [r.split()[3:5] for r in rows[1:]] == [[addr, "V5_5_0"]], rows


def test_the_rocksdb_transaction_topics_exist_and_refuse_sends(target: Target, home: Path) -> None:
    listed = mqadmin(target, home, "topicList").split()
    assert [t for t in ROCKSDB_TOPICS if t in listed] == ROCKSDB_TOPICS
    with RawSession(broker_addr(target)) as s:
        answers = [send(s, topic, b"x", 0) for topic in ROCKSDB_TOPICS]
    assert [(a["code"], a["remark"]) for a in answers] == [
        (16, f"Sending message to topic[{topic}] is forbidden.") for topic in ROCKSDB_TOPICS
    ]


def test_a_refused_message_type_lists_priority_and_lite(target: Target) -> None:
    ext = {
        "topic": "BadTypeTopic55",
        "defaultTopic": "TBW102",
        "readQueueNums": "4",
        "writeQueueNums": "4",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
        "attributes": "+message.type=BAD",
    }
    with RawSession(broker_addr(target)) as s:
        resp = s.call(UPDATE_AND_CREATE_TOPIC, ext)
    assert (resp["code"], resp["remark"]) == (
        1,
        "value is not in set: [UNSPECIFIED, MIXED, TRANSACTION, PRIORITY, FIFO, DELAY, LITE, NORMAL]",
    )


def test_get_broker_config_has_the_5_5_0_keys(target: Target) -> None:
    with RawSession(broker_addr(target)) as s:
        resp = s.call(GET_BROKER_CONFIG)
    assert resp["code"] == 0, resp
    props = dict(line.split("=", 1) for line in resp["body"].decode().splitlines() if "=" in line)
    assert len(props) == 487
    assert {k: props[k] for k in ("priorityOrderAsc", "transRocksDBEnable", "enableLiteEventMode")} == {
        "priorityOrderAsc": "true",
        "transRocksDBEnable": "false",
        "enableLiteEventMode": "true",
    }
    assert (props["minLiteTTl"], props["transactionMetricFlushInterval"]) == ("900000", "10000")


def test_pop_walks_the_queues_downward(target: Target) -> None:
    """One message per queue; a POP of the whole topic returns them in its walk's order, from a
    random queue downward (5.3.3: upward), whatever the start."""
    topic = f"PopWalk{target.name.replace('.', '').replace('-', '')}"
    with RawSession(broker_addr(target)) as s:
        for queue_id in range(4):
            assert send(s, topic, str(queue_id).encode(), queue_id)["code"] == 0
        wait_queued(s, topic, dict.fromkeys(range(4), 1))
        walks = [
            [m["queue_id"] for m in popped(raw_pop(s, topic, f"PopWalkGroup{n}", -1, 60_000))]
            for n in range(5)
        ]
    for walk in walks:
        assert walk == [(walk[0] - i) % 4 for i in range(4)], walks
