"""The protocol probe (gateway/testing/probe.py) against a live in-process gateway and against
servers that are not ready: closed port, no broker yet, a topic without a route, a silent peer."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from gateway.testing.inprocess import InProcessGateway
from gateway.testing.probe import ProbeError, main, probe, wait_ready


@pytest.fixture(scope="module")
def gateway() -> Iterator[InProcessGateway]:
    with InProcessGateway() as started:
        yield started


def test_ready_gateway_reports_its_registered_broker(gateway: InProcessGateway) -> None:
    result = probe(gateway.namesrv_addr)
    assert result.masters == {"broker-a": gateway.broker_addr}
    assert result.clusters == {"DefaultCluster": ["broker-a"]}


def test_topic_route_lookup(gateway: InProcessGateway) -> None:
    # TBW102: the template topic every broker registers (TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC)
    assert probe(gateway.namesrv_addr, topic="TBW102").topic_brokers == ("broker-a",)
    with pytest.raises(ProbeError, match="no route for NoSuchTopic"):
        probe(gateway.namesrv_addr, topic="NoSuchTopic")


def test_wanted_broker_missing_is_not_ready(gateway: InProcessGateway) -> None:
    with pytest.raises(ProbeError, match="waiting for 2"):
        probe(gateway.namesrv_addr, min_brokers=2)
    with pytest.raises(ProbeError, match="broker-b not registered"):
        probe(gateway.namesrv_addr, broker_name="broker-b")


def test_broker_id_waits_for_a_slave_registration(gateway: InProcessGateway) -> None:
    """A lone master has only id 0: a probe for its slave (id 1) is not ready, one for id 0 is."""
    assert probe(gateway.namesrv_addr, broker_name="broker-a", broker_id=0).masters
    with pytest.raises(ProbeError, match=r"broker-a has no broker id 1 \(registered ids: \[0\]\)"):
        probe(gateway.namesrv_addr, broker_name="broker-a", broker_id=1)


def test_command_line_exit_status(gateway: InProcessGateway, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([gateway.namesrv_addr, "--topic", "TBW102"]) == 0
    assert "ready: " in capsys.readouterr().out
    assert main([gateway.namesrv_addr, "--brokers", "2"]) == 1
    assert "not ready" in capsys.readouterr().err
    assert main([gateway.namesrv_addr, "--broker-name", "broker-a", "--broker-id", "1"]) == 1
    assert "no broker id 1" in capsys.readouterr().err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_nothing_listening_is_not_ready() -> None:
    with pytest.raises(ProbeError, match="refused"):
        probe(f"127.0.0.1:{closed_port()}")
    began = time.monotonic()
    with pytest.raises(TimeoutError, match=r"not ready within 0\.3 s"):
        wait_ready(f"127.0.0.1:{closed_port()}", 0.3)
    assert time.monotonic() - began < 3


def test_silent_peer_times_out() -> None:
    """A port that accepts but never answers (a hung server) fails the probe within its timeout."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        accepted: list[socket.socket] = []
        thread = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
        thread.start()
        began = time.monotonic()
        with pytest.raises(ProbeError, match="timed out"):
            probe(f"127.0.0.1:{server.getsockname()[1]}", timeout=0.3)
        assert time.monotonic() - began < 3
        thread.join(5)
        for conn in accepted:
            conn.close()


def test_waits_until_the_server_appears() -> None:
    """wait_ready polls: a gateway started after the first attempt is found."""
    port = closed_port()
    result: list[object] = []
    waiter = threading.Thread(target=lambda: result.append(wait_ready(f"127.0.0.1:{port}", 20)))
    waiter.start()
    with pytest.raises(ProbeError):  # what the waiter sees at first
        probe(f"127.0.0.1:{port}")
    with InProcessGateway(namesrv_port=port):
        waiter.join(20)
        assert len(result) == 1
