"""Route removal and failover against the unmodified Java 5.3.3 remoting producer
(``DefaultMQProducer``, sync sends), on a two-broker gateway cluster: one ``rmq-gateway namesrv``
with its control endpoint on (``--control-port``) and two ``rmq-gateway broker`` processes
(:class:`compat_tests.clusters.GatewayCluster`), a topic on both brokers.

While one producer sends at a steady pace, ``DELETE /routes/brokers/broker-b`` takes broker-b out
of the NameServer's routes (it keeps running and stays registered). The client learns of it on
its next route poll (``MQClientInstance.updateTopicRouteInfoFromNameServer``, every
``pollNameServerInterval``: 30 s by default, 1 s here), after which every send goes to broker-a;
``POST /routes/brokers/broker-b`` puts it back and sends reach both brokers again. No send fails
at any point: broker-b never stopped taking writes, so sends chosen from the old routes still
land. Times are measured from the control call, as the test sees the client's ``sent`` events
arrive.

Only our NameServer has the route fault; the real one has nothing to compare with here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compat_tests.clusters import BROKERS, READY_S, GatewayCluster, create_topic
from compat_tests.scenario import Event, ScenarioProcess, of, start_scenario
from gateway.control.client import ControlClient
from gateway.testing.ports import free_port
from gateway.testing.probe import wait_ready

pytestmark = [pytest.mark.compat, pytest.mark.slow]

LINE = "5.3.3"
POLL_NAMESRV_MS = 1000  # the client's route refresh (pollNameServerInterval), 30 000 by default
PACE_MS = 20  # between two sends: ~50 sends a second at most
BEFORE = 100  # sends before the removal, on both brokers
STREAK = 150  # consecutive sends that must all go to the one broker left
SWITCH_S = 30.0  # removal (or restore) to the client acting on it: 1 s polls on a loaded machine
RUN_S = 300.0  # the producer's own limit; the test stops it well before


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayCluster]:
    workdir = tmp_path_factory.mktemp("failover") / "cluster"
    workdir.mkdir(parents=True)
    started = GatewayCluster(workdir, control_port=free_port(("127.0.0.1",)))
    try:
        started.start_namesrv()
        for name in BROKERS:
            started.start_broker(name)
        wait_ready(started.namesrv_addr, READY_S, min_brokers=2)
        yield started
    finally:
        started.stop()


class Sends:
    """The ``sent`` and ``send_error`` events of a running producer, each stamped with the
    monotonic time the test read it (events are flushed one a line as they happen)."""

    def __init__(self, producer: ScenarioProcess) -> None:
        self.producer = producer
        self.seen: list[tuple[float, Event]] = []

    def read(self, timeout: float) -> None:
        for event in self.producer.iter_events(timeout):
            if event.get("event") in ("sent", "send_error"):
                self.seen.append((time.monotonic(), event))

    def since(self, start: float) -> list[tuple[float, Event]]:
        return [(t, e) for t, e in self.seen if t >= start]

    def wait_until(self, done: Callable[[], bool], deadline_s: float, what: str) -> None:
        """Read events until ``done()`` holds; fails naming ``what`` after ``deadline_s``."""
        deadline = time.monotonic() + deadline_s
        while not done():
            left = deadline - time.monotonic()
            assert left > 0, f"{what}: not within {deadline_s:g} s; last sends {self.brokers_tail(20)}"
            assert self.producer.running, f"producer ended: {self.producer.stderr}"
            self.read(min(left, 0.5))

    def brokers_tail(self, n: int) -> list[str]:
        return [str(e.get("brokerName", "ERROR")) for _, e in self.seen[-n:]]


def streak_on(sends: list[tuple[float, Event]], broker: str) -> tuple[int, float | None]:
    """How many of ``sends`` at the end all went to ``broker``, and when the last send to another
    broker was read (None: there was none)."""
    count = 0
    for t, event in reversed(sends):
        if event.get("brokerName") != broker:
            return count, t
        count += 1
    return count, None


def test_a_broker_taken_out_of_the_routes_gets_no_sends_until_put_back(
    cluster: GatewayCluster, tmp_path: Path
) -> None:
    home = tmp_path / "client"
    topic = "RouteFailover"
    create_topic(cluster, topic, home)
    assert cluster.control_port is not None
    control = ControlClient(f"127.0.0.1:{cluster.control_port}")
    producer = start_scenario(
        LINE,
        "produce",
        cluster.namesrv_addr,
        home,
        RUN_S,
        topic=topic,
        count=int(RUN_S * 1000 / PACE_MS),
        pace_ms=PACE_MS,
        poll_namesrv_ms=POLL_NAMESRV_MS,
    )
    try:
        sends = Sends(producer)
        sends.wait_until(lambda: len(sends.seen) >= BEFORE, READY_S, f"{BEFORE} sends")
        assert {e.get("brokerName") for _, e in sends.seen} == set(BROKERS), sends.brokers_tail(BEFORE)

        removed_at = time.monotonic()
        assert control.withhold_route("broker-b") == ["broker-b"]
        sends.wait_until(
            lambda: streak_on(sends.since(removed_at), "broker-a")[0] >= STREAK,
            SWITCH_S + STREAK * PACE_MS / 1000 * 5,
            f"{STREAK} sends in a row on broker-a after the removal",
        )
        _, last_on_b = streak_on(sends.since(removed_at), "broker-a")
        failover_s = 0.0 if last_on_b is None else last_on_b - removed_at
        after_removal = len(sends.since(removed_at))

        restored_at = time.monotonic()
        assert control.withhold_route("broker-b", on=False) == []
        sends.wait_until(
            lambda: any(e.get("brokerName") == "broker-b" for _, e in sends.since(restored_at)),
            SWITCH_S,
            "a send on broker-b after it was put back",
        )
        first_on_b = next(t for t, e in sends.since(restored_at) if e.get("brokerName") == "broker-b")
        back_s = first_on_b - restored_at
        sends.wait_until(lambda: len(sends.since(restored_at + back_s)) >= BEFORE, SWITCH_S, "sends after")
    finally:
        producer.stop()
    print(
        f"failover: last send on broker-b {failover_s:.2f} s after the removal, {after_removal} sends "
        f"after it; first send on broker-b {back_s:.2f} s after the restore"
    )
    assert failover_s < SWITCH_S
    back = [e.get("brokerName") for _, e in sends.since(restored_at + back_s)][:BEFORE]
    assert set(back) == set(BROKERS), back
    assert not of([e for _, e in sends.seen], "send_error"), "a send failed"
