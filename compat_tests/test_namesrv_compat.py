"""Our NameServer next to the real one: the real Apache RocketMQ 5.3.3 broker registers to both,
``mqadmin`` asks both the same questions and must get the same answers, and real 4.9.8 / 5.3.3
producers send through the real broker using routes from our NameServer."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from codec import fastjson
from compat_tests.reference import (
    CLIENT_LINES,
    REFERENCE_LIB,
    run_capture,
    run_mqadmin,
    start_gateway_namesrv,
    start_reference_broker,
    start_reference_namesrv,
    stop,
    topic_route,
    wait_routed,
)
from compat_tests.scenario import of, run_scenario

pytestmark = pytest.mark.compat

EXPIRY_MS = (
    15000  # our NameServer's brokerChannelExpiredTime here (default 120 s); > the 10 s register period
)


def test_reference_jars_are_installed() -> None:
    assert (REFERENCE_LIB).is_dir(), "run scripts/setup-java.sh"
    assert any(p.name.startswith("rocketmq-broker-5.3.3") for p in REFERENCE_LIB.iterdir())


def route_of(naddr: str, topic: str, home: Path) -> dict[str, Any]:
    out = run_mqadmin(naddr, "topicRoute", "-t", topic, home=home)
    start = out.find("{")
    assert start >= 0, out
    route: dict[str, Any] = fastjson.loads(out[start:])  # mqadmin prints fastjson's bare int keys
    return route


def normalized(route: dict[str, Any]) -> dict[str, Any]:
    """What a client uses from a route, in a canonical order."""
    return {
        "brokers": sorted(
            (b["brokerName"], b["cluster"], sorted((str(k), v) for k, v in b["brokerAddrs"].items()))
            for b in route["brokerDatas"]
        ),
        "queues": sorted(
            (q["brokerName"], q["readQueueNums"], q["writeQueueNums"], q["perm"], q["topicSysFlag"])
            for q in route["queueDatas"]
        ),
    }


def tbw102_perm(naddr: str) -> int:
    """The perm of TBW102's queue data, as the NameServer routes it."""
    route = topic_route(naddr)
    assert route is not None, f"{naddr} has no route for TBW102"
    return route.queue_datas[0].perm


def wait_for(predicate: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"not within {seconds} s: {what}")


def test_real_broker_clients_and_mqadmin_through_our_namesrv(tmp_path: Path) -> None:
    ours, ours_addr = start_gateway_namesrv(
        tmp_path, {"brokerChannelExpiredTime": str(EXPIRY_MS), "scanNotActiveBrokerInterval": "1000"}
    )
    real, real_addr = start_reference_namesrv(tmp_path)
    broker = None
    both = (ours_addr, real_addr)
    try:
        broker, baddr = start_reference_broker(
            tmp_path, f"{ours_addr};{real_addr}", extra={"registerNameServerPeriod": "10000"}
        )
        for naddr in both:
            wait_routed(naddr, baddr, 30, broker)
            cluster = run_mqadmin(naddr, "clusterList", home=tmp_path)
            assert re.search(rf"DefaultCluster\s+broker-ref\s+0\s+{re.escape(baddr)}\s+V5_3_3", cluster), (
                cluster
            )
        assert normalized(route_of(ours_addr, "TBW102", tmp_path)) == normalized(
            route_of(real_addr, "TBW102", tmp_path)
        )

        for line in CLIENT_LINES:
            out = run_capture(line, ours_addr, f"CompatTopic_{line.replace('.', '_')}", tmp_path)
            assert "send: SendResult [sendStatus=SEND_OK" in out, out
            assert "batch: SendResult [sendStatus=SEND_OK" in out, out
        for line in CLIENT_LINES:  # a real producer and push consumer, routed by our NameServer
            topic = f"ViaOurs{line.replace('.', '')}"
            sent = of(run_scenario(line, "produce", ours_addr, tmp_path, 60, topic=topic, count=20), "sent")
            got = run_scenario(
                line, "consume", ours_addr, tmp_path, 60, group=f"g{topic}", topic=topic, expect=20
            )
            assert {e["msgId"] for e in of(got, "received")} == {e["msgId"] for e in sent}
        topic_lists = [set(run_mqadmin(n, "topicList", home=tmp_path).splitlines()) for n in both]
        assert {"CompatTopic_4_9_8", "CompatTopic_5_3_3"} <= topic_lists[0]
        assert topic_lists[0] == topic_lists[1]
        assert normalized(route_of(ours_addr, "CompatTopic_5_3_3", tmp_path)) == normalized(
            route_of(real_addr, "CompatTopic_5_3_3", tmp_path)
        )

        changed: dict[str, list[int]] = {}  # topics whose perm each NameServer changed (wipe, add)
        for naddr in both:
            assert "success" in run_mqadmin(
                naddr, "updateKvConfig", "-s", "ns1", "-k", "k1", "-v", "v1", home=tmp_path
            )
            assert "success" in run_mqadmin(naddr, "deleteKvConfig", "-s", "ns1", "-k", "k1", home=tmp_path)
            # The broker's next registration (every 10 s here) restores the perm, in the real
            # NameServer too; so read the route right after the command, and retry if one intervened
            # (on a loaded machine the mqadmin JVM can take seconds to exit after the wipe).
            seen = []
            for _ in range(8):
                wiped = run_mqadmin(naddr, "wipeWritePerm", "-b", "broker-ref", home=tmp_path)
                found = re.search(
                    r"wipe write perm of broker\[broker-ref\] in name server\[.*\] OK, (\d+)", wiped
                )
                assert found, wiped
                seen.append(tbw102_perm(naddr))
                if seen[-1] == 5:
                    changed[naddr] = [int(found.group(1))]
                    break
            else:
                which = "ours" if naddr == ours_addr else "the real one"
                raise AssertionError(f"wipeWritePerm had no effect on {naddr} ({which}): perms seen {seen}")
            added = run_mqadmin(naddr, "addWritePerm", "-b", "broker-ref", home=tmp_path)
            found = re.search(r"add write perm of broker\[broker-ref\] in name server\[.*\] OK, (\d+)", added)
            assert found, added
            changed[naddr].append(int(found.group(1)))
            assert tbw102_perm(naddr) & 2  # writable again: 6 from the command, or 7 re-registered

        assert changed[ours_addr] == changed[real_addr]  # both count the broker's topics
        assert changed[ours_addr][0] >= 10

        # A broker that stops heartbeating (frozen, connection still open) expires; back, it re-registers.
        broker.send_signal(signal.SIGSTOP)
        try:
            # Polled through a raw route lookup (a JVM per poll would cost more than the wait);
            # the expired broker's routes go with it, and mqadmin then shows it gone.
            wait_for(lambda: topic_route(ours_addr) is None, EXPIRY_MS / 1000 + 15, "a silent broker expired")
            assert "broker-ref" not in run_mqadmin(ours_addr, "clusterList", home=tmp_path)
        finally:
            broker.send_signal(signal.SIGCONT)
        wait_routed(ours_addr, baddr, 30, broker)  # re-registered

        broker.kill()  # its connections close: both NameServers drop it at once, unasked
        broker.wait(10)
        broker = None
        for naddr in both:
            route = run_mqadmin(naddr, "topicRoute", "-t", "TBW102", home=tmp_path)
            assert "No topic route info" in route or "TOPIC_NOT_EXIST" in route, route
    finally:
        if broker is not None:
            broker.send_signal(signal.SIGCONT)
            stop(broker)
        stop(real)
        stop(ours)
