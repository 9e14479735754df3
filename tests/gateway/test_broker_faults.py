"""Broker-level faults on a running gateway: a paused broker (every request accepted, none
answered) and its resumption; a full disk (writes refused with the broker's SERVICE_NOT_AVAILABLE
and its remark, over remoting and over gRPC as the Proxy relays it), set in process and over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
import trio

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.message import MessageRecord
from codec.properties import decode_properties
from gateway.control.client import ControlClient
from gateway.testing.inprocess import InProcessGateway
from gateway.transport.client import connect
from gateway.transport.connection import PeerTimeoutError
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.helpers import send_request
from tests.broker.test_grpc_service import message
from tests.broker.test_pop import GROUP, ack_request, pop_until

BROKER = "broker-a"  # the standalone gateway's broker name (BrokerConfig.broker_name)
DISK_FULL = "service not available now. It may be caused by one of the following reasons: "


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    with InProcessGateway(tmp_path_factory.mktemp("store"), control_port=0) as gw:
        yield gw


@pytest.fixture(autouse=True)
def _clean(gateway: InProcessGateway) -> Iterator[None]:
    yield
    gateway.faults.clear()
    gateway.disk_full(False)


def _grpc_send(gateway: InProcessGateway, topic: str) -> pb.SendMessageResponse:
    with grpc.insecure_channel(gateway.grpc_endpoint) as channel:
        rpc = channel.unary_unary(
            "/apache.rocketmq.v2.MessagingService/SendMessage",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.SendMessageResponse.FromString,
        )
        request = pb.SendMessageRequest(messages=[message(topic, b"g", "01DF")])
        return rpc(request, metadata=[("x-mq-client-id", "c1")], timeout=10)  # type: ignore[no-any-return]


async def test_a_paused_broker_answers_nothing_until_resumed(gateway: InProcessGateway) -> None:
    pause = gateway.faults.add(request="*", drop=True)
    assert gateway.faults.list()[0]["request"] == "*"
    async with connect(gateway.broker_addr) as conn:
        with pytest.raises(PeerTimeoutError):
            await conn.invoke(send_request("PauseT", b"x"), 0.5)
        heartbeat = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {})
        with pytest.raises(PeerTimeoutError):
            await conn.invoke(heartbeat, 0.5)
        async with connect(gateway.namesrv_addr) as namesrv:
            route = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
            assert (await namesrv.invoke(route, 5)).code == ResponseCode.SUCCESS
        assert gateway.faults.remove(pause)
        answer = await conn.invoke(send_request("PauseT", b"x"), 10)
    assert answer.code == ResponseCode.SUCCESS


async def test_disk_full_refuses_sends_as_the_broker_does(gateway: InProcessGateway) -> None:
    await trio.to_thread.run_sync(lambda: gateway.declare(topics=["DiskT"]))
    control = ControlClient(gateway.control_addr)
    assert await trio.to_thread.run_sync(control.disk_full) is True
    async with connect(gateway.broker_addr) as conn:
        refused = await conn.invoke(send_request("DiskT", b"x"), 10)
        status = (await trio.to_thread.run_sync(lambda: _grpc_send(gateway, "DiskT"))).status
        assert await trio.to_thread.run_sync(lambda: control.disk_full(False)) is False
        accepted = await conn.invoke(send_request("DiskT", b"x"), 10)
    assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert (refused.remark or "").startswith(DISK_FULL + "the broker's disk is full [")
    assert status.code == pb.INTERNAL_SERVER_ERROR
    assert status.message == refused.remark
    assert accepted.code == ResponseCode.SUCCESS


async def test_reset_turns_a_full_disk_off_and_puts_routes_back(gateway: InProcessGateway) -> None:
    await trio.to_thread.run_sync(gateway.disk_full)
    await trio.to_thread.run_sync(lambda: gateway.withhold_route(BROKER))
    removed = await trio.to_thread.run_sync(gateway.reset)
    assert (removed["diskFull"], removed["withheldRoutes"]) == (1, 1)
    async with connect(gateway.broker_addr) as conn:
        await trio.to_thread.run_sync(lambda: gateway.declare(topics=["DiskT2"]))
        answer = await conn.invoke(send_request("DiskT2", b"x"), 10)
    assert answer.code == ResponseCode.SUCCESS


async def _route_code(gateway: InProcessGateway, topic: str) -> int:
    async with connect(gateway.namesrv_addr) as namesrv:
        route = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        return (await namesrv.invoke(route, 5)).code


async def test_a_broker_taken_out_of_the_routes_and_put_back(gateway: InProcessGateway) -> None:
    await trio.to_thread.run_sync(lambda: gateway.declare(topics=["RouteT"]))
    control = ControlClient(gateway.control_addr)
    assert await _route_code(gateway, "RouteT") == ResponseCode.SUCCESS
    withheld = await trio.to_thread.run_sync(lambda: control.withhold_route(BROKER))
    assert withheld == [BROKER]
    assert await _route_code(gateway, "RouteT") == ResponseCode.TOPIC_NOT_EXIST
    async with connect(gateway.namesrv_addr) as namesrv:
        info = await namesrv.invoke(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {}), 5)
    assert BROKER.encode() not in (info.body or b"")
    back = await trio.to_thread.run_sync(lambda: control.withhold_route(BROKER, on=False))
    assert back == []
    assert await _route_code(gateway, "RouteT") == ResponseCode.SUCCESS


def _msg_ids(popped: list[tuple[MessageRecord, str]]) -> list[str]:
    return [decode_properties(record.properties)["UNIQ_KEY"] for record, _ in popped]


async def test_rewind_pops_the_last_messages_again_with_their_msg_id(gateway: InProcessGateway) -> None:
    topic = "RewindT"
    await trio.to_thread.run_sync(lambda: gateway.declare(topics=[topic]))
    async with connect(gateway.broker_addr) as conn:
        for i in range(3):
            sent = await conn.invoke(send_request(topic, b"m%d" % i, {"UNIQ_KEY": f"U{i}"}, queue_id=0), 5)
            assert sent.code == ResponseCode.SUCCESS
        first = await pop_until(conn, topic, 60_000, 10)
        for _, handle in first.messages:
            assert (await conn.invoke(ack_request(topic, handle), 5)).code == ResponseCode.SUCCESS
        control = ControlClient(gateway.control_addr)
        offsets = await trio.to_thread.run_sync(lambda: control.rewind(GROUP, topic, 2))
        again = await pop_until(conn, topic, 60_000, 10)
        acks = [(await conn.invoke(ack_request(topic, h), 5)).code for _, h in again.messages]
    assert sorted(_msg_ids(first.messages)) == ["U0", "U1", "U2"]
    assert offsets[0] == 1  # 3 popped, back by 2; the empty queues stay at 0
    assert set(offsets.values()) - {1} <= {0}
    assert sorted(_msg_ids(again.messages)) == ["U1", "U2"]
    assert acks == [ResponseCode.SUCCESS] * 2


def test_rewind_of_an_unknown_topic_or_group_is_a_404(gateway: InProcessGateway) -> None:
    control = ControlClient(gateway.control_addr)
    assert control.request("POST", "/groups/nobody/rewind?topic=NoSuchTopic")[0] == 404
    assert control.request("POST", "/groups/nobody/rewind?topic=TBW102&count=2")[0] == 404
    assert control.request("POST", "/groups/g/rewind?topic=TBW102&count=0")[0] == 400
