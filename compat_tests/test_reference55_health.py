"""The second reference starts and serves: Apache RocketMQ 5.5.0's NameServer, broker and gRPC
Proxy in cluster mode (``ReferenceServers(version="5.5.0")``), from Maven Central's jars, one of
each for the module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.frame_oracle import repair_fastjson
from compat_tests.pop_raw import RawSession
from compat_tests.reference import REFERENCE_LIBS, ReferenceServers, free_port, run_mqadmin, topic_route

VERSION = "5.5.0"
GET_BROKER_RUNTIME_INFO = 28
GET_ROUTEINFO_BY_TOPIC = 105
REPO = Path(__file__).resolve().parent.parent


class Servers55:
    def __init__(self, servers: ReferenceServers, grpc_port: int, proxy_remoting_port: int) -> None:
        self.servers = servers
        self.grpc_port = grpc_port
        self.proxy_remoting_port = proxy_remoting_port


@pytest.fixture(scope="module")
def servers55(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers55]:
    if not REFERENCE_LIBS[VERSION].is_dir():
        pytest.fail("the 5.5.0 reference jars are missing: run scripts/setup-java.sh")
    servers = ReferenceServers.on_loopback(tmp_path_factory.mktemp("ref55"), version=VERSION)
    servers.checks_exits = True
    try:
        servers.start_namesrv()
        servers.start_broker()
        servers.wait_registered()
        grpc_port, remoting_port = free_port(), free_port()
        servers.start_cluster_proxy(grpc_port, remoting_port)
        yield Servers55(servers, grpc_port, remoting_port)
    finally:
        servers.stop(kill=True)


def test_the_broker_is_5_5_0_and_routed(servers55: Servers55) -> None:
    servers = servers55.servers
    route = topic_route(servers.namesrv_addr)
    assert route is not None
    assert [b.broker_addrs for b in route.broker_datas] == [{0: servers.broker_addr}]
    with RawSession(servers.broker_addr) as s:
        resp = s.call(GET_BROKER_RUNTIME_INFO)
    table = json.loads(repair_fastjson(resp["body"].decode()))["table"]
    assert (resp["code"], table["brokerVersionDesc"]) == (0, "V5_5_0")


def test_the_cluster_proxy_routes_remoting_clients_to_itself(servers55: Servers55) -> None:
    proxy = f"127.0.0.1:{servers55.proxy_remoting_port}"
    with RawSession(proxy) as s:
        resp = s.call(GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
    assert resp["code"] == 0, resp
    route = json.loads(repair_fastjson(resp["body"].decode()))
    assert [b["brokerAddrs"] for b in route["brokerDatas"]] == [{"0": proxy}]


def test_the_cluster_proxy_serves_the_python_grpc_producer(servers55: Servers55, tmp_path: Path) -> None:
    servers = servers55.servers
    out = run_mqadmin(
        servers.namesrv_addr,
        "updateTopic",
        "-c",
        "DefaultCluster",
        "-t",
        "Health55",
        home=tmp_path,
        version=VERSION,
    )
    assert "success" in out, out
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "compat_tests.grpc_python_producer",
            f"127.0.0.1:{servers55.grpc_port}",
            "Health55",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "HOME": str(tmp_path)},
        check=False,
    )
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [["STARTED"], ["SENT", "0"], ["SENT", "1"], ["CLOSED"]], (
        result.stdout + result.stderr[-2000:]
    )


def test_priority_over_grpc_through_the_cluster_proxy(servers55: Servers55, tmp_path: Path) -> None:
    """The Python gRPC client's priority reaches the broker through the Proxy; one receive of the
    backlog returns it highest queue first, FIFO within a queue (``docs/priority.md``)."""
    servers = servers55.servers
    out = run_mqadmin(
        servers.namesrv_addr,
        *("updateTopic", "-c", "DefaultCluster", "-t", "Prio55Grpc", "-r", "4", "-w", "4"),
        *("-a", "+message.type=PRIORITY"),
        home=tmp_path,
        version=VERSION,
    )
    assert "success" in out, out
    priorities = ["0", "3", "1", "7", "2", "0", "3", "1", "2"]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "compat_tests.grpc_python_priority",
            f"127.0.0.1:{servers55.grpc_port}",
            "Prio55Grpc",
            "Prio55GrpcGroup",
            *priorities,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
        env={**os.environ, "HOME": str(tmp_path)},
        check=False,
    )
    received = [line.split()[1:] for line in result.stdout.splitlines() if line.startswith("RECEIVED")]
    assert received == [
        ["m1", "3"],
        ["m3", "7"],
        ["m6", "3"],
        ["m4", "2"],
        ["m8", "2"],
        ["m2", "1"],
        ["m7", "1"],
        ["m0", "0"],
        ["m5", "0"],
    ], result.stdout + result.stderr[-2000:]
