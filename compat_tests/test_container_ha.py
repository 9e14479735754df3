"""A classic master/slave pair of the gateway's image, from ``docker/compose-ha.yaml`` and from the
testcontainers helper (:class:`gateway.testing.container_pair.RocketMQGatewayPair`): containers
only, no JVM. In both, the NameServer routes the broker name to the master (id 0) and the slave
(id 1), messages sent to the master are served by the slave (``slaveReadEnable``), the master's
GET_BROKER_HA_STATUS shows the slave caught up, and the slave still serves them once the master
is killed.

Needs a Docker engine, the image and docker compose (``scripts/setup-docker.sh``); without them
these tests fail, they do not skip.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from compat_tests.ha_pairs import (
    create_topic,
    ha_status,
    send_bodies,
    served_bodies,
    wait_replicated,
    wait_served,
)
from compat_tests.reference import topic_route
from compat_tests.test_cluster import compose_command
from gateway.testing.container import RocketMQGatewayContainer
from gateway.testing.container_pair import RocketMQGatewayPair
from gateway.testing.ports import free_port
from gateway.testing.probe import wait_ready

pytestmark = [pytest.mark.compat, pytest.mark.slow]
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # the reaper image cannot be pulled here

REPO = Path(__file__).resolve().parent.parent
WAIT_S = 60.0  # container start, route and replication on a loaded 2-core machine (~1-3 s measured)
HEALTHY_LIMIT_S = 30.0  # Docker's HEALTHCHECK runs every 2 s
BODIES = [f"ha-{i}".encode() for i in range(20)]


def wait_route(namesrv: str, broker_name: str, topic: str, addrs: dict[int, str]) -> None:
    """Poll until ``topic``'s route names exactly ``addrs`` (broker id -> address) for the pair."""
    deadline = time.monotonic() + WAIT_S
    while True:
        route = topic_route(namesrv, topic)
        seen = {b.broker_name: b.broker_addrs for b in route.broker_datas} if route else {}
        if seen.get(broker_name) == addrs:
            return
        assert time.monotonic() < deadline, f"route of {topic}: {seen}, expected {broker_name}: {addrs}"
        time.sleep(0.2)


def check_pair(namesrv: str, broker_name: str, master: str, slave: str, topic: str) -> None:
    """The route over both ids, sends on the master read from the slave, and the master's HA
    status showing its one slave caught up."""
    wait_route(namesrv, broker_name, topic, {0: master, 1: slave})
    assert send_bodies(master, topic, BODIES) == [0] * len(BODIES)  # SUCCESS each
    wait_served(slave, topic, BODIES, WAIT_S)
    end = wait_replicated(master, WAIT_S)
    status = ha_status(master)
    assert status["masterCommitLogMaxOffset"] == end > 0
    connections = status["haConnectionInfo"]
    assert isinstance(connections, list)
    assert len(connections) == 1, status
    assert connections[0]["inSync"] is True, status


def wait_healthy(container_id: str) -> None:
    """Docker's own view of the image's HEALTHCHECK (for a slave: registered under brokerId 1)."""
    deadline = time.monotonic() + HEALTHY_LIMIT_S
    template = "{{.State.Health.Status}}"
    while True:
        inspect = ["docker", "inspect", "-f", template, container_id]
        health = subprocess.run(
            inspect, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
        if health == "healthy":
            return
        assert time.monotonic() < deadline, f"slave container {health} after {HEALTHY_LIMIT_S:g} s"
        time.sleep(0.5)


def test_pair_helper_sync_master_and_slave() -> None:
    """RocketMQGatewayPair with a SYNC_MASTER waiting for its slave (inSyncReplicas=2)."""
    began = time.monotonic()
    with RocketMQGatewayPair(
        role="SYNC_MASTER", in_sync_replicas=2, broker_name="pair-broker", topics=["HaPair:4"]
    ) as pair:
        print(f"pair ready in {time.monotonic() - began:.1f} s")
        master, slave = pair.master.get_broker_address(), pair.slave.get_broker_address()
        check_pair(pair.get_namesrv_address(), "pair-broker", master, slave, "HaPair")
        wait_healthy(pair.slave.get_container_id())
        stored = pair.slave.await_messages("HaPair", len(BODIES))  # the slave's control endpoint
        assert sorted(m["body"] for m in stored) == sorted(b.decode() for b in BODIES)
        pair.kill_master()
        assert served_bodies(slave, "HaPair") >= set(BODIES)


def test_pair_helper_refuses_an_unknown_role() -> None:
    with pytest.raises(ValueError, match="ASYNC_MASTER or SYNC_MASTER"):
        RocketMQGatewayPair(role="SLAVE")  # type: ignore[arg-type]


def test_broker_of_another_namesrv_reports_that_namesrv() -> None:
    """A container given ``namesrv_addr`` runs only a broker and names that NameServer."""
    broker = RocketMQGatewayContainer(namesrv_addr="127.0.0.1:9", properties={"brokerId": "1"})
    assert broker.get_namesrv_address() == "127.0.0.1:9"
    assert broker.broker_id == 1


def test_compose_pair(tmp_path: Path) -> None:
    """docker/compose-ha.yaml on free ports (ASYNC_MASTER, the default role); the master killed
    with ``compose kill master``."""
    ports = {
        "RMQ_NAMESRV_PORT": free_port(),
        "RMQ_MASTER_PORT": free_port(offsets=(-2, 0)),  # and its VIP channel at - 2
        "RMQ_MASTER_HA_PORT": free_port(),
        "RMQ_SLAVE_PORT": free_port(offsets=(-2, 0, 1)),  # VIP channel, own HA port at + 1
        "RMQ_MASTER_GRPC_PORT": free_port(),
        "RMQ_SLAVE_GRPC_PORT": free_port(),
    }
    env = {**os.environ, **{k: str(v) for k, v in ports.items()}}
    compose = [
        *compose_command(),
        "-f",
        str(REPO / "docker" / "compose-ha.yaml"),
        "-p",
        f"rmqha{os.getpid()}",
    ]
    namesrv = f"127.0.0.1:{ports['RMQ_NAMESRV_PORT']}"
    master = f"127.0.0.1:{ports['RMQ_MASTER_PORT']}"
    slave = f"127.0.0.1:{ports['RMQ_SLAVE_PORT']}"
    try:
        began = time.monotonic()
        subprocess.run([*compose, "up", "-d"], env=env, check=True, timeout=180, capture_output=True)
        print(f"compose up: {time.monotonic() - began:.1f} s")
        wait_ready(namesrv, WAIT_S, broker_name="broker-ha", broker_id=1)  # the slave registered
        create_topic(master, "HaCompose")  # on the master first: the slave's sync keeps only its topics
        create_topic(slave, "HaCompose")
        check_pair(namesrv, "broker-ha", master, slave, "HaCompose")
        ps = [*compose, "ps", "-q", "slave"]
        wait_healthy(
            subprocess.run(ps, env=env, check=True, timeout=60, capture_output=True).stdout.decode().strip()
        )
        subprocess.run([*compose, "kill", "master"], env=env, check=True, timeout=60, capture_output=True)
        assert served_bodies(slave, "HaCompose") >= set(BODIES)
    finally:
        subprocess.run(
            [*compose, "down", "-v", "-t", "20"], env=env, check=False, timeout=120, capture_output=True
        )
