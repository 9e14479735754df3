"""Fault rules without sockets: the rule table (matching, limits, expiry, probability, errors)
and what the dispatcher makes of a fired rule (an injected answer, none, a closed connection,
a late answer)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.pull import PullMessageRequestHeader
from codec.headers.send import SendMessageRequestHeaderV2
from gateway.transport.dispatch import ConnectionInfo, Dispatcher, RequestContext
from gateway.transport.faults import BUSY_REMARK, FaultRule, FaultRuleError, FaultTable


def _send_header(topic: str = "T", group: str = "PG") -> SendMessageRequestHeaderV2:
    return SendMessageRequestHeaderV2(
        producer_group=group,
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=1,
        flag=0,
    )


def _pull_header(topic: str = "T", group: str = "CG") -> PullMessageRequestHeader:
    return PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=0,
        queue_offset=0,
        max_msg_nums=32,
        sys_flag=0,
        commit_offset=0,
        suspend_timeout_millis=0,
    )


SEND = RequestCode.SEND_MESSAGE_V2


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_no_rule_means_an_empty_tuple_for_every_server() -> None:
    table = FaultTable()
    assert table.point("broker").rules == ()
    assert table.point("namesrv").rules == ()
    assert table.point("broker").match(SEND, _send_header(), "c") is None


def test_a_rule_matches_by_name_or_number_and_counts_its_firings(caplog: pytest.LogCaptureFixture) -> None:
    table = FaultTable()
    by_name = table.add(request="SEND_MESSAGE_V2", respond=2)
    by_number = table.add({"request": 11, "respond": 1, "remark": "no"})
    broker = table.point("broker")
    with caplog.at_level(logging.INFO, logger="gateway.transport.faults"):
        fault = broker.match(SEND, _send_header(), "conn 7")
    assert fault is not None
    assert fault.id == by_name
    assert fault.remark == BUSY_REMARK  # SYSTEM_BUSY without a remark: the broker's own text
    fired = [r.getMessage() for r in caplog.records if "fired" in r.getMessage()]
    assert fired == [f"fault {by_name} fired on broker: SEND_MESSAGE_V2 from conn 7, respond 2 (1 time(s))"]
    pulled = broker.match(RequestCode.PULL_MESSAGE, _pull_header(), "c")
    assert pulled is not None
    assert pulled.id == by_number
    assert pulled.remark == "no"
    assert broker.match(RequestCode.HEART_BEAT, None, "c") is None
    assert [(f["id"], f["request"], f["fired"]) for f in table.list()] == [
        (by_name, "SEND_MESSAGE_V2", 1),
        (by_number, "PULL_MESSAGE", 1),
    ]


def test_topic_and_group_narrow_a_rule() -> None:
    table = FaultTable()
    table.add(request="SEND_MESSAGE_V2", respond=2, topic="A", group="PG1")
    table.add(request="PULL_MESSAGE", drop=True, group="CG1")
    broker = table.point("broker")
    assert broker.match(SEND, _send_header("B", "PG1"), "c") is None
    assert broker.match(SEND, _send_header("A", "PG2"), "c") is None
    assert broker.match(SEND, _send_header("A", "PG1"), "c") is not None
    assert broker.match(RequestCode.PULL_MESSAGE, _pull_header(group="CG2"), "c") is None
    assert broker.match(RequestCode.PULL_MESSAGE, _pull_header(group="CG1"), "c") is not None
    assert broker.match(SEND, None, "c") is None  # no header, no topic to match


def test_times_limits_a_rule_which_stays_listed_inactive() -> None:
    table = FaultTable()
    fault_id = table.add(request="SEND_MESSAGE_V2", respond=2, times=2)
    broker = table.point("broker")
    assert [broker.match(SEND, _send_header(), "c") is not None for _ in range(3)] == [True, True, False]
    assert broker.rules == ()
    assert table.get(fault_id) == {
        "id": fault_id,
        "request": "SEND_MESSAGE_V2",
        "target": "broker",
        "respond": 2,
        "times": 2,
        "fired": 2,
        "active": False,
    }


def test_duration_ends_a_rule() -> None:
    clock = _Clock()
    table = FaultTable(clock=clock)
    table.add(request="SEND_MESSAGE_V2", close=True, duration_ms=500)
    broker = table.point("broker")
    clock.now += 0.499
    assert broker.match(SEND, _send_header(), "c") is not None
    clock.now += 0.001
    assert broker.match(SEND, _send_header(), "c") is None
    assert broker.rules == ()
    assert table.list()[0]["active"] is False


def test_probability_is_reproducible_with_a_seed() -> None:
    def firings(seed: int) -> list[bool]:
        table = FaultTable(seed=seed)
        table.add(request="SEND_MESSAGE_V2", respond=2, probability=0.5)
        point = table.point("broker")
        return [point.match(SEND, _send_header(), "c") is not None for _ in range(200)]

    first = firings(7)
    assert first == firings(7)
    assert 60 < sum(first) < 140  # about half, with a wide margin for one seed


def test_targets_are_separate_and_remove_and_clear_work() -> None:
    table = FaultTable()
    on_namesrv = table.add(request="GET_ROUTEINFO_BY_TOPIC", drop=True, target="namesrv")
    on_broker = table.add(request="SEND_MESSAGE_V2", respond=2)
    assert table.point("broker").match(RequestCode.GET_ROUTEINFO_BY_TOPIC, None, "c") is None
    assert table.point("namesrv").match(RequestCode.GET_ROUTEINFO_BY_TOPIC, None, "c") is not None
    assert table.remove(on_namesrv) is True
    assert table.remove(on_namesrv) is False
    assert table.point("namesrv").rules == ()
    assert [f["id"] for f in table.list()] == [on_broker]
    assert table.clear() == 1
    assert table.list() == []
    assert table.point("broker").rules == ()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"respond": 2}, "request: missing"),
        ({"request": "NO_SUCH_CODE", "respond": 2}, "unknown RequestCode name 'NO_SUCH_CODE'"),
        ({"request": "SEND_MESSAGE_V2"}, "needs respond, close, drop or delay_ms"),
        ({"request": "SEND_MESSAGE_V2", "respond": 2, "close": True}, "respond and close"),
        ({"request": "SEND_MESSAGE_V2", "respond": "2"}, "respond: '2' is not an integer"),
        ({"request": "SEND_MESSAGE_V2", "drop": "yes"}, "drop: 'yes' is not true or false"),
        ({"request": "SEND_MESSAGE_V2", "drop": True, "times": 0}, "times: 0 is below 1"),
        ({"request": "SEND_MESSAGE_V2", "drop": True, "probability": 1.5}, "probability: 1.5 is above 1"),
        ({"request": "SEND_MESSAGE_V2", "drop": True, "target": "proxy"}, "target: 'proxy'"),
        ({"request": "SEND_MESSAGE_V2", "drop": True, "remark": "x"}, "remark: only with respond"),
        ({"request": "SEND_MESSAGE_V2", "drop": True, "colour": 1}, "unknown field(s) colour"),
        ({"request": True, "drop": True}, "neither a RequestCode name nor a number"),
    ],
)
def test_malformed_rules_are_refused_with_the_field_named(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(FaultRuleError) as caught:
        FaultRule.of(spec)
    assert message in str(caught.value)


def test_a_delay_needs_a_table_that_can_wait() -> None:
    with pytest.raises(FaultRuleError, match="no way to wait"):
        FaultTable().add(request="SEND_MESSAGE_V2", delay_ms=10)


def test_the_json_form_round_trips() -> None:
    spec = {
        "request": "PULL_MESSAGE",
        "target": "broker",
        "topic": "T",
        "group": "G",
        "respond": 26,
        "remark": "r",
        "times": 3,
        "duration_ms": 1000,
        "delay_ms": 5,
        "probability": 0.25,
    }
    assert FaultRule.of(spec).to_json() == spec


# -- the dispatcher -------------------------------------------------------------------------------


class _Peer:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _handled(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    return req.make_response(ResponseCode.SUCCESS, remark=f"handled {header.topic}")


def _setup(table: FaultTable) -> tuple[Dispatcher, RequestContext, _Peer]:
    dispatcher = Dispatcher("broker", faults=table.point("broker"))
    dispatcher.register(SEND, _handled, SendMessageRequestHeaderV2)
    peer = _Peer()
    ctx = RequestContext(ConnectionInfo(1, "127.0.0.1:1", "127.0.0.1:2", peer))  # type: ignore[arg-type]
    return dispatcher, ctx, peer


def _send() -> RemotingCommand:
    return RemotingCommand.request(SEND, _send_header("T"), opaque=5)


def test_the_dispatcher_answers_what_a_rule_says_then_the_handler_again() -> None:
    table = FaultTable()
    table.add(request="SEND_MESSAGE_V2", respond=2, times=1)
    dispatcher, ctx, _peer = _setup(table)
    first = dispatcher.dispatch_nowait(ctx, _send())
    assert isinstance(first, RemotingCommand)
    assert (first.code, first.remark, first.opaque, first.is_response) == (2, BUSY_REMARK, 5, True)
    second = dispatcher.dispatch_nowait(ctx, _send())
    assert isinstance(second, RemotingCommand)
    assert (second.code, second.remark) == (0, "handled T")


def test_drop_answers_nothing_and_close_closes_the_connection() -> None:
    table = FaultTable()
    drop = table.add(request="SEND_MESSAGE_V2", drop=True)
    dispatcher, ctx, peer = _setup(table)
    assert dispatcher.dispatch_nowait(ctx, _send()) is None
    assert peer.closed is False
    table.remove(drop)
    table.add(request="SEND_MESSAGE_V2", close=True)
    assert dispatcher.dispatch_nowait(ctx, _send()) is None
    assert peer.closed is True


async def test_a_delay_postpones_the_real_answer(autojump_clock: trio.testing.MockClock) -> None:
    table = FaultTable(trio.sleep)
    table.add(request="SEND_MESSAGE_V2", delay_ms=1500)
    dispatcher, ctx, _peer = _setup(table)
    began = trio.current_time()
    response = await dispatcher.dispatch(ctx, _send())
    assert trio.current_time() - began == pytest.approx(1.5)
    assert response is not None
    assert (response.code, response.remark) == (0, "handled T")


async def test_a_delay_then_a_respond(autojump_clock: trio.testing.MockClock) -> None:
    table = FaultTable(trio.sleep)
    table.add(request="SEND_MESSAGE_V2", delay_ms=200, respond=14, remark="slow and refused")
    dispatcher, ctx, _peer = _setup(table)
    began = trio.current_time()
    response = await dispatcher.dispatch(ctx, _send())
    assert trio.current_time() - began == pytest.approx(0.2)
    assert response is not None
    assert (response.code, response.remark) == (14, "slow and refused")
