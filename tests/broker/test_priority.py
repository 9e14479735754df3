"""Priority messages (:mod:`broker.priority`) and SWITCH_TIMER_ENGINE, the RocketMQ 5.4/5.5 features
this broker serves on remoting, against an in-process broker. (The same beside the real 5.5.0
broker: compat_tests/test_rocketmq55_compat.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.priority import (
    PROPERTY_PRIORITY,
    is_priority_message,
    message_priority,
    priority_factor,
    priority_queue,
    priority_queue_order,
)
from broker.subscription_group_manager import SubscriptionGroupConfig
from broker.topic_attributes import requested_attributes
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.base import EmptyHeader
from codec.headers.pop import PopMessageRequestHeader
from codec.java_properties import parse_properties
from codec.message import iter_records
from gateway.transport.connection import Connection
from tests.broker.helpers import running_broker, send_request


def test_the_queue_of_a_priority_message_is_its_priority_capped_by_the_queues() -> None:
    cases = [("0", 2, 0), ("2", 0, 2), ("9", 1, 3), ("-1", 1, 1), ("x", 1, 1), (" 2", 1, 1)]
    for value, sent_to, stored_in in cases:
        props = {PROPERTY_PRIORITY: value}
        assert priority_queue(props, sent_to, 4) == stored_in, value
        assert props == {PROPERTY_PRIORITY: value}
    assert priority_queue({}, 1, 4) == 1


def test_another_message_type_wins_and_loses_the_priority() -> None:
    """``parseFromMessageProperty`` checks transaction, delay, timer and sharding key first."""
    for other in ({"TRAN_MSG": "TRUE"}, {"DELAY": "3"}, {"TIMER_DELAY_SEC": "5"}, {"__SHARDINGKEY": "k"}):
        props = {PROPERTY_PRIORITY: "3", **other}
        assert not is_priority_message(props)
        assert priority_queue(props, 1, 4) == 1
        assert props == other
    assert is_priority_message({PROPERTY_PRIORITY: "3", "TRAN_MSG": "false"})
    assert message_priority({PROPERTY_PRIORITY: "+4"}) == 4


def test_priority_factor_and_queue_order() -> None:
    assert priority_factor({}) == 100
    assert priority_factor({"priority.factor": "0"}) == 0
    assert priority_factor({"+priority.factor": "40"}) == 40
    assert priority_factor({"priority.factor": "many"}) == 100
    assert priority_queue_order(4) == [3, 2, 1, 0]


def test_a_topic_takes_the_priority_message_type_and_refusals_keep_the_5_3_3_set() -> None:
    assert requested_attributes("+message.type=PRIORITY", None) == {"message.type": "PRIORITY"}
    # LITE is taken too since lite topics are served (docs/lite.md); another value is refused.
    assert requested_attributes("+message.type=LITE", None) == {"message.type": "LITE"}
    with pytest.raises(RocketMQError) as refused:
        requested_attributes("+message.type=XYZ", None)
    assert str(refused.value) == "value is not in set: [UNSPECIFIED, TRANSACTION, FIFO, MIXED, DELAY, NORMAL]"


def request(code: int, fields: dict[str, str] | None) -> RemotingCommand:
    cmd = RemotingCommand.request(code, EmptyHeader())
    cmd.ext_fields = fields
    return cmd


async def test_switch_timer_engine_answers_as_a_5_5_0_broker_with_the_time_wheel(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (_app, conn):
        code = RequestCode.SWITCH_TIMER_ENGINE
        rocksdb = "timerRocksDBEnable must be configured true when broker start"
        cases = [
            (None, ResponseCode.INVALID_PARAMETER, "param error, extFields is null"),
            ({}, ResponseCode.INVALID_PARAMETER, "param error"),
            ({"E_T": "f"}, ResponseCode.INVALID_PARAMETER, "param error"),
            ({"E_T": "R"}, ResponseCode.INVALID_PARAMETER, rocksdb),
            ({"E_T": "F"}, ResponseCode.SUCCESS, "switch timer engine success"),
        ]
        for fields, want_code, want_remark in cases:
            resp = await conn.invoke(request(code, fields), 5)
            assert (resp.code, resp.remark) == (want_code, want_remark), fields
        config = await conn.invoke(request(RequestCode.GET_BROKER_CONFIG, None), 5)
        shown = parse_properties(config.body.decode())
        assert (shown["timerRocksDBStopScan"], shown["timerStopEnqueue"]) == ("true", "false")


async def test_switch_timer_engine_without_the_time_wheel(tmp_path: Path) -> None:
    async with running_broker(tmp_path, timer_wheel_enable=False) as (_app, conn):
        resp = await conn.invoke(request(RequestCode.SWITCH_TIMER_ENGINE, {"E_T": "F"}), 5)
        assert (resp.code, resp.remark) == (
            ResponseCode.INVALID_PARAMETER,
            "broker timerWheelEnable is false",
        )


def create_topic(topic: str, attributes: str) -> RemotingCommand:
    ext = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": "4",
        "writeQueueNums": "4",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
        "attributes": attributes,
    }
    return RemotingCommand(code=RequestCode.UPDATE_AND_CREATE_TOPIC, ext_fields=ext)


def pop(topic: str, group: str, max_nums: int) -> RemotingCommand:
    header = PopMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=-1,
        max_msg_nums=max_nums,
        invisible_time=60_000,
        poll_time=0,
        born_time=0,
        init_mode=0,
        exp_type="TAG",
        exp="*",
        order=False,
    )
    return RemotingCommand.request(RequestCode.POP_MESSAGE, header)


BACKLOG = [(0, "a"), (3, "b"), (1, "c"), (7, "d"), (2, "e"), (0, "f"), (3, "g"), (1, "h"), (2, "i")]
PRIORITY_ORDER = ["b", "d", "g", "e", "i", "c", "h", "a", "f"]


async def send_backlog(conn: Connection, topic: str) -> None:
    created = await conn.invoke(create_topic(topic, "+message.type=PRIORITY"), 5)
    assert created.code == ResponseCode.SUCCESS
    queues = []
    for priority, body in BACKLOG:
        sent = await conn.invoke(send_request(topic, body.encode(), {PROPERTY_PRIORITY: str(priority)}), 5)
        assert sent.code == ResponseCode.SUCCESS
        queues.append(int((sent.ext_fields or {})["queueId"]))
    assert queues == [0, 3, 1, 3, 2, 0, 3, 1, 2]


async def test_a_priority_backlog_pops_highest_queue_first_fifo_within(tmp_path: Path) -> None:
    """The example of docs/priority.md: each message stored in the queue of its priority (capped),
    popped highest queue first, across two pops of one group."""
    async with running_broker(tmp_path) as (_app, conn):
        await send_backlog(conn, "PrioT")
        first = await conn.invoke(pop("PrioT", "g1", 4), 5)
        rest = await conn.invoke(pop("PrioT", "g1", 32), 5)
        bodies = [r.body.decode() for resp in (first, rest) for r in iter_records(resp.body)]
        assert bodies == PRIORITY_ORDER


async def test_a_group_with_priority_factor_zero_pops_from_a_random_queue_upwards(tmp_path: Path) -> None:
    """``+priority.factor=0`` (as ``mqadmin updateSubGroup --attributes`` sends it): no priority
    mode, the queues are walked upwards from a random one, never highest first."""
    async with running_broker(tmp_path) as (_app, conn):
        await send_backlog(conn, "PrioZ")
        for index in range(8):
            group = SubscriptionGroupConfig(f"zero{index}", attributes={"+priority.factor": "0"})
            update = RemotingCommand.request(
                RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, EmptyHeader(), body=group.encode()
            )
            assert (await conn.invoke(update, 5)).code == ResponseCode.SUCCESS
            resp = await conn.invoke(pop("PrioZ", f"zero{index}", 32), 5)
            bodies = [r.body.decode() for r in iter_records(resp.body)]
            assert sorted(bodies) == sorted(PRIORITY_ORDER)
            assert bodies != PRIORITY_ORDER
