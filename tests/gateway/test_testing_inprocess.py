"""The in-process gateway (gateway/testing/inprocess.py) and the pytest plugin's fixtures, used the
way another project would: the plugin is found through its ``pytest11`` entry point."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from gateway.testing.inprocess import InProcessGateway
from gateway.testing.probe import ProbeError, probe

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


def test_plugin_is_registered_by_entry_point() -> None:
    plugins = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugins.get("rmq_gateway") == "gateway.testing.pytest_plugin"


def test_fixture_in_another_test_suite(tmp_path: Path) -> None:
    """A foreign test file uses ``rmq_namesrv`` with nothing but the installed package: it gets a
    ready NameServer, and nothing is written under HOME."""
    home = tmp_path / "home"
    home.mkdir()
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_uses_fixture.py").write_text(
        textwrap.dedent(
            """
            from gateway.testing.probe import ProbeError, probe

            def test_namesrv(rmq_namesrv, rmq_gateway):
                assert rmq_namesrv == rmq_gateway.namesrv_addr
                assert probe(rmq_namesrv, topic="TBW102").topic_brokers == ("broker-a",)
                print("READY", rmq_gateway.ready_seconds)
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
    assert "1 passed" in result.stdout
    assert list(home.iterdir()) == []
    ready = [line for line in result.stdout.splitlines() if line.startswith("READY")]
    assert ready, result.stdout
    print(ready[0], "s: in-process fixture start to ready")
