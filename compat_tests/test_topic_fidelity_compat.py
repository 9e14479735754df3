"""What tools and RocketMQ 5 clients read from a broker, against our gateway AND the real Apache
RocketMQ 5.3.3 broker with identical assertions: topic attributes (``mqadmin updateTopic -a``,
GET_TOPIC_CONFIG, GET_ALL_TOPIC_CONFIG, a restart, the real broker's refusals), the topics a
broker creates at start (the topic list, the system topic list, ``mqadmin topicList``, their
queue counts and perms, refusals to update or delete them), the broker configuration's key set,
and transaction check-backs rotating over a producer group whose second producer alone commits.

Names that embed the broker or cluster name (``broker-a``, ``DefaultCluster``) are the same on
both targets, so the expected sets are written out once. The admin requests go through a plain
remoting connection (the same frames ``mqadmin`` sends), so their code and remark are compared
exactly; ``test_topics_json_keeps_attributes_between_brokers`` moves a ``topics.json`` from the
real broker to ours and back.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from broker.processors.broker_status import java_defaults
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.java_properties import parse_properties
from compat_tests.helpers import TARGETS
from compat_tests.reference import REFERENCE_LIB, ReferenceServers, run_mqadmin, topic_route
from compat_tests.scenario import CLIENT_LINES, command_line, java_env, of, parse_events
from compat_tests.targets import GatewayTarget, Target, start_target
from gateway.transport.client import connect

pytestmark = pytest.mark.compat

LINE = CLIENT_LINES[-1]
TX_CONF = {"transactionTimeOut": "6000", "transactionCheckInterval": "5000"}
#: Half messages sent. Odd: the checks of one round alternate between the two producers, so with
#: an even count a message could meet the first producer round after round.
TX_COUNT = 3
#: A message is checked once its age passes transactionTimeOut, then once per check round; with
#: TX_COUNT messages rotating over two producers each meets the second within TX_COUNT rounds
#: (one more for a check repeated before the op record of an answer was read). Counted in checks
#: of the message, not in milliseconds: on a loaded machine a round can start seconds late.
TX_WITHIN_CHECKS = TX_COUNT + 1
STEP_S = 120.0
RW, INHERIT = 6, 1
#: (readQueueNums, writeQueueNums, perm) of every topic TopicConfigManager.init creates with the
#: defaults (autoCreateTopicEnable as the compat brokers set it, timer wheel on, no trace topic).
START_UP_TOPICS = {
    "SELF_TEST_TOPIC": (1, 1, RW),
    "TBW102": (8, 8, RW | INHERIT),
    "BenchmarkTest": (1024, 1024, RW),
    "DefaultCluster": (16, 16, RW | INHERIT),
    "broker-a": (1, 1, RW | INHERIT),
    "OFFSET_MOVED_EVENT": (1, 1, RW),
    "SCHEDULE_TOPIC_XXXX": (18, 18, RW),
    "DefaultCluster_REPLY_TOPIC": (1, 1, RW),
    "rmq_sys_REVIVE_LOG_DefaultCluster": (8, 8, RW),
    "rmq_sys_SYNC_BROKER_MEMBER_broker-a": (1, 1, INHERIT),
    "RMQ_SYS_TRANS_HALF_TOPIC": (1, 1, RW),
    "RMQ_SYS_TRANS_OP_HALF_TOPIC": (1, 1, RW),
    "rmq_sys_wheel_timer": (1, 1, RW),
}
#: TopicValidator's static system topics that no broker creates at start.
STATIC_SYSTEM_ONLY = {"RMQ_SYS_TRACE_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "CHECKPOINT_TOPIC"}
MESSAGE_TYPES = "[UNSPECIFIED, TRANSACTION, FIFO, MIXED, DELAY, NORMAL]"
#: Attribute modifications both brokers refuse, with the code and remark they answer.
REFUSALS = {
    "+foo=bar": (ResponseCode.SYSTEM_ERROR, "unsupported key: foo"),
    "+message.type=XYZ": (ResponseCode.SYSTEM_ERROR, f"value is not in set: {MESSAGE_TYPES}"),
    "-message.type": (
        ResponseCode.SYSTEM_ERROR,
        "only add attribute is supported while creating topic. key: message.type",
    ),
}
UNCHANGEABLE = (ResponseCode.SYSTEM_ERROR, "attempt to update an unchangeable attribute. key: queue.type")


def invoke(addr: str, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    async def call() -> RemotingCommand:
        async with connect(addr) as conn:
            return await conn.invoke(RemotingCommand(code=code, ext_fields=ext or {}, body=body), 10)

    return trio.run(call)


def broker_addr(namesrv: str) -> str:
    route = topic_route(namesrv)
    assert route is not None, f"no route of TBW102 at {namesrv}"
    return route.broker_datas[0].master_addr() or ""


def create_topic(addr: str, topic: str, attributes: str | None = None) -> RemotingCommand:
    ext = {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
    }  # fmt: skip
    if attributes is not None:
        ext["attributes"] = attributes
    return invoke(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, ext)


def topic_attributes(addr: str, topic: str) -> dict[str, str]:
    response = invoke(addr, RequestCode.GET_TOPIC_CONFIG, {"topic": topic})
    assert response.code == ResponseCode.SUCCESS, response.remark
    attributes: dict[str, str] = json.loads(response.body)["attributes"]
    return attributes


def topic_table(addr: str) -> dict[str, Any]:
    response = invoke(addr, RequestCode.GET_ALL_TOPIC_CONFIG)
    assert response.code == ResponseCode.SUCCESS, response.remark
    table: dict[str, Any] = json.loads(response.body)["topicConfigTable"]
    return table


@pytest.fixture(scope="module", params=TARGETS)
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    if shutil.which("java") is None or not REFERENCE_LIB.is_dir():
        pytest.fail("java or the reference jars are missing: run scripts/setup-java.sh")
    name: str = request.param
    started = start_target(name, tmp_path_factory.mktemp(f"fidelity-{name}"), TX_CONF)
    try:
        yield started
    finally:
        started.discard()


def test_start_up_topics_system_topics_and_their_refusals(target: Target, tmp_path: Path) -> None:
    """First in the module, on a fresh broker: the topic list is exactly the start-up topics."""
    addr = broker_addr(target.namesrv_addr)
    response = invoke(addr, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
    assert set(json.loads(response.body)["topicList"]) == set(START_UP_TOPICS) | STATIC_SYSTEM_ONLY
    response = invoke(target.namesrv_addr, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    assert set(json.loads(response.body)["topicList"]) == set(START_UP_TOPICS)
    table = topic_table(addr)
    for name, want in START_UP_TOPICS.items():
        got = table[name]
        assert (got["readQueueNums"], got["writeQueueNums"], got["perm"]) == want, name
    listed = run_mqadmin(target.namesrv_addr, "topicList", home=tmp_path).split()
    assert set(listed) == set(START_UP_TOPICS)
    reply = "DefaultCluster_REPLY_TOPIC"
    refused = (ResponseCode.INVALID_PARAMETER, f"The topic[{reply}] is conflict with system topic.")
    response = create_topic(addr, reply)
    assert (response.code, response.remark) == refused
    response = invoke(addr, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": reply})
    assert (response.code, response.remark) == refused
    assert reply in topic_table(addr)


def test_topic_attributes_round_trip_refusals_and_restart(target: Target, tmp_path: Path) -> None:
    addr = broker_addr(target.namesrv_addr)
    out = run_mqadmin(
        target.namesrv_addr,
        "updateTopic",
        "-b",
        addr,
        "-t",
        "AttrFifo",
        "-a",
        "+message.type=FIFO",
        home=tmp_path,
    )
    assert re.search(r"create topic to \S+ success", out), out
    assert topic_attributes(addr, "AttrFifo") == {"message.type": "FIFO"}
    assert topic_table(addr)["AttrFifo"]["attributes"] == {"message.type": "FIFO"}
    for text, want in REFUSALS.items():
        response = create_topic(addr, "AttrRefused", text)
        assert (response.code, response.remark) == want, text
    response = create_topic(addr, "AttrFifo", "+queue.type=SimpleCQ")
    assert (response.code, response.remark) == UNCHANGEABLE
    assert "AttrRefused" not in topic_table(addr)
    response = create_topic(addr, "AttrDelay", "+message.type=DELAY,+reserve.time=100")
    assert response.code == ResponseCode.SUCCESS, response.remark
    target.restart_broker()
    addr = broker_addr(target.namesrv_addr)
    assert topic_attributes(addr, "AttrFifo") == {"message.type": "FIFO"}
    assert topic_attributes(addr, "AttrDelay") == {"message.type": "DELAY", "reserve.time": "100"}


def test_broker_config_key_set(target: Target) -> None:
    """GET_BROKER_CONFIG has the 5.3.3 key set (the file our answer starts from) on both, with
    rocketmqHome set."""
    response = invoke(broker_addr(target.namesrv_addr), RequestCode.GET_BROKER_CONFIG)
    assert response.code == ResponseCode.SUCCESS
    props = parse_properties(response.body.decode())
    assert set(props) == set(java_defaults())
    assert props["rocketmqHome"]


def test_check_back_rotates_over_the_producer_group(target: Target, tmp_path: Path) -> None:
    """Two producers of one group; only the second's check answers COMMIT: every half message is
    committed and consumed, within a few check rounds. At least once: both brokers may check a
    message again before the op record of its commit is read (the real broker writes op records
    in batches, ``transactionOpBatchInterval``), and a second COMMIT delivers it twice."""
    argv = command_line(
        LINE, "txpair", target.namesrv_addr, tmp_path, STEP_S,
        {"topic": "TxPair", "group": "txPairPG", "cgroup": "txPairCG", "count": TX_COUNT},
        main_class="rmqcompat.TwoProducerTxScenario",
    )  # fmt: skip
    result = subprocess.run(argv, capture_output=True, env=java_env(), timeout=STEP_S + 60, check=False)
    events = parse_events(result.stdout.decode("utf-8", errors="replace"))
    assert result.returncode == 0, f"{events[-3:]}\n{result.stderr.decode(errors='replace')[-3000:]}"
    assert [e["status"] for e in of(events, "sent")] == ["SEND_OK"] * TX_COUNT
    [done] = of(events, "done")
    assert done["complete"] is True, done
    assert sorted(done["received"]) == [str(i) for i in range(TX_COUNT)]
    assert done["checks"].get("second", 0) >= 1, done
    for i in range(TX_COUNT):
        answers = [e["answer"] for e in of(events, "check") if e["i"] == i]
        assert "COMMIT_MESSAGE" in answers[:TX_WITHIN_CHECKS], (i, answers)


def test_topics_json_keeps_attributes_between_brokers(tmp_path: Path) -> None:
    """The real broker writes a topic with attributes; ours starts on that topics.json, adds a
    topic (rewriting the file) and serves both; the real broker starts on ours' file, adds one
    more, and still has every topic's attributes."""
    if shutil.which("java") is None or not REFERENCE_LIB.is_dir():
        pytest.fail("java or the reference jars are missing: run scripts/setup-java.sh")
    real = ReferenceServers.on_loopback(tmp_path / "real")
    (tmp_path / "real").mkdir()
    real.checks_exits = True
    try:
        real.start_namesrv()
        real.start_broker()
        real.wait_registered()
        assert create_topic(real.broker_addr, "FromReal", "+message.type=FIFO").code == ResponseCode.SUCCESS
        real.stop_broker()
        real_file = real.store / "config" / "topics.json"
        ours_file = tmp_path / "ours" / "store" / "config" / "topics.json"
        ours_file.parent.mkdir(parents=True)
        shutil.copy(real_file, ours_file)
        ours = GatewayTarget(tmp_path / "ours")
        try:
            addr = broker_addr(ours.namesrv_addr)
            assert topic_attributes(addr, "FromReal") == {"message.type": "FIFO"}
            assert create_topic(addr, "FromOurs", "+message.type=DELAY").code == ResponseCode.SUCCESS
        finally:
            ours.stop()
        written = json.loads(ours_file.read_text())["topicConfigTable"]
        assert written["FromReal"]["attributes"] == {"message.type": "FIFO"}
        assert written["FromOurs"]["attributes"] == {"message.type": "DELAY"}
        shutil.copy(ours_file, real_file)
        real.start_broker()
        real.wait_registered()
        assert topic_attributes(real.broker_addr, "FromOurs") == {"message.type": "DELAY"}
        assert (
            create_topic(real.broker_addr, "FromRealAgain", "+message.type=NORMAL").code
            == ResponseCode.SUCCESS
        )
        real.stop_broker()
        rewritten = json.loads(real_file.read_text())["topicConfigTable"]
        assert rewritten["FromReal"]["attributes"] == {"message.type": "FIFO"}
        assert rewritten["FromOurs"]["attributes"] == {"message.type": "DELAY"}
        assert rewritten["FromRealAgain"]["attributes"] == {"message.type": "NORMAL"}
    finally:
        real.stop()
