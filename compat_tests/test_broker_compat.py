"""The core messaging scenarios: the unmodified Java clients of both lines against our broker AND against the
real Apache RocketMQ 5.3.3 broker, with identical assertions (a scenario that fails against the
reference is a wrong test, not a feature of ours).

Each target (``gateway``: ``rmq-gateway standalone``; ``reference``: the real NameServer + Broker;
the ``target`` fixture of ``conftest.py``) serves the whole module; every test uses its own topics
and groups per client line. Restart and crash scenarios run on their own SYNC_FLUSH targets at the
end. Tag filters, batch sends, lite pull subscribe and ``DefaultMQPullConsumer`` are in
``test_tags_pull_batch_compat.py``.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.helpers import STEP_S, TARGETS, consume, produce, short, start_consumer
from compat_tests.reference import run_mqadmin
from compat_tests.scenario import CLIENT_LINES, Event, done, of, run_scenario, start_scenario
from compat_tests.targets import Target, start_target

pytestmark = pytest.mark.compat

BULK = {"sync": 5000, "async": 2000, "oneway": 3000}  # 10,000 messages per client line
CHINESE_PROPS = {"颜色": "蓝", "n": "1"}


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_bulk_sync_async_oneway_all_received_intact(target: Target, home: Path, line: str) -> None:
    """Scenario 1: 10,000 messages by sync, async and oneway sends; a clustering push consumer gets
    every one with identical body, keys, tags and user properties. Duplicates are reported."""
    topic = f"Bulk{short(line)}"
    props = ",".join(f"{k}:{v}" for k, v in CHINESE_PROPS.items())
    sent: list[Event] = []
    for mode, count in BULK.items():
        events = produce(
            target,
            home,
            line,
            topic=topic,
            count=count,
            mode=mode,
            tags="TagA,TagB",
            keys_prefix=f"{mode}-",
            props=props,
            group=f"bulkProducer{short(line)}",
        )
        assert done(events)["errors"] == 0, of(events, "send_error")[:3]
        sent += of(events, "sent")
    total = sum(BULK.values())
    assert len(sent) == total
    events = consume(
        target, home, line, group=f"bulk{short(line)}", topic=topic, expect=total, instance="bulk"
    )
    received = of(events, "received")
    counts = Counter((r["keys"], r["body"]) for r in received)
    expected = Counter((s["keys"], s["body"]) for s in sent)
    assert set(counts) == set(expected), "lost messages"
    duplicates = sum(counts.values()) - len(counts)
    print(f"{target.name} {line}: {total} received, {duplicates} duplicate deliveries")
    for r in received:
        assert r["props"] == CHINESE_PROPS
        assert r["tags"] in ("TagA", "TagB")
        assert r["topic"] == topic


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_four_mib_body_accepted_and_larger_refused(target: Target, home: Path, line: str) -> None:
    """Scenario 2: a 4 MiB body is stored and delivered; one byte more is refused to the client."""
    topic = f"Big{short(line)}"
    # compress-over above the size: bodies go uncompressed (the limit applies to the stored body)
    no_zip = 8 * 1024 * 1024
    events = produce(
        target, home, line, topic=topic, count=1, body_size=4 * 1024 * 1024, retries=0, compress_over=no_zip
    )
    [sent] = of(events, "sent")
    assert sent["status"] == "SEND_OK"
    too_big = produce(
        target,
        home,
        line,
        topic=topic,
        count=1,
        body_size=4 * 1024 * 1024 + 1,
        refused=True,
        retries=0,
        max_message_size=no_zip,
        compress_over=no_zip,
    )
    [error] = of(too_big, "send_error")
    assert "13" in error["error"] or "illegal" in error["error"].lower(), error
    received = of(consume(target, home, line, group=f"big{short(line)}", topic=topic, expect=1), "received")
    assert [(r["bodyLen"], r["bodySha1"]) for r in received] == [(sent["bodyLen"], sent["bodySha1"])]


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_two_consumers_split_queues_and_one_takes_over(target: Target, home: Path, line: str) -> None:
    """Scenario 3: two members of a group share the queues; when one stops, the other gets all."""
    topic, group = f"Split{short(line)}", f"split{short(line)}"
    produce(target, home, line, topic=topic, count=1, keys_prefix="warmup-")  # create the topic
    a = start_scenario(
        line, "consume", target.namesrv_addr, home, 120, group=group, topic=topic, duration=100, instance="a"
    )
    b = start_scenario(
        line, "consume", target.namesrv_addr, home, 120, group=group, topic=topic, duration=100, instance="b"
    )
    try:
        # Both joined and rebalanced (NOTIFY_CONSUMER_IDS_CHANGED, or their 20 s timer) once each
        # has received some of a few probes spread over the queues.
        deadline = time.monotonic() + 60
        while not (of(a.events(), "received") and of(b.events(), "received")):
            assert time.monotonic() < deadline, "the two consumers did not both get queues"
            produce(target, home, line, topic=topic, count=8, keys_prefix="probe-")
        first = of(produce(target, home, line, topic=topic, count=200, keys_prefix="p1-"), "sent")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = {r["msgId"] for r in of(a.events() + b.events(), "received")}
            if {s["msgId"] for s in first} <= got:
                break
            time.sleep(0.5)
        a_ids = {r["msgId"] for r in of(a.events(), "received")}
        b_ids = {r["msgId"] for r in of(b.events(), "received")}
        assert {s["msgId"] for s in first} <= a_ids | b_ids
        a_queues = {r["queueId"] for r in of(a.events(), "received") if r["msgId"] in a_ids - b_ids}
        b_queues = {r["queueId"] for r in of(b.events(), "received") if r["msgId"] in b_ids - a_ids}
        assert a_queues
        assert b_queues
        # (a queue may move once while they rebalance, so the two sets can overlap)
        b.stop()
        second = of(produce(target, home, line, topic=topic, count=100, keys_prefix="p2-"), "sent")
        wanted = {s["msgId"] for s in second}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not wanted <= {r["msgId"] for r in of(a.events(), "received")}:
            time.sleep(0.5)
        assert wanted <= {r["msgId"] for r in of(a.events(), "received")}, "the survivor did not take over"
    finally:
        a.stop()
        b.stop()


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_broadcasting_consumers_each_receive_everything(target: Target, home: Path, line: str) -> None:
    """Scenario 4."""
    topic, group = f"Bcast{short(line)}", f"bcast{short(line)}"
    produce(target, home, line, topic=topic, count=1, keys_prefix="warmup-")
    consumers = [
        start_consumer(
            target,
            home,
            line,
            group=group,
            topic=topic,
            model="broadcasting",
            expect=51,  # from the first offset: the warm-up message too
            instance=name,
        )
        for name in ("x", "y")
    ]
    try:
        sent = {s["msgId"] for s in of(produce(target, home, line, topic=topic, count=50), "sent")}
        for consumer in consumers:
            events = consumer.wait(STEP_S + 30)
            assert sent <= {r["msgId"] for r in of(events, "received")}
    finally:
        for consumer in consumers:
            consumer.stop()


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_orderly_consumer_sees_per_key_order(target: Target, home: Path, line: str) -> None:
    """Scenario 5: a MessageQueueSelector by key, MessageListenerOrderly: per-key order kept."""
    topic = f"Order{short(line)}"
    sent = of(produce(target, home, line, topic=topic, count=200, selector_keys=4, keys_prefix="o-"), "sent")
    assert len(sent) == 200
    events = consume(target, home, line, group=f"order{short(line)}", topic=topic, orderly=True, expect=200)
    index = {s["msgId"]: s["i"] for s in sent}
    shard = {s["msgId"]: s["shardKey"] for s in sent}
    per_key: dict[str, list[int]] = {}
    for r in of(events, "received"):
        per_key.setdefault(shard[r["msgId"]], []).append(index[r["msgId"]])
    assert len(per_key) == 4
    for order in per_key.values():
        assert order == sorted(order)


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_reconsume_later_retries_then_dead_letters(target: Target, home: Path, line: str) -> None:
    """Scenario 7: RECONSUME_LATER redelivers with growing reconsumeTimes; past maxReconsumeTimes
    (1 here) the message goes to %DLQ%group."""
    topic, group = f"Retry{short(line)}", f"retry{short(line)}"
    [sent] = of(produce(target, home, line, topic=topic, count=1, keys_prefix="r-"), "sent")
    failing = start_consumer(
        target,
        home,
        line,
        group=group,
        topic=topic,
        reconsume_later=10,
        max_reconsume=1,
        duration=60,
    )
    try:
        failing.wait_for(lambda e: e.get("event") == "received" and e["reconsumeTimes"] == 1, STEP_S)
        # the second RECONSUME_LATER sends it back past maxReconsumeTimes: it is dead once read here
        dlq = consume(target, home, line, group=f"dlqReader{short(line)}", topic=f"%DLQ%{group}", expect=1)
    finally:
        events = failing.stop()
    deliveries = [r for r in of(events, "received") if r["msgId"] == sent["msgId"]]
    assert [r["reconsumeTimes"] for r in deliveries] == [0, 1]
    assert deliveries[1]["storeTimestamp"] - deliveries[0]["storeTimestamp"] >= 9000  # level 3: 10 s
    [dead] = of(dlq, "received")
    assert dead["msgId"] == sent["msgId"]
    assert dead["body"] == sent["body"]


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_delay_level_two_arrives_no_earlier_than_five_seconds(target: Target, home: Path, line: str) -> None:
    """Scenario 8."""
    topic = f"Delay{short(line)}"
    produce(target, home, line, topic=topic, count=1, keys_prefix="warmup-")
    consumer = start_consumer(
        target,
        home,
        line,
        group=f"delay{short(line)}",
        topic=topic,
        subscription="Late",
        expect=1,
    )
    try:
        [sent] = of(produce(target, home, line, topic=topic, count=1, tags="Late", delay_level=2), "sent")
        events = consumer.wait(STEP_S + 30)
    finally:
        consumer.stop()
    [got] = of(events, "received")
    assert got["msgId"] == sent["msgId"]
    assert got["storeTimestamp"] - got["bornTimestamp"] >= 5000 - 5
    assert got["delay"] == "2"


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_lite_pull_assign_and_seek(target: Target, home: Path, line: str) -> None:
    """Scenario 9 (assign + seek; subscribe and DefaultMQPullConsumer are in
    test_tags_pull_batch_compat.py)."""
    topic = f"Seek{short(line)}"
    sent = of(produce(target, home, line, topic=topic, count=40), "sent")
    events = run_scenario(
        line,
        "litepull",
        target.namesrv_addr,
        home,
        STEP_S,
        group=f"seek{short(line)}",
        topic=topic,
        mode="assign",
        seek=5,
        expect=40 - 4 * 5,
    )
    received = of(events, "received")
    assert {r["msgId"] for r in received} == {s["msgId"] for s in sent if s["queueOffset"] >= 5}


def test_mqadmin_topic_and_consumer_views(target: Target, home: Path) -> None:
    """Scenario 11: updateTopic, topicStatus, consumerProgress, queryMsgByKey, queryMsgById
    (clusterList and brokerStatus: the next test)."""
    line = CLIENT_LINES[-1]
    naddr = target.namesrv_addr
    created = run_mqadmin(
        naddr, "updateTopic", "-c", "DefaultCluster", "-t", "AdminTopic", "-r", "3", "-w", "3", home=home
    )
    assert "success" in created, created
    assert "readQueueNums=3" in created
    sent = of(produce(target, home, line, topic="AdminTopic", count=9, keys_prefix="adm-"), "sent")
    consume(target, home, line, group="adminGroup", topic="AdminTopic", expect=9)
    status = run_mqadmin(naddr, "topicStatus", "-t", "AdminTopic", home=home)
    rows = [r.split() for r in status.splitlines() if r.split()[:1] and r.split()[0].startswith("broker")]
    assert sorted(int(r[1]) for r in rows) == [0, 1, 2]
    assert sum(int(r[3]) for r in rows) == 9  # max offsets
    progress = run_mqadmin(naddr, "consumerProgress", "-g", "adminGroup", home=home)
    assert "Consume Diff Total: 0" in progress, progress
    by_key = run_mqadmin(naddr, "queryMsgByKey", "-t", "AdminTopic", "-k", "adm-3", home=home)
    assert sent[3]["msgId"] in by_key
    by_id = run_mqadmin(naddr, "queryMsgById", "-t", "AdminTopic", "-i", sent[3]["msgId"], home=home)
    assert "Keys:                [adm-3]" in by_id, by_id
    assert "Topic:               AdminTopic" in by_id


def broker_status(naddr: str, broker_addr: str, home: Path) -> dict[str, str]:
    """``mqadmin brokerStatus``'s ``key : value`` lines (GET_BROKER_RUNTIME_INFO)."""
    out = run_mqadmin(naddr, "brokerStatus", "-b", broker_addr, home=home)
    pairs = (row.split(":", 1) for row in out.splitlines() if ":" in row)
    return {k.strip(): v.strip() for k, v in pairs}


def test_mqadmin_cluster_list_and_broker_status(target: Target, home: Path) -> None:
    """Scenario 11, continued: clusterList shows the broker with its version; brokerStatus reports
    its runtime info, and the store counters move by what a producer then stores."""
    line = CLIENT_LINES[-1]
    naddr = target.namesrv_addr
    cluster = run_mqadmin(naddr, "clusterList", home=home)
    row = re.search(r"DefaultCluster\s+broker-a\s+0\s+(127\.0\.0\.1:\d+)\s+V5_3_3\s", cluster)
    assert row, cluster
    broker_addr = row.group(1)
    before = broker_status(naddr, broker_addr, home)
    assert (before["brokerVersionDesc"], before["brokerActive"]) == ("V5_3_3", "true"), before
    sent = of(produce(target, home, line, topic="StatusTopic", count=7, keys_prefix="st-"), "sent")
    assert len(sent) == 7
    after = broker_status(naddr, broker_addr, home)
    assert int(after["putMessageTimesTotal"]) - int(before["putMessageTimesTotal"]) == 7
    assert int(after["commitLogMaxOffset"]) > int(before["commitLogMaxOffset"])


# -- restarts and crashes ---------------------------------------------------------------------------


@pytest.fixture(scope="module", params=TARGETS)
def sync_target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    name: str = request.param
    started = start_target(name, tmp_path_factory.mktemp(f"{name}-sync"), {"flushDiskType": "SYNC_FLUSH"})
    try:
        yield started
    finally:
        started.discard()


def test_offsets_survive_restart_and_acked_messages_survive_kill(
    sync_target: Target, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Scenario 10: committed offsets survive a clean restart (the group resumes exactly where it was:
    the consumer shut down cleanly and so did the broker, so nothing is redelivered);
    after ``kill -9`` under SYNC_FLUSH every acknowledged message is delivered once it is back."""
    line = CLIENT_LINES[-1]
    home = tmp_path_factory.mktemp(f"clients-sync-{sync_target.name}")
    target = sync_target
    topic, group = "Durable", "durableGroup"
    first = of(produce(target, home, line, topic=topic, count=50), "sent")
    assert len(first) == 50
    consume(target, home, line, group=group, topic=topic, expect=50)
    target.restart_broker()
    second = of(produce(target, home, line, topic=topic, count=20, keys_prefix="after-"), "sent")
    assert len(second) == 20
    events = consume(target, home, line, group=group, topic=topic, expect=20)
    received = {r["msgId"] for r in of(events, "received")}
    assert {s["msgId"] for s in second} <= received
    redelivered = received & {s["msgId"] for s in first}
    assert not redelivered, (
        f"{len(redelivered)} of {len(first)} consumed messages redelivered after the restart"
    )

    producer = start_scenario(
        line,
        "produce",
        target.namesrv_addr,
        home,
        STEP_S,
        topic="Crash",
        count=100000,
        mode="sync",
        retries=0,
        send_timeout_ms=1000,
    )
    try:
        producer.wait_for(lambda e: e.get("event") == "sent" and e["i"] >= 300, 60)
        target.restart_broker(kill=True)
    finally:
        producer.stop()
    acked = {e["msgId"] for e in of(producer.events(), "sent")}
    assert len(acked) >= 300
    events = consume(
        target, home, line, group="crashReader", topic="Crash", expect=len(acked), **{"from": "first"}
    )
    assert acked <= {r["msgId"] for r in of(events, "received")}
