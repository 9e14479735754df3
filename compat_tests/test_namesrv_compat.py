"""Our NameServer with the real Apache RocketMQ 5.3.3 broker, real Java clients and mqadmin."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compat_tests.reference import (
    CLIENT_LINES,
    REFERENCE_LIB,
    run_capture,
    run_mqadmin,
    start_gateway_namesrv,
    start_reference_broker,
    stop,
)

pytestmark = pytest.mark.compat


def test_reference_jars_are_installed() -> None:
    assert (REFERENCE_LIB).is_dir(), "run scripts/setup-java.sh"
    assert any(p.name.startswith("rocketmq-broker-5.3.3") for p in REFERENCE_LIB.iterdir())


def test_real_broker_clients_and_mqadmin_through_our_namesrv(tmp_path: Path) -> None:
    namesrv, naddr = start_gateway_namesrv(tmp_path)
    broker = None
    try:
        broker, baddr = start_reference_broker(tmp_path, naddr)

        cluster = run_mqadmin(naddr, "clusterList", home=tmp_path)
        assert re.search(rf"DefaultCluster\s+broker-ref\s+0\s+{re.escape(baddr)}\s+V5_3_3", cluster), cluster

        route = run_mqadmin(naddr, "topicRoute", "-t", "TBW102", home=tmp_path)
        assert baddr in route
        assert '"perm":7' in route

        for line in CLIENT_LINES:
            out = run_capture(line, naddr, f"CompatTopic_{line.replace('.', '_')}", tmp_path)
            assert "send: SendResult [sendStatus=SEND_OK" in out, out
            assert "batch: SendResult [sendStatus=SEND_OK" in out, out

        topics = run_mqadmin(naddr, "topicList", home=tmp_path)
        assert "CompatTopic_4_9_8" in topics.splitlines()
        assert "CompatTopic_5_3_3" in topics.splitlines()

        assert "success" in run_mqadmin(
            naddr, "updateKvConfig", "-s", "ns1", "-k", "k1", "-v", "v1", home=tmp_path
        )
        assert "success" in run_mqadmin(naddr, "deleteKvConfig", "-s", "ns1", "-k", "k1", home=tmp_path)

        wiped = run_mqadmin(naddr, "wipeWritePerm", "-b", "broker-ref", home=tmp_path)
        assert re.search(r"wipe write perm of broker\[broker-ref\] in name server\[.*\] OK, (\d+)", wiped), (
            wiped
        )
        route = run_mqadmin(naddr, "topicRoute", "-t", "TBW102", home=tmp_path)
        assert '"perm":5' in route
        added = run_mqadmin(naddr, "addWritePerm", "-b", "broker-ref", home=tmp_path)
        assert "OK" in added, added

        stop(broker)
        broker = None
        route = run_mqadmin(naddr, "topicRoute", "-t", "TBW102", home=tmp_path)
        assert "No topic route info" in route or "TOPIC_NOT_EXIST" in route, route
    finally:
        if broker is not None:
            stop(broker)
        stop(namesrv)
