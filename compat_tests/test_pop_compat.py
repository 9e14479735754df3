"""POP consumption with the unmodified 5.3.3 remoting ``DefaultMQPushConsumer`` against our broker
AND the real Apache RocketMQ 5.3.3 broker, with identical assertions.

The group is switched to POP with ``mqadmin setConsumeMode -m POP`` and the consumer runs with
``setClientRebalance(false)``, as the 5.3.3 example ``simple/PopConsumer.java`` does: it asks the
broker for its assignment (QUERY_ASSIGNMENT, queue -1), pops, acks, and answers RECONSUME_LATER
with CHANGE_MESSAGE_INVISIBLETIME (10 s, the first of ``popDelayLevel``), after which the broker's
revive service delivers the message again through ``%RETRY%group_topic`` with reconsumeTimes 1.

Driven by ``rmqcompat.PopScenario`` (``compat_tests/java/src/rmqcompat/PopScenario.java``); only
the 5.3.3 client line pops.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from compat_tests.pop_raw import (
    BATCH_ACK_MESSAGE,
    POLLING_INFO,
    SET_MESSAGE_REQUEST_MODE,
    RawSession,
    ack,
    broker_of,
    change_invisible,
    expect_revived_once,
    pop,
    popped,
    wait_offset_persisted,
    wait_route,
)
from compat_tests.reference import run_mqadmin
from compat_tests.scenario import ArgValue, Event, of, run_program, run_scenario
from compat_tests.targets import Target

pytestmark = pytest.mark.compat

LINE = "5.3.3"
STEP_S = 90.0
MAIN_CLASS = "rmqcompat.PopScenario"
FIRST_POP_DELAY_MS = 10_000  # DefaultMQPushConsumer popDelayLevel[0]
# ResponseCode
SUCCESS, SYSTEM_ERROR, MESSAGE_ILLEGAL, NO_PERMISSION, TOPIC_NOT_EXIST = 0, 1, 13, 16, 17
INVALID_PARAMETER, NO_MESSAGE, POLLING_TIMEOUT, SUBSCRIPTION_PARSE_FAILED = 29, 208, 210, 23


def produce(target: Target, home: Path, topic: str, count: int) -> list[Event]:
    events = run_scenario(LINE, "produce", target.namesrv_addr, home, STEP_S, topic=topic, count=count)
    sent = of(events, "sent")
    assert len(sent) == count, of(events, "send_error")
    return sent


def set_pop_mode(target: Target, home: Path, topic: str, group: str) -> None:
    out = run_mqadmin(
        target.namesrv_addr,
        "setConsumeMode",
        "-c",
        "DefaultCluster",
        "-t",
        topic,
        "-g",
        group,
        "-m",
        "POP",
        home=home,
    )
    assert "success" in out, out
    assert f"topic[{topic}] group[{group}] consume mode[POP] popShareQueueNum[0]" in out, out


def one_queue_topic(target: Target, home: Path, topic: str) -> None:
    """Create ``topic`` with one read and one write queue, and wait until it is routed."""
    args = ("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "1", "-w", "1")
    out = run_mqadmin(target.namesrv_addr, *args, home=home)
    assert "success" in out, out
    wait_route(target.namesrv_addr, topic)


def pop_consume(target: Target, home: Path, **args: ArgValue) -> list[Event]:
    return run_program(MAIN_CLASS, LINE, "consume", target.namesrv_addr, home, STEP_S, args)


def test_pop_push_consumer_gets_everything_and_retries_through_the_retry_topic(
    target: Target, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Six messages, each answered RECONSUME_LATER once: every one comes back once, no earlier
    than the 10 s the client asked for, with reconsumeTimes 1 under the normal topic, and is then
    acknowledged; nothing is delivered a third time within the settle time."""
    home = tmp_path_factory.mktemp(f"pop-{target.name}")
    topic, group = "PopPushT", "popPushG"
    sent = produce(target, home, topic, 6)
    set_pop_mode(target, home, topic, group)
    events = pop_consume(
        target, home, topic=topic, group=group, expect=6, settle_ms=4000, **{"reconsume-later": 1}
    )
    received = of(events, "received")
    by_id: dict[str, list[Event]] = {}
    for event in received:
        by_id.setdefault(event["msgId"], []).append(event)
    assert set(by_id) == {s["msgId"] for s in sent}
    for deliveries in by_id.values():
        assert [d["status"] for d in deliveries] == ["later", "success"], deliveries
        assert [d["reconsumeTimes"] for d in deliveries] == [0, 1]
        assert {d["topic"] for d in deliveries} == {topic}
        assert deliveries[1]["at"] - deliveries[0]["at"] >= FIRST_POP_DELAY_MS - 500
        assert deliveries[0]["body"] == deliveries[1]["body"]
    [done] = of(events, "done")
    assert (done["acked"], done["received"]) == (6, 12)


def test_two_pop_consumers_of_one_group_never_share_a_message_while_it_is_invisible(
    target: Target, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Two consumers of one group pop the same queues (queue -1): each of 40 messages is delivered
    exactly once within its 60 s invisible time."""
    home = tmp_path_factory.mktemp(f"pop-share-{target.name}")
    topic, group = "PopShareT", "popShareG"
    sent = produce(target, home, topic, 40)
    set_pop_mode(target, home, topic, group)
    events = pop_consume(target, home, topic=topic, group=group, expect=40, consumers=2, settle_ms=3000)
    received = of(events, "received")
    assert sorted(e["msgId"] for e in received) == sorted(s["msgId"] for s in sent)


def test_raw_pop_frames_answer_code_for_code(
    target: Target, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Requests the Java client does not send in this order, as raw frames: a double ack, a change
    of invisible time after the ack and an ack of an expired handle all succeed (the broker keeps
    no record of handles); out-of-range offsets, garbage handles and bad parameters get Java's codes."""
    home = tmp_path_factory.mktemp(f"pop-raw-{target.name}")
    topic, group = "RawPopT", "rawPopG"
    one_queue_topic(target, home, topic)
    produce(target, home, topic, 2)
    with RawSession(broker_of(target.namesrv_addr, topic)) as s:
        resp = pop(s, topic, group, -1, 3000)
        assert resp["code"] == SUCCESS, resp["remark"]
        first, second = popped(resp)
        assert [first["queue_offset"], second["queue_offset"]] == [0, 1]
        popped_at = time.monotonic()
        assert ack(s, topic, group, 0, 0, first["handle"])["code"] == SUCCESS
        assert ack(s, topic, group, 0, 0, first["handle"])["code"] == SUCCESS  # double ack
        changed = change_invisible(s, topic, group, 0, 0, first["handle"], 60_000)  # after the ack
        assert changed["code"] == SUCCESS
        assert changed["ext_fields"]["invisibleTime"] == "60000"
        assert pop(s, topic, group, -1, 3000)["code"] == POLLING_TIMEOUT  # both invisible
        time.sleep(max(0.0, 3.5 - (time.monotonic() - popped_at)))
        assert ack(s, topic, group, 0, 1, second["handle"])["code"] == SUCCESS  # expired handle
        codes = {
            "ack past max": ack(s, topic, group, 0, 7, first["handle"])["code"],
            "ack garbage handle": ack(s, topic, group, 0, 0, "garbage")["code"],
            "ack bad number in handle": ack(s, topic, group, 0, 0, "0 x 3000 0 0 broker-a 0 0")["code"],
            "ack queue 99": ack(s, topic, group, 99, 0, first["handle"])["code"],
            "ack unknown topic": ack(s, "NoSuchPopTopic", group, 0, 0, first["handle"])["code"],
            "change at max": change_invisible(s, topic, group, 0, 2, first["handle"], 1000)["code"],
            "pop 33": pop(s, topic, group, -1, 3000, maxMsgNums="33")["code"],
            "pop queue 9": pop(s, topic, group, 9, 3000)["code"],
            "pop unknown topic": pop(s, "NoSuchPopTopic", group, -1, 3000)["code"],
            "empty batch ack": s.call(BATCH_ACK_MESSAGE, {}, b'{"acks":[]}')["code"],
            "mode on retry topic": s.call(
                SET_MESSAGE_REQUEST_MODE, {}, b'{"consumerGroup":"g","mode":"POP","topic":"%RETRY%g"}'
            )["code"],
        }
        assert codes == {
            "ack past max": NO_MESSAGE,
            "ack garbage handle": SYSTEM_ERROR,
            "ack bad number in handle": SYSTEM_ERROR,
            "ack queue 99": MESSAGE_ILLEGAL,
            "ack unknown topic": TOPIC_NOT_EXIST,
            "change at max": NO_MESSAGE,
            "pop 33": INVALID_PARAMETER,
            "pop queue 9": INVALID_PARAMETER,
            "pop unknown topic": TOPIC_NOT_EXIST,
            "empty batch ack": NO_MESSAGE,
            "mode on retry topic": NO_PERMISSION,
        }
        info = s.call(POLLING_INFO, {"consumerGroup": group, "topic": topic, "queueId": "0"})
        assert (info["code"], info["ext_fields"]["pollingNum"]) == (SUCCESS, "0")


def test_kill_between_pop_and_ack_revives_only_what_was_not_acked(
    target: Target, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Two messages popped with a 15 s invisible time, one acked; the broker is killed (-9) once the
    pop's offset commit has been persisted (flushConsumerOffsetInterval, 5 s). After the restart the
    unacknowledged message comes back from the retry topic, no earlier than its invisible time, with
    reconsumeTimes 1; the acknowledged one never does."""
    home = tmp_path_factory.mktemp(f"pop-kill-{target.name}")
    topic, group = "KillPopT", "killPopG"
    one_queue_topic(target, home, topic)
    produce(target, home, topic, 2)
    with RawSession(broker_of(target.namesrv_addr, topic)) as s:
        first, second = popped(pop(s, topic, group, -1, 15_000))
        popped_at = time.monotonic()
        assert ack(s, topic, group, 0, first["queue_offset"], first["handle"])["code"] == SUCCESS
    wait_offset_persisted(target.persisted_offsets, topic, group)
    target.restart_broker(kill=True)
    with RawSession(wait_route(target.namesrv_addr, topic)) as s:
        expect_revived_once(s, topic, group, second, popped_at, 15, timeout_s=60)


def test_raw_orderly_pop_blocks_until_acked_as_the_real_broker(
    target: Target, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Orderly POP as raw frames (what the gRPC FIFO consumers get through the proxy): revive queue
    999, the queue blocked while its batch is unacked and invisible, acks moving the consumer
    offset, a stale handle ignored, an offset outside the batch refused, and the batch delivered
    again after its invisible time with its delivery counts in orderCountInfo."""
    home = tmp_path_factory.mktemp(f"pop-order-{target.name}")
    topic, group = "OrderPopT", "orderPopG"
    one_queue_topic(target, home, topic)
    produce(target, home, topic, 4)
    with RawSession(broker_of(target.namesrv_addr, topic)) as s:
        resp = pop(s, topic, group, 0, 3000, order="true", maxMsgNums="3")
        assert resp["code"] == SUCCESS, resp["remark"]
        assert resp["ext_fields"]["reviveQid"] == "999"
        assert resp["ext_fields"]["orderCountInfo"] == "0 0 0"
        batch = popped(resp)
        assert [m["queue_offset"] for m in batch] == [0, 1, 2]
        popped_at = time.monotonic()
        assert pop(s, topic, group, 0, 3000, order="true")["code"] == POLLING_TIMEOUT
        assert ack(s, topic, group, 0, 0, batch[0]["handle"])["code"] == SUCCESS
        parts = batch[1]["handle"].split(" ")
        parts[1] = str(int(parts[1]) - 1)  # another pop time: a handle of an older batch
        assert ack(s, topic, group, 0, 1, " ".join(parts))["code"] == SUCCESS
        outside = batch[0]["handle"].rsplit(" ", 1)[0] + " 3"
        assert ack(s, topic, group, 0, 3, outside)["code"] == MESSAGE_ILLEGAL
        deadline = time.monotonic() + 30
        while (again := pop(s, topic, group, 0, 3000, order="true", maxMsgNums="3"))["code"] != SUCCESS:
            assert again["code"] == POLLING_TIMEOUT, again
            assert time.monotonic() < deadline, "not delivered again within 30 s"
            time.sleep(0.2)
        assert time.monotonic() - popped_at >= 3.0 - 0.2  # not before its invisible time
        assert [m["queue_offset"] for m in popped(again)] == [1, 2, 3]
        assert again["ext_fields"]["orderCountInfo"] == "0 qo0%1 1;0 qo0%2 1;0 0 0"
        for message in popped(again):
            assert ack(s, topic, group, 0, message["queue_offset"], message["handle"])["code"] == SUCCESS
        assert pop(s, topic, group, 0, 3000, order="true")["code"] == POLLING_TIMEOUT


def test_raw_pop_filters_by_sql92_even_without_enable_property_filter(
    target: Target, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A SQL92 POP on a broker with the default enablePropertyFilter=false: 5.3.3 evaluates it (the
    flag guards only PULL subscriptions); a malformed expression is SUBSCRIPTION_PARSE_FAILED."""
    home = tmp_path_factory.mktemp(f"pop-sql-{target.name}")
    topic = "SqlPopT"
    sent = run_scenario(
        LINE, "produce", target.namesrv_addr, home, STEP_S, topic=topic, count=6, tags="TagA,TagB,TagC"
    )
    wanted = sorted(e["msgId"] for e in of(sent, "sent") if e["tags"] == "TagB")
    with RawSession(broker_of(target.namesrv_addr, topic)) as s:
        resp = pop(s, topic, "sqlPopG", -1, 60_000, expType="SQL92", exp="TAGS = 'TagB'")
        assert resp["code"] == SUCCESS, resp["remark"]
        got = sorted(m["properties_map"]["UNIQ_KEY"] for m in popped(resp))
        assert got == wanted
        bad = pop(s, topic, "sqlPopBad", -1, 60_000, expType="SQL92", exp="a >>> 1")
        assert (bad["code"], bad["remark"]) == (
            SUBSCRIPTION_PARSE_FAILED,
            "parse the consumer's subscription failed",
        )


def test_mqadmin_on_a_pop_group(target: Target, tmp_path_factory: pytest.TempPathFactory) -> None:
    """After a POP group consumed everything: ``consumerProgress`` shows its queues with nothing left
    (offsets move when messages are popped), ``exportPopRecord`` succeeds (nothing to move out of a
    RocksDB store), ``setConsumeMode`` back to PULL is accepted."""
    home = tmp_path_factory.mktemp(f"pop-admin-{target.name}")
    topic, group = "PopAdminT", "popAdminG"
    produce(target, home, topic, 4)
    set_pop_mode(target, home, topic, group)
    pop_consume(target, home, topic=topic, group=group, expect=4, settle_ms=500)
    progress = run_mqadmin(target.namesrv_addr, "consumerProgress", "-g", group, home=home)
    rows = [line.split() for line in progress.splitlines() if line.startswith(topic)]
    assert rows, progress
    assert sum(int(row[3]) for row in rows) == 4, progress  # broker offsets
    assert all(row[3] == row[4] for row in rows), progress  # consumer offset = broker offset
    assert "Diff Total: 0" in progress, progress
    exported = run_mqadmin(target.namesrv_addr, "exportPopRecord", "-c", "DefaultCluster", home=home)
    assert "Export broker records, brokerName=broker-a" in exported, exported
    assert "dryRun=false" in exported, exported
    assert "error" not in exported, exported
    back = run_mqadmin(
        target.namesrv_addr,
        "setConsumeMode",
        "-c",
        "DefaultCluster",
        "-t",
        topic,
        "-g",
        group,
        "-m",
        "PULL",
        home=home,
    )
    assert f"topic[{topic}] group[{group}] consume mode[PULL] popShareQueueNum[0]" in back, back
