"""The gateway's container image (docker/Dockerfile) through the testcontainers module: built and
cached by scripts/setup-docker.sh, ready over the protocol, non-root, store on a volume, Docker's
HEALTHCHECK passing, and both networking modes reachable by an unmodified Java client.

Needs a Docker engine and the image (``scripts/setup-docker.sh``, which ``scripts/test`` runs
first); without them these tests fail, they do not skip.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compat_tests.scenario import done, of, run_scenario
from gateway.testing.container import RocketMQGatewayContainer
from gateway.testing.probe import probe

pytestmark = [pytest.mark.compat, pytest.mark.slow]
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # the reaper image cannot be pulled here

REPO = Path(__file__).resolve().parent.parent
READY_LIMIT_S = 30.0  # container start to a registered broker; ~0.5 s measured
HEALTHY_LIMIT_S = 30.0  # Docker's HEALTHCHECK (2 s interval) reports healthy; ~2-4 s measured
STEP_S = 60.0


def test_setup_is_cached_when_nothing_changed() -> None:
    """A second run of scripts/setup-docker.sh rebuilds nothing (cache keys in image labels)."""
    subprocess.run(["bash", "scripts/setup-docker.sh"], cwd=REPO, check=True, timeout=900)
    began = time.monotonic()
    again = subprocess.run(
        ["bash", "scripts/setup-docker.sh"], cwd=REPO, check=True, timeout=120, capture_output=True, text=True
    )
    assert again.stdout.count("up to date") == 2, again.stdout
    print(f"cached setup-docker.sh: {time.monotonic() - began:.1f} s")


def inspect(container: RocketMQGatewayContainer, template: str) -> str:
    result = subprocess.run(
        ["docker", "inspect", "-f", template, container.get_container_id()],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return result.stdout.strip()


def test_ready_over_the_protocol_non_root_volume_and_healthcheck() -> None:
    container = RocketMQGatewayContainer()
    began = time.monotonic()
    try:
        container.start()
        assert container.startup_seconds is not None
        assert container.startup_seconds < READY_LIMIT_S
        namesrv = container.get_namesrv_address()
        assert probe(namesrv, topic="TBW102").masters == {"broker-a": container.get_broker_address()}

        assert container.exec(["id", "-u"]).output.decode().strip() == "10001"
        assert "/data" in inspect(container, "{{range .Mounts}}{{.Destination}} {{end}}").split()
        assert container.exec(["test", "-d", "/data/store/commitlog"]).exit_code == 0

        deadline = time.monotonic() + HEALTHY_LIMIT_S
        while (health := inspect(container, "{{.State.Health.Status}}")) != "healthy":
            assert health == "starting", health
            assert time.monotonic() < deadline, f"not healthy within {HEALTHY_LIMIT_S:g} s"
            time.sleep(0.1)
        print(
            f"container: protocol-ready {container.startup_seconds:.2f} s, "
            f"Docker-healthy {time.monotonic() - began:.2f} s after start"
        )
    finally:
        container.stop()


def test_published_ports_with_the_advertised_address(tmp_path: Path) -> None:
    """Bridge network, ports published on 127.0.0.1 one-to-one and ``BROKER_IP1`` set: the broker
    registers that address and a real client sends and consumes through it."""
    container = RocketMQGatewayContainer(network_mode="bridge", broker_ip1="127.0.0.1")
    try:
        container.start()
        assert inspect(container, "{{.HostConfig.NetworkMode}}") in ("default", "bridge")
        namesrv = container.get_namesrv_address()
        assert probe(namesrv).masters == {"broker-a": f"127.0.0.1:{container.broker_port}"}
        line = "5.3.3"
        produced = run_scenario(line, "produce", namesrv, tmp_path, STEP_S, topic="Published", count=20)
        sent = of(produced, "sent")
        assert len(sent) == 20
        events = run_scenario(
            line, "consume", namesrv, tmp_path, STEP_S, group="published", topic="Published", expect=20
        )
        assert {r["msgId"] for r in of(events, "received")} == {s["msgId"] for s in sent}
        assert done(events)["distinct"] == 20
    finally:
        container.stop()


def test_container_bench_smoke() -> None:
    """``python -m bench.container`` at 2 starts (no clone), so that it cannot rot."""
    args = [sys.executable, "-m", "bench.container", "--starts", "2"]
    ran = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    row = re.search(
        r"\| container `docker run` to protocol-ready \(s\) \| ([\d.]+) \| ([\d.]+) \|", ran.stdout
    )
    assert row, ran.stdout
    assert 0 < float(row.group(1)) <= float(row.group(2))
    assert "load average" in ran.stdout
