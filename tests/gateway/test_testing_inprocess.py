"""The in-process gateway (gateway/testing/inprocess.py) and the pytest plugin's fixtures, used the
way another project would: the plugin is found through its ``pytest11`` entry point."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import grpc
import pytest

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.admin import CreateTopicRequestHeader
from gateway.testing.inprocess import InProcessGateway
from gateway.testing.probe import ProbeError, call, probe, split_address
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

ROUTE_WAIT_S = 10.0  # the broker registers a new topic with the NameServer at once
READY_LIMIT_S = 5.0  # generous bound for a shared 2-core CI machine; ~0.1 s measured


def test_starts_on_free_ports_with_a_temporary_store_and_cleans_up() -> None:
    gateway = InProcessGateway().start()
    try:
        assert gateway.ready_seconds is not None
        assert gateway.ready_seconds < READY_LIMIT_S
        assert gateway.namesrv_addr.startswith("127.0.0.1:")
        assert probe(gateway.namesrv_addr).masters == {"broker-a": gateway.broker_addr}
        store = gateway.store_dir
        assert (store / "commitlog").is_dir()
    finally:
        gateway.stop()
    assert not store.exists()
    with pytest.raises(ProbeError):
        probe(gateway.namesrv_addr, timeout=0.5)


def test_two_gateways_side_by_side_and_a_given_store_is_kept(tmp_path: Path) -> None:
    with InProcessGateway(tmp_path / "a") as a, InProcessGateway(tmp_path / "b") as b:
        assert a.namesrv_addr != b.namesrv_addr
        assert probe(a.namesrv_addr).masters["broker-a"] == a.broker_addr
        assert probe(b.namesrv_addr).masters["broker-a"] == b.broker_addr
    assert (tmp_path / "a" / "commitlog").is_dir()


def test_port_in_use_is_reported() -> None:
    with InProcessGateway() as first:
        port = int(first.namesrv_addr.rpartition(":")[2])
        second = InProcessGateway(namesrv_port=port)
        with pytest.raises(OSError, match="in use"):
            second.start()
        assert not second.store_dir.exists()


def _create_topic(broker_addr: str, topic: str) -> None:
    """UPDATE_AND_CREATE_TOPIC over remoting, as ``mqadmin updateTopic``."""
    header = CreateTopicRequestHeader(
        topic=topic, default_topic="TBW102", read_queue_nums=2, write_queue_nums=2, perm=6,
        topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=False,
    )  # fmt: skip
    with socket.create_connection(split_address(broker_addr), timeout=5) as sock:
        response = call(
            sock, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header, opaque=1), 5
        )
    assert response.code == ResponseCode.SUCCESS, response.remark


def _grpc_call(channel: grpc.Channel, method: str, request: Any, response_type: Any) -> Any:
    rpc = channel.unary_unary(
        "/apache.rocketmq.v2.MessagingService/" + method,
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response_type.FromString,
    )
    metadata = [("x-mq-client-id", "inprocess-test"), ("x-mq-language", "PYTHON"), ("x-mq-protocol", "v2")]
    return rpc(request, metadata=metadata, timeout=10)


def test_grpc_endpoint_routes_and_takes_a_message() -> None:
    """A RocketMQ 5 client's first calls: the route of a topic names this endpoint, and a message
    sent there is stored (its offset is the first of a queue)."""
    with InProcessGateway() as gateway:
        host, port = split_address(gateway.grpc_endpoint)
        assert (host, port) != split_address(gateway.namesrv_addr)
        _create_topic(gateway.broker_addr, "InProcessGrpc")
        endpoints = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host=host, port=port)])
        with grpc.insecure_channel(gateway.grpc_endpoint) as channel:
            request = pb.QueryRouteRequest(topic=pb.Resource(name="InProcessGrpc"), endpoints=endpoints)
            deadline = time.monotonic() + ROUTE_WAIT_S
            while (
                route := _grpc_call(channel, "QueryRoute", request, pb.QueryRouteResponse)
            ).status.code != pb.OK:
                assert time.monotonic() < deadline, route.status  # until the registration carries it
                time.sleep(0.1)
            assert {(a.host, a.port) for q in route.message_queues for a in q.broker.endpoints.addresses} == {
                (host, port)
            }
            message = pb.Message(
                topic=pb.Resource(name="InProcessGrpc"),
                body=b"hello over gRPC",
                system_properties=pb.SystemProperties(
                    message_id="01F4B2C3D4E5F60718293A4B5C", body_encoding=pb.IDENTITY, message_type=pb.NORMAL
                ),
            )
            sent = _grpc_call(
                channel, "SendMessage", pb.SendMessageRequest(messages=[message]), pb.SendMessageResponse
            )
        assert sent.status.code == pb.OK, sent.status
        assert [(e.message_id, e.offset) for e in sent.entries] == [("01F4B2C3D4E5F60718293A4B5C", 0)]


def test_grpc_endpoint_can_be_off() -> None:
    with InProcessGateway(grpc_port=None) as gateway:
        assert probe(gateway.namesrv_addr).masters == {"broker-a": gateway.broker_addr}
        with pytest.raises(RuntimeError, match="off"):
            _ = gateway.grpc_endpoint


def test_plugin_is_registered_by_entry_point() -> None:
    plugins = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugins.get("rmq_gateway") == "gateway.testing.pytest_plugin"


def test_fixture_in_another_test_suite(tmp_path: Path) -> None:
    """A foreign test file uses ``rmq_namesrv`` and ``rmq_grpc_endpoint`` with nothing but the
    installed package: it gets a ready NameServer and a gRPC endpoint that answers, and nothing is
    written under HOME."""
    home = tmp_path / "home"
    home.mkdir()
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_uses_fixture.py").write_text(
        textwrap.dedent(
            """
            import grpc
            from gateway.testing.probe import ProbeError, probe
            from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

            def test_namesrv(rmq_namesrv, rmq_gateway):
                assert rmq_namesrv == rmq_gateway.namesrv_addr
                assert probe(rmq_namesrv, topic="TBW102").topic_brokers == ("broker-a",)
                print("READY", rmq_gateway.ready_seconds)

            def test_grpc_endpoint(rmq_grpc_endpoint, rmq_gateway):
                assert rmq_grpc_endpoint == rmq_gateway.grpc_endpoint
                with grpc.insecure_channel(rmq_grpc_endpoint) as channel:
                    query = channel.unary_unary(
                        "/apache.rocketmq.v2.MessagingService/QueryRoute",
                        request_serializer=pb.QueryRouteRequest.SerializeToString,
                        response_deserializer=pb.QueryRouteResponse.FromString,
                    )
                    request = pb.QueryRouteRequest(topic=pb.Resource(name="TBW102"))
                    route = query(request, metadata=[("x-mq-client-id", "suite")], timeout=10)
                assert route.status.code == pb.ILLEGAL_TOPIC  # as the Proxy: no route of a system topic
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-qs", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t")],
        cwd=suite,
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    assert list(home.iterdir()) == []
    ready = [line for line in result.stdout.splitlines() if line.startswith("READY")]
    assert ready, result.stdout
    print(ready[0], "s: in-process fixture start to ready")
