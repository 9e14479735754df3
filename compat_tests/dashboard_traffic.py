"""The traffic ``compat_tests/test_dashboard_compat.py`` sends to each broker before the dashboards
visit it, the same on both: what its pages are then asked about.

* topics of each ``message.type`` (NORMAL, FIFO, DELAY, TRANSACTION) and three plain ones, created
  in one ``mqadmin`` JVM (``updateTopic -a``);
* ``COUNT`` messages with keys and tags on the traffic topic from a tracing producer, consumed by
  a tracing push consumer (``enableMsgTrace``: the brokers run with ``traceTopicEnable``, so the
  trace records land in ``RMQ_SYS_TRACE_TOPIC``, indexed by message id and key);
* live clients that stay connected while the dashboards are visited (the connection dialogs list
  live clients only): a push consumer and a producer of the live topic, and a push consumer of the
  dead topic whose listener answers RECONSUME_LATER with ``maxReconsumeTimes=0``, so the one
  message sent there goes straight to ``%DLQ%<group>`` (``SendMessageProcessor``'s
  ``consumerSendMsgBack``: reconsume times 0 >= max 0).

:func:`prepare` does all of it for one broker (the module prepares both side by side), and
:func:`timed` writes how long each phase took to ``timings.txt`` beside the screenshots.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from compat_tests.dashboard import ARTIFACTS
from compat_tests.helpers import STEP_S
from compat_tests.mqadmin_batch import mqadmin_batch
from compat_tests.scenario import CLIENT_LINES, Event, ScenarioProcess, of, run_scenario, start_scenario
from compat_tests.targets import Target, start_target

LINE = CLIENT_LINES[-1]
TRAFFIC_TOPIC, GROUP, TRAFFIC_PRODUCER = "DashTraffic", "dashGroup", "dashTrafficProducer"
LIVE_TOPIC, LIVE_GROUP, PRODUCER_GROUP = "DashLive", "dashLive", "dashProducer"
DEAD_TOPIC, DEAD_GROUP = "DashDead", "dashDead"
LIVE_S = 900.0  # the longest the live clients stay: the module's visits take a fraction of it
COUNT = 12
#: The topic of each ``message.type`` the dashboard's topic page filters by.
TYPED_TOPICS = {"NORMAL": "DashNormal", "DELAY": "DashDelay", "FIFO": "DashFifo", "TRANSACTION": "DashTx"}
BROKER_CONF = {"traceTopicEnable": "true"}


def create_topics(naddr: str, home: Path) -> None:
    """Every topic of the module, in one mqadmin JVM."""
    commands: dict[str, list[str]] = {}
    for kind, topic in TYPED_TOPICS.items():
        commands[topic] = ["updateTopic", "-c", "DefaultCluster", "-t", topic, "-a", f"+message.type={kind}"]
    for topic in (TRAFFIC_TOPIC, LIVE_TOPIC, DEAD_TOPIC):
        commands[topic] = ["updateTopic", "-c", "DefaultCluster", "-t", topic]
    for topic, out in mqadmin_batch(naddr, commands, home).items():
        assert "success" in out, (topic, out)


def send_traffic(target: Target, home: Path) -> dict[str, Any]:
    """The topics, the traced messages and their consumption on ``target``: the ``sent`` events."""
    naddr = target.namesrv_addr
    create_topics(naddr, home)
    events = run_scenario(
        LINE,
        "produce",
        naddr,
        home,
        STEP_S,
        topic=TRAFFIC_TOPIC,
        group=TRAFFIC_PRODUCER,
        count=COUNT,
        tags="TagA,TagB",
        keys_prefix="dk-",
        trace=True,
        send_timeout_ms=15000,  # the first send also waits for the route on a loaded machine
    )
    assert len(of(events, "sent")) == COUNT, of(events, "send_error")[:3]
    received = run_scenario(
        LINE, "consume", naddr, home, STEP_S, topic=TRAFFIC_TOPIC, group=GROUP, expect=COUNT, trace=True
    )
    assert len(of(received, "received")) >= COUNT
    return {"traffic": of(events, "sent")}


def start_live_clients(naddr: str, home: Path) -> tuple[list[ScenarioProcess], Event, Event]:
    """The live clients, once each consumer has had its one message: the processes, the live
    producer's ``sent`` event and the dead message's."""
    started: list[ScenarioProcess] = []
    stay = {"duration": LIVE_S}
    try:
        consumer = start_scenario(
            LINE, "consume", naddr, home, LIVE_S + STEP_S, topic=LIVE_TOPIC, group=LIVE_GROUP, **stay
        )
        started.append(consumer)
        dead_end = start_scenario(
            LINE,
            "consume",
            naddr,
            home,
            LIVE_S + STEP_S,
            topic=DEAD_TOPIC,
            group=DEAD_GROUP,
            reconsume_later=1,
            max_reconsume=0,
            **stay,
        )
        started.append(dead_end)
        producer = start_scenario(
            LINE,
            "produce",
            naddr,
            home,
            LIVE_S + STEP_S,
            topic=LIVE_TOPIC,
            group=PRODUCER_GROUP,
            count=1,
            keys_prefix="live-",
            stay=LIVE_S,
            send_timeout_ms=15000,
        )
        started.append(producer)
        sent = producer.wait_for(lambda e: e.get("event") in ("sent", "send_error"), STEP_S)
        assert sent["event"] == "sent", sent
        dead = run_scenario(
            LINE, "produce", naddr, home, STEP_S, topic=DEAD_TOPIC, count=1, keys_prefix="dead-", tags="TagD"
        )
        assert len(of(dead, "sent")) == 1, dead
        consumer.wait_for(lambda e: e.get("event") == "received", STEP_S)
        dead_end.wait_for(lambda e: e.get("event") == "received", STEP_S)
    except BaseException:
        for process in started:
            process.stop()
        raise
    return started, sent, of(dead, "sent")[0]


@dataclass
class Site:
    """One broker with its traffic sent and its live clients running."""

    target: Target
    home: Path  # the clients' and mqadmin's HOME
    sent: dict[str, Any] = field(default_factory=dict)  # the sent events: traffic, live, dead
    live: list[ScenarioProcess] = field(default_factory=list)

    def stop(self) -> None:
        for process in self.live:
            process.stop()
        self.target.discard()


@contextmanager
def timed(phase: str) -> Iterator[None]:
    """Append how long ``phase`` took to ``timings.txt`` beside the screenshots (where the
    module's set-up time goes)."""
    began = time.monotonic()
    try:
        yield
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with (ARTIFACTS / "timings.txt").open("a") as out:
            out.write(f"{phase}\t{time.monotonic() - began:.1f} s\n")


def prepare(name: str, tmp_path_factory: pytest.TempPathFactory, sites: dict[str, Site]) -> None:
    """Start broker ``name`` (recorded in ``sites`` at once, so the caller stops it), send its
    traffic and start its live clients."""
    with timed(f"{name}: start"):
        target = start_target(name, tmp_path_factory.mktemp(name), BROKER_CONF)
    site = sites[name] = Site(target, tmp_path_factory.mktemp(f"clients-{name}"))
    with timed(f"{name}: traffic"):
        site.sent = send_traffic(target, site.home)
    with timed(f"{name}: live clients"):
        site.live, site.sent["live"], site.sent["dead"] = start_live_clients(target.namesrv_addr, site.home)
