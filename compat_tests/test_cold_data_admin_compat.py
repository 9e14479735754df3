"""``mqadmin`` 5.3.3's cold-data and store-tuning subcommands, run against our gateway AND the real
5.3.3 broker, whose outputs must match line for line (the broker address aside):
``updateColdDataFlowCtrGroupConfig`` and ``removeColdDataFlowCtrGroupConfig`` with
``getColdDataFlowCtrInfo`` after each, ``setCommitLogReadAheadMode`` in both modes with the
``dataReadAheadEnable`` that ``getBrokerConfig`` then shows, and ``resetMasterFlushOffset`` on a
master. The subcommands run in one JVM per target (:mod:`compat_tests.mqadmin_batch`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from compat_tests.mqadmin_batch import mqadmin_batch
from compat_tests.targets import start_target
from compat_tests.test_admin_compat import broker_addr

pytestmark = [pytest.mark.compat, pytest.mark.slow]

GROUP = "coldGroup"


def commands(addr: str) -> dict[str, list[str]]:
    """In order: each name is the key of its output."""
    return {
        "info_before": ["getColdDataFlowCtrInfo", "-b", addr],
        "update": ["updateColdDataFlowCtrGroupConfig", "-b", addr, "-g", GROUP, "-v", "2048"],
        "info_updated": ["getColdDataFlowCtrInfo", "-b", addr],
        "remove": ["removeColdDataFlowCtrGroupConfig", "-b", addr, "-g", GROUP],
        "info_removed": ["getColdDataFlowCtrInfo", "-b", addr],
        "random": ["setCommitLogReadAheadMode", "-b", addr, "-m", "1"],
        "config_random": ["getBrokerConfig", "-b", addr],
        "normal": ["setCommitLogReadAheadMode", "-b", addr, "-m", "0"],
        "config_normal": ["getBrokerConfig", "-b", addr],
        "reset": ["resetMasterFlushOffset", "-b", addr, "-o", "100"],
    }


def exercise(name: str, workdir: Path) -> dict[str, str]:
    target = start_target(name, workdir / "servers")
    try:
        home = workdir / "home"
        home.mkdir(parents=True, exist_ok=True)
        addr = broker_addr(target)
        outputs = mqadmin_batch(target.namesrv_addr, commands(addr), home)
        return {k: v.replace(addr, "BROKER") for k, v in outputs.items()}
    finally:
        target.discard()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    with ThreadPoolExecutor(2) as pool:
        futures = {n: pool.submit(exercise, n, tmp_path_factory.mktemp(n)) for n in ("gateway", "reference")}
        return {n: f.result() for n, f in futures.items()}


def read_ahead(config_output: str) -> str:
    for line in config_output.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "dataReadAheadEnable":
            return value.strip()
    raise AssertionError(f"no dataReadAheadEnable in {config_output[:500]}")


@pytest.mark.parametrize(
    "step", ["update", "info_updated", "remove", "info_removed", "random", "normal", "reset"]
)
def test_same_output_as_the_real_broker(outputs: dict[str, dict[str, str]], step: str) -> None:
    ours, real = outputs["gateway"][step], outputs["reference"][step]
    assert "not supported" not in ours
    assert ours == real


def test_what_the_operator_reads(outputs: dict[str, dict[str, str]]) -> None:
    for out in outputs.values():
        assert "updateColdDataFlowCtrGroupConfig success, BROKER" in out["update"]
        assert GROUP in out["info_updated"]
        assert "2048" in out["info_updated"]
        assert GROUP not in out["info_removed"]
        assert "mode: 1" in out["random"]
        assert "mode: 0" in out["normal"]
        assert (read_ahead(out["config_random"]), read_ahead(out["config_normal"])) == ("false", "true")
        assert "reset master flush offset to 100 success" in out["reset"]
