"""A two-broker cluster, the layout of ``docker/compose.yaml`` as three local processes: one
``rmq-gateway namesrv`` and two ``rmq-gateway broker -c ...`` (broker-a, broker-b: distinct
brokerName, ports and stores, SYNC_FLUSH) registering to it, driven by the unmodified Java
clients of both lines.

* a topic created on both brokers (``mqadmin updateTopic -c DefaultCluster``) gets a producer's
  sends on both, and one push consumer receives everything;
* when broker-b is killed (SIGKILL) in the middle of a producer's run, the producer's sends go on
  on broker-a once the client's retries and route refresh have moved it, and after broker-b is
  restarted on its store every acknowledged message (every ``sent`` event) is delivered.

Both scenarios run against our gateway and against the real Apache RocketMQ 5.3.3 NameServer and
two real brokers (:mod:`compat_tests.clusters`), with identical assertions. ``test_compose_cluster`` runs
``docker/compose.yaml`` itself.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.clusters import BROKERS, READY_S, REPO, Cluster, create_topic, running_cluster
from compat_tests.reference import free_port, run_mqadmin
from compat_tests.scenario import CLIENT_LINES, Event, done, of, run_scenario, start_scenario
from gateway.testing.probe import wait_ready

pytestmark = [pytest.mark.compat, pytest.mark.slow]

STEP_S = 120.0
BEFORE_KILL = 300  # acknowledged sends before broker-b is killed
LONG_RUN = 6000  # the producer's whole run: goes on well after the kill
TAIL = 500  # the last sends of the run must all be on the survivor


@pytest.fixture(scope="module", params=["gateway", "reference"])
def shared_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """One cluster per target for both client lines: each line's scenario has its own topic and
    groups, and ends with broker-b restarted on its store, as it found the cluster."""
    workdir = tmp_path_factory.mktemp(f"cluster-{request.param}") / "cluster"
    with running_cluster(request.param, workdir) as started:
        yield started


@pytest.fixture
def cluster(shared_cluster: Cluster) -> Cluster:
    """The shared cluster with both brokers up: a scenario that failed between its kill and its
    restart of broker-b does not leave the next one a broker short."""
    for name in BROKERS:
        if not shared_cluster.is_running(name):
            shared_cluster.start_broker(name)
            wait_ready(shared_cluster.namesrv_addr, READY_S, min_brokers=2, broker_name=name)
    return shared_cluster


def short(line: str) -> str:
    return line.replace(".", "")


def acknowledged(events: list[Event]) -> set[str]:
    return {e["msgId"] for e in of(events, "sent")}


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_sends_reach_both_brokers_and_survive_a_killed_broker(
    cluster: Cluster, tmp_path: Path, line: str
) -> None:
    home = tmp_path / "clients"
    topic = f"Cluster{short(line)}"
    create_topic(cluster, topic, home)

    first = run_scenario(line, "produce", cluster.namesrv_addr, home, STEP_S, topic=topic, count=400)
    assert not of(first, "send_error")
    per_broker = Counter(e["brokerName"] for e in of(first, "sent"))
    assert set(per_broker) == set(BROKERS), per_broker
    namesrv = cluster.namesrv_addr
    group = f"all{short(line)}"
    events = run_scenario(line, "consume", namesrv, home, STEP_S, group=group, topic=topic, expect=400)
    assert acknowledged(first) <= {r["msgId"] for r in of(events, "received")}

    producer = start_scenario(
        line, "produce", cluster.namesrv_addr, home, STEP_S, topic=topic, count=LONG_RUN, keys_prefix="run-"
    )
    try:
        producer.wait_for(lambda e: e.get("event") == "sent" and e["i"] >= BEFORE_KILL, STEP_S)
        cluster.kill("broker-b")
        killed_at = len(of(producer.events(), "sent"))
        run = producer.wait()
    finally:
        producer.stop()
    sent = of(run, "sent")
    after_kill = sent[killed_at:]
    print(
        f"{line}: {len(sent)} acknowledged ({killed_at} before the kill), {len(of(run, 'send_error'))} send "
        f"errors, after the kill per broker {Counter(e['brokerName'] for e in after_kill)}"
    )
    assert done(run)["complete"]
    assert len(after_kill) >= LONG_RUN // 2, "sends did not continue after the kill"
    assert {e["brokerName"] for e in sent[-TAIL:]} == {"broker-a"}, "the tail still went to the dead broker"

    cluster.start_broker("broker-b")  # same store: what it acknowledged must still be there
    wait_ready(cluster.namesrv_addr, READY_S, min_brokers=2, broker_name="broker-b")
    wanted = acknowledged(first) | acknowledged(run)
    events = run_scenario(
        line,
        "consume",
        cluster.namesrv_addr,
        home,
        STEP_S,
        group=f"afterKill{short(line)}",
        topic=topic,
        expect=len(wanted),
    )
    missing = wanted - {r["msgId"] for r in of(events, "received")}
    assert not missing, f"{len(missing)} acknowledged messages lost"


def compose_command() -> list[str]:
    """``docker compose`` (v2) when the plugin is there, else Debian's ``docker-compose`` (v1);
    scripts/setup-docker.sh installs one of them."""
    v2 = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False, timeout=30)
    return ["docker", "compose"] if v2.returncode == 0 else ["docker-compose"]


def test_compose_cluster(tmp_path: Path) -> None:
    """docker/compose.yaml on free ports: both brokers register, a topic created on the cluster
    takes a producer's sends on both, and a push consumer receives them all."""
    ports = {
        "RMQ_NAMESRV_PORT": free_port(("127.0.0.1",)),
        "RMQ_BROKER_A_PORT": free_port(("127.0.0.1",), (-2, 0)),  # and its VIP channel at - 2
        "RMQ_BROKER_B_PORT": free_port(("127.0.0.1",), (-2, 0)),
        "RMQ_BROKER_A_GRPC_PORT": free_port(("127.0.0.1",)),
        "RMQ_BROKER_B_GRPC_PORT": free_port(("127.0.0.1",)),
    }
    env = {**os.environ, **{k: str(v) for k, v in ports.items()}}
    compose = [*compose_command(), "-f", str(REPO / "docker" / "compose.yaml"), "-p", f"rmqtest{os.getpid()}"]
    namesrv = f"127.0.0.1:{ports['RMQ_NAMESRV_PORT']}"
    home = tmp_path / "clients"
    try:
        subprocess.run([*compose, "up", "-d"], env=env, check=True, timeout=180, capture_output=True)
        ready = wait_ready(namesrv, 60, min_brokers=2)
        assert ready.masters == {
            "broker-a": f"127.0.0.1:{ports['RMQ_BROKER_A_PORT']}",
            "broker-b": f"127.0.0.1:{ports['RMQ_BROKER_B_PORT']}",
        }
        out = run_mqadmin(namesrv, "updateTopic", "-c", "DefaultCluster", "-t", "Compose", home=home)
        assert out.count("create topic to") == 2, out
        wait_ready(namesrv, READY_S, min_brokers=2, topic="Compose")
        line = CLIENT_LINES[-1]
        sent = of(run_scenario(line, "produce", namesrv, home, STEP_S, topic="Compose", count=100), "sent")
        assert {e["brokerName"] for e in sent} == set(BROKERS)
        events = run_scenario(
            line, "consume", namesrv, home, STEP_S, group="compose", topic="Compose", expect=100
        )
        assert acknowledged(sent) <= {r["msgId"] for r in of(events, "received")}
    finally:
        subprocess.run(
            [*compose, "down", "-v", "-t", "20"], env=env, check=False, timeout=120, capture_output=True
        )
