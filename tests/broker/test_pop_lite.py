"""POP_LITE_MESSAGE (``PopLiteMessageProcessor``) and the lite ACK_MESSAGE /
CHANGE_MESSAGE_INVISIBLETIME (``AckMessageProcessor.ackLite``) on a broker assembled in-process,
without sockets: the answer as the 5.5 client (``MQClientAPIImpl.processPopLiteResponse``) reads
it, orderly per lite topic, and Java's refusals. (Through the real 5.5.0 Proxy in cluster mode in
front of our broker: compat_tests/test_grpc55_compat.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from broker.app import Broker
from broker.lite import to_lmq_name
from broker.processors.pop_lite import lite_order_count_info
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.extra_info import POP_ORDER_REVIVE_QUEUE, build_extra_info
from codec.headers.base import CustomHeader
from codec.headers.lite import PopLiteMessageRequestHeader, PopLiteMessageResponseHeader
from codec.headers.pop import AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader
from codec.message import MessageRecord, iter_records
from codec.properties import decode_properties, encode_properties
from gateway.transport.dispatch import ConnectionInfo, RequestContext
from tests.broker.test_lite_admin import CLIENT, GROUP, PARENT, lite_broker

INVISIBLE_MS = 60_000


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """test_lite_admin's broker: CLIENT subscribed to l0 (2 messages, group offset 1) and l5
    (none); l1 (1 message) subscribed by nobody."""
    with lite_broker(tmp_path) as found:
        yield found


def ask(broker: Broker, code: int, header: CustomHeader) -> RemotingCommand:
    async def main() -> RemotingCommand:
        ctx = RequestContext(ConnectionInfo(1, "127.0.0.1:50000", "127.0.0.1:10911"))
        response = await broker.dispatcher.dispatch(ctx, RemotingCommand.request(code, header))
        assert response is not None
        return response

    return trio.run(main)


def pop(broker: Broker, topic: str = PARENT, group: str = GROUP, max_num: int = 32) -> RemotingCommand:
    header = PopLiteMessageRequestHeader(
        client_id=CLIENT,
        consumer_group=group,
        topic=topic,
        max_msg_num=max_num,
        invisible_time=INVISIBLE_MS,
        poll_time=0,
        born_time=broker.controller.now_ms(),
    )
    return ask(broker, RequestCode.POP_LITE_MESSAGE, header)


def popped(response: RemotingCommand) -> list[tuple[str, str, str, bytes]]:
    """(topic, INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET, body) of each message of the body."""
    out = []
    for record in iter_records(bytes(response.body)):
        props = decode_properties(record.properties)
        out.append(
            (record.topic, props["INNER_MULTI_DISPATCH"], props["INNER_MULTI_QUEUE_OFFSET"], record.body)
        )
    return out


def ack_header(broker: Broker, response: RemotingCommand, lite: str, offset: int) -> AckMessageRequestHeader:
    """The ack a 5.5 Proxy sends for one popped message: the handle the client builds from the
    answer (``processPopLiteResponse``: queue 0, the LMQ offset) and the lite topic."""
    answer = response.header(PopLiteMessageResponseHeader)
    extra = build_extra_info(
        0, answer.pop_time, answer.invisible_time, answer.revive_qid, PARENT,
        broker.config.broker_name, 0, offset,
    )  # fmt: skip
    return AckMessageRequestHeader(
        consumer_group=GROUP, topic=PARENT, queue_id=0, extra_info=extra, offset=offset, lite_topic=lite
    )


def test_a_pop_answers_the_subscribed_lite_topics_messages_as_the_parents_with_their_lmq_queue(
    broker: Broker,
) -> None:
    broker.controller.offsets.commit(GROUP, to_lmq_name(PARENT, "l1"), 0, 0)  # l1: not subscribed
    response = pop(broker)
    assert (response.code, response.remark) == (ResponseCode.SUCCESS, "FOUND")
    # l0 from the group's offset 1; the client holds no subscription to l1.
    assert popped(response) == [(PARENT, to_lmq_name(PARENT, "l0"), "1", b"m1")]
    header = response.header(PopLiteMessageResponseHeader)
    assert (header.invisible_time, header.revive_qid, header.order_count_info) == (
        INVISIBLE_MS,
        POP_ORDER_REVIVE_QUEUE,
        "0",
    )
    assert (header.start_offset_info, header.msg_offset_info) == (None, None)
    assert abs(header.pop_time - broker.controller.now_ms()) < 60_000


def test_a_lite_topic_is_popped_orderly_and_its_ack_through_the_parent_frees_the_next(broker: Broker) -> None:
    lmq = to_lmq_name(PARENT, "l0")
    broker.controller.offsets.commit(GROUP, lmq, 0, 0)
    assert broker.store.put_message(MessageRecord(topic=lmq, queue_id=0, body=b"m2")).ok
    first = pop(broker, max_num=1)
    assert [body for *_, body in popped(first)] == [b"m0"]
    # Its next message waits for the ack (FIFO per lite topic).
    blocked = pop(broker)
    assert (blocked.code, blocked.remark) == (ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE")
    waiting = blocked.header(PopLiteMessageResponseHeader)
    assert (waiting.revive_qid, waiting.order_count_info) == (POP_ORDER_REVIVE_QUEUE, "")
    acked = ask(broker, RequestCode.ACK_MESSAGE, ack_header(broker, first, "l0", 0))
    assert acked.code == ResponseCode.SUCCESS, acked.remark
    rest = pop(broker)
    assert [body for *_, body in popped(rest)] == [b"m1", b"m2"]
    assert rest.header(PopLiteMessageResponseHeader).order_count_info == "0;0"
    # The lite topic's own offset moved; the parent topic's queues were never read.
    assert broker.controller.offsets.query(GROUP, lmq, 0) == 1


def test_a_lite_change_of_invisible_time_reaches_the_lmq_queue(broker: Broker) -> None:
    lmq = to_lmq_name(PARENT, "l0")
    first = pop(broker)
    ack = ack_header(broker, first, "l0", 1)
    change = ChangeInvisibleTimeRequestHeader(
        consumer_group=GROUP, topic=PARENT, queue_id=0, extra_info=ack.extra_info, offset=1,
        invisible_time=0, lite_topic="l0",
    )  # fmt: skip
    changed = ask(broker, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, change)
    assert changed.code == ResponseCode.SUCCESS, changed.remark
    # Visible again at once: the next pop hands it out again, its consume count now 1 (the
    # per-offset entry, which ExtraInfoUtil.parseLiteOrderCountInfo reads as 1).
    again = pop(broker)
    assert popped(again) == [(PARENT, lmq, "1", b"m1")]
    assert again.header(PopLiteMessageResponseHeader).order_count_info == "0 qo0%1 1"


def test_refusals_of_lite_pops_and_acks(broker: Broker) -> None:
    def refusal(response: RemotingCommand) -> tuple[int, str | None]:
        return response.code, response.remark

    unbound = pop(broker, group="Unbound")
    assert unbound.header(PopLiteMessageResponseHeader).pop_time == 0  # the header is always there
    assert {
        "plain topic": refusal(pop(broker, topic="Plain")),
        "unbound group": refusal(unbound),
        "no topic": refusal(pop(broker, topic="Nowhere")),
        "too many": refusal(pop(broker, max_num=33)),
    } == {
        "plain topic": (ResponseCode.INVALID_PARAMETER, "the topic [Plain] message type not match"),
        "unbound group": (ResponseCode.INVALID_PARAMETER, "subscription bind topic not match, Unbound"),
        "no topic": (ResponseCode.TOPIC_NOT_EXIST, "topic [Nowhere] not exist, apply first please!"),
        "too many": (
            ResponseCode.INVALID_PARAMETER,
            f"the broker[{broker.config.broker_ip1}] pop message's num is greater than 32",
        ),
    }
    first = pop(broker)
    good = ack_header(broker, first, "l0", 1)
    unbound_ack = AckMessageRequestHeader(
        consumer_group="Unbound",
        topic=PARENT,
        queue_id=0,
        extra_info=good.extra_info,
        offset=1,
        lite_topic="l0",
    )
    not_orderly = AckMessageRequestHeader(
        consumer_group=GROUP, topic=PARENT, queue_id=0, offset=1, lite_topic="l0",
        extra_info=good.extra_info.replace(f" {POP_ORDER_REVIVE_QUEUE} ", " 0 "),
    )  # fmt: skip
    assert refusal(ask(broker, RequestCode.ACK_MESSAGE, unbound_ack)) == (
        ResponseCode.INVALID_PARAMETER,
        "group type or bind topic not match.",
    )
    assert refusal(ask(broker, RequestCode.ACK_MESSAGE, not_orderly)) == (
        ResponseCode.INVALID_PARAMETER,
        "ack queue illegal.",
    )
    # ACK_LITE_MESSAGE is declared in 5.5.0 but no processor serves it (acks go as ACK_MESSAGE).
    undeclared = ask(broker, RequestCode.ACK_LITE_MESSAGE, good)
    assert undeclared.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def test_order_count_info_is_one_count_per_message() -> None:
    """``transformOrderCountInfo``: none yet, per-offset entries, or the queue's count alone."""
    assert lite_order_count_info([], 3) == "0;0;0"
    assert lite_order_count_info(["0 qo0%5 1", "0 qo0%6 2", "0 0 0"], 2) == "0 qo0%5 1;0 qo0%6 2"
    assert lite_order_count_info(["0 0 4"], 2) == "4;4"
    assert lite_order_count_info(["junk"], 2) == "0;0"


def test_the_records_keep_their_body_and_other_properties(broker: Broker) -> None:
    lmq = to_lmq_name(PARENT, "l5")
    props = encode_properties({"__LITE_TOPIC": "l5", "UNIQ_KEY": "ID-1"})
    assert broker.store.put_message(MessageRecord(topic=lmq, queue_id=0, body=b"x", properties=props)).ok
    broker.controller.offsets.commit(GROUP, lmq, 0, 0)
    records = [r for r in iter_records(bytes(pop(broker).body)) if r.body == b"x"]
    assert len(records) == 1
    found = decode_properties(records[0].properties)
    assert (found["__LITE_TOPIC"], found["UNIQ_KEY"], found["INNER_MULTI_DISPATCH"]) == ("l5", "ID-1", lmq)
