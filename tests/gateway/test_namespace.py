"""Namespaces as the 5.3.3 clients apply them (NamespaceUtil), served by an in-process gateway:
two namespaces with the same topic and group names see only their own messages, retries and
dead letters; and the gateway's reset."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import trio

from broker.grpc.namespace import namespace_of, resource_of, without_namespace, wrap_namespace
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.client import ConsumerSendMsgBackRequestHeader
from gateway.control.client import ControlClient
from gateway.testing.inprocess import InProcessGateway
from gateway.testing.namespace import TestNamespace, namespace_for
from gateway.transport.client import connect
from tests.broker.helpers import pulled, send_request


@pytest.mark.parametrize(
    ("namespace", "resource", "wrapped"),
    [
        ("ns1", "T", "ns1%T"),
        ("ns1", "ns1%T", "ns1%T"),  # already in the namespace
        ("ns1", "ns2%T", "ns1%ns2%T"),  # in another one: wrapped again, as Java does
        ("ns1", "%RETRY%G", "%RETRY%ns1%G"),
        ("ns1", "%DLQ%G", "%DLQ%ns1%G"),
        ("ns1", "%RETRY%ns1%G", "%RETRY%ns1%G"),
        ("ns1", "TBW102", "TBW102"),  # system topic
        ("ns1", "rmq_sys_anything", "rmq_sys_anything"),
        ("ns1", "CID_RMQ_SYS_TRANS", "CID_RMQ_SYS_TRANS"),  # system group
        ("", "T", "T"),
        (None, "T", "T"),
        ("ns1", "", ""),
    ],
)
def test_wrap_namespace_as_namespace_util(namespace: str | None, resource: str, wrapped: str) -> None:
    assert wrap_namespace(namespace, resource) == wrapped


@pytest.mark.parametrize(
    ("resource", "bare", "namespace"),
    [
        ("ns1%T", "T", "ns1"),
        ("%RETRY%ns1%G", "%RETRY%G", "ns1"),
        ("%DLQ%ns1%G", "%DLQ%G", "ns1"),
        ("T", "T", ""),
        ("%RETRY%G", "%RETRY%G", ""),
        ("%T", "%T", ""),  # a separator first is no namespace
        ("SCHEDULE_TOPIC_XXXX", "SCHEDULE_TOPIC_XXXX", ""),
    ],
)
def test_without_namespace_and_namespace_of(resource: str, bare: str, namespace: str) -> None:
    assert (without_namespace(resource), namespace_of(resource)) == (bare, namespace)
    answer = resource_of(resource)
    assert (answer.name, answer.resource_namespace) == (bare, namespace)


def test_test_namespace_names() -> None:
    ns = TestNamespace("ns1")
    assert (ns.topic("T"), ns.group("G")) == ("ns1%T", "ns1%G")
    assert (ns.retry_topic("G"), ns.dlq_topic("G")) == ("%RETRY%ns1%G", "%DLQ%ns1%G")
    assert ns.unwrap("ns1%T") == "T"


def test_namespace_for_a_test_name_is_a_valid_unique_prefix() -> None:
    ns = namespace_for("test_send[case one/%x]", token="abc123")
    assert ns.name == "test_send_case_one_x-abc123"
    assert len(namespace_for("x" * 300).name) == 48
    assert namespace_for("t").name != namespace_for("t").name


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    with InProcessGateway(tmp_path_factory.mktemp("store"), grpc_port=None, control_port=0) as gw:
        yield gw


async def stored(gateway: InProcessGateway, topic: str, wait_for: int = 0) -> list[dict[str, Any]]:
    return await trio.to_thread.run_sync(lambda: gateway.stored_messages(topic, wait_for=wait_for))


def send_back(offset: int, group: str, delay_level: int) -> RemotingCommand:
    header = ConsumerSendMsgBackRequestHeader(offset=offset, group=group, delay_level=delay_level)
    return RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header)


async def test_two_namespaces_same_names_see_only_their_own(gateway: InProcessGateway) -> None:
    ns1, ns2 = TestNamespace("nsA"), TestNamespace("nsB")
    async with connect(gateway.broker_addr) as conn:
        for ns, count in ((ns1, 2), (ns2, 3)):
            for i in range(count):
                answer = await conn.invoke(send_request(ns.topic("Orders"), f"{ns.name}-{i}".encode()), 5)
                assert answer.code == ResponseCode.SUCCESS, answer.remark
        seen = {
            ns.name: [r.body.decode() for r in await pulled(conn, ns.topic("Orders"), queue_id=0)]
            for ns in (ns1, ns2)
        }
        assert seen == {"nsA": ["nsA-0", "nsA-1"], "nsB": ["nsB-0", "nsB-1", "nsB-2"]}
        assert await pulled(conn, "Orders", queue_id=0) == []  # no client without a namespace sent
        first = (await pulled(conn, ns1.topic("Orders"), queue_id=0))[0]
        retry = await conn.invoke(send_back(first.physical_offset, ns1.group("Billing"), 0), 5)
        dlq = await conn.invoke(send_back(first.physical_offset, ns1.group("Billing"), -1), 5)
    assert (retry.code, dlq.code) == (ResponseCode.SUCCESS, ResponseCode.SUCCESS)
    dead = await stored(gateway, ns1.dlq_topic("Billing"), 1)
    assert [(m["topic"], m["body"]) for m in dead] == [("%DLQ%nsA%Billing", "nsA-0")]
    delayed = await stored(gateway, "SCHEDULE_TOPIC_XXXX", 1)
    assert [m["properties"]["REAL_TOPIC"] for m in delayed] == ["%RETRY%nsA%Billing"]
    assert await stored(gateway, ns2.dlq_topic("Billing")) == []


async def test_reset_empties_topics_groups_offsets_messages_and_faults(gateway: InProcessGateway) -> None:
    async with connect(gateway.broker_addr) as conn:
        answer = await conn.invoke(send_request("ResetT", b"before"), 5)
        assert answer.code == ResponseCode.SUCCESS
        gateway.faults.add(request="PULL_MESSAGE", respond=2, topic="Nothing")
        broker = gateway._gateway.broker.controller  # type: ignore[union-attr]
        broker.offsets.commit("ResetG", "ResetT", 0, 1)
        broker.groups.find("ResetG")
        began = time.perf_counter()
        removed = await trio.to_thread.run_sync(gateway.reset)
        took = time.perf_counter() - began
        assert removed["topics"] >= 1
        assert removed["groups"] >= 1
        assert removed["offsets"] >= 1
        assert removed["faults"] == 1
        assert removed["queues"] >= 1
        assert took < 2.0  # a few milliseconds unloaded; the bound holds on a busy machine
        assert "ResetT" not in broker.topics.table
        assert "ResetG" not in broker.groups.table
        assert broker.offsets.offsets("ResetG", "ResetT") == {}
        assert gateway.faults.list() == []
        assert await stored(gateway, "ResetT") == []
        assert await stored(gateway, "SCHEDULE_TOPIC_XXXX") == []
        assert "TBW102" in broker.topics.table  # system topics stay
        answer = await conn.invoke(send_request("ResetT", b"after"), 5)
        assert answer.code == ResponseCode.SUCCESS
        assert answer.ext_fields["queueOffset"] == "0"  # type: ignore[index]
    assert [m["body"] for m in await stored(gateway, "ResetT", 1)] == ["after"]


async def test_reset_over_the_control_endpoint(gateway: InProcessGateway) -> None:
    client = ControlClient(gateway.control_addr)
    async with connect(gateway.broker_addr) as conn:
        answer = await conn.invoke(send_request("ResetHttpT", b"x"), 5)
        assert answer.code == ResponseCode.SUCCESS
    removed = await trio.to_thread.run_sync(client.reset)
    assert removed["topics"] >= 1
    assert removed["faults"] == 0
    assert await stored(gateway, "ResetHttpT") == []
    status, body = await trio.to_thread.run_sync(client.request, "GET", "/reset")
    assert (status, body) == (405, {"error": "method GET not allowed here (allowed: POST)"})


async def test_namespace_v2_request_fields_wrap_nothing(gateway: InProcessGateway) -> None:
    """A 5.3.3 client with ``setNamespaceV2`` adds ``nsd``/``ns`` to each request (NamespaceRpcHook);
    the broker reads neither: the message is in the plain topic, as on the real broker."""
    request = send_request("PlainV2T", b"v2")
    assert request.ext_fields is not None
    request.ext_fields.update({"nsd": "true", "ns": "nsV2"})
    async with connect(gateway.broker_addr) as conn:
        answer = await conn.invoke(request, 5)
    assert answer.code == ResponseCode.SUCCESS
    assert [m["body"] for m in await stored(gateway, "PlainV2T", 1)] == ["v2"]
    assert await stored(gateway, "nsV2%PlainV2T") == []
