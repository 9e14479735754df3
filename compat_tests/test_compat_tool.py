"""``rmq-compat`` (compat_tests/tool, docs/compat-tool.md) run as a user runs it, against real
servers: the whole catalogue on our gateway with every feature on and on the real Apache
RocketMQ 5.3.3 Proxy in local mode with the same features on (every row passes on both; the quick
set runs against ours as 5.5.0 and the real 5.5.0 in compat_tests/test_grpc55_compat.py), our
gateway lacking a feature and without a gRPC endpoint (those rows say why, the rest pass), and the
real 5.3.3 broker beside ours (``--against``: no differences). The tool's logic without
servers is tested in tests/test_compat_tool.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat_tests.compat_matrix import ALL_FEATURES
from compat_tests.grpc_targets import start_real
from compat_tests.reference import REFERENCE_LIB
from compat_tests.targets import REPO, GatewayTarget, ReferenceTarget

pytestmark = [pytest.mark.compat, pytest.mark.slow]

TOOL_TIMEOUT_S = 900.0  # a whole --quick run on a loaded 2-core machine


def grpc_address(target: GatewayTarget) -> str:
    found = re.search(r"ready: .*grpc=(\S+)", target.log.read_text(errors="replace"))
    assert found, "no gRPC address in the gateway's ready line"
    return found.group(1)


def rmq_compat(home: Path, *args: str) -> tuple[int, str, dict[str, Any]]:
    """Run the tool (the ``rmq-compat`` entry point) with ``--json``; exit status, stdout, report."""
    out = home / "report.json"
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "compat_tests.tool.cli", *args, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        cwd=REPO,
        env={**os.environ, "HOME": str(home)},
        check=False,
    )
    print(f"rmq-compat {' '.join(args)}: {time.monotonic() - started:.0f} s\n{result.stdout}")
    assert out.is_file(), result.stderr[-3000:]
    return result.returncode, result.stdout, json.loads(out.read_text())


def rows(report: dict[str, Any], index: int = 0) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in report["targets"][index]["results"]}


@pytest.fixture
def java() -> None:
    if shutil.which("java") is None or not REFERENCE_LIB.is_dir():
        pytest.fail("java or the reference jars are missing: run scripts/setup-java.sh")


@pytest.fixture
def ours(java: None, tmp_path: Path) -> Iterator[GatewayTarget]:
    target = GatewayTarget(tmp_path / "gateway", ALL_FEATURES)
    try:
        yield target
    finally:
        target.discard()


def test_the_whole_catalogue_passes_on_ours_and_on_the_real_proxy_alike(
    ours: GatewayTarget, tmp_path: Path
) -> None:
    """Every scenario, on ours and (``--against``) on the real 5.3.3 Proxy in local mode (its broker
    inside it) with the same features on: every row passes on both, no differences. The catalogue
    is thereby proven on the reference's gRPC endpoint as well as its broker; the README's matrix is
    the committed report of this same run (compat_tests/compat_matrix.py)."""
    (tmp_path / "real").mkdir()
    real = start_real(tmp_path / "real", ALL_FEATURES)
    try:
        address = ("--namesrv", ours.namesrv_addr, "--grpc", grpc_address(ours))
        against = ("--against", f"{real.namesrv_addr},{real.grpc_addr}")
        code, stdout, report = rmq_compat(tmp_path, *address, *against, "--jobs", "4")
    finally:
        real.stop()
    for index in (0, 1):
        failing = {
            k: (r["status"], r["reason"]) for k, r in rows(report, index).items() if r["status"] != "passed"
        }
        assert failing == {}, index
    assert len(rows(report, 0)) == len(rows(report, 1)) >= 44
    assert {r["client"] for r in rows(report, 1).values()} >= {"java-4.9.8", "java-5.3.3", "java-grpc-5"}
    assert report["differences"] == []
    assert stdout.startswith("no differences between")
    assert code == 0


def test_a_target_lacking_sql92_and_grpc_says_so_per_row(java: None, tmp_path: Path) -> None:
    target = GatewayTarget(tmp_path / "gateway", {"enablePropertyFilter": "false"})
    try:
        code, stdout, report = rmq_compat(
            tmp_path, "--namesrv", target.namesrv_addr, "--quick", "--only", "filter,grpc"
        )
    finally:
        target.discard()
    found = rows(report)
    assert found["SQL92 filter[java-5.3.3]"]["status"] == "unsupported"
    assert (
        found["SQL92 filter[java-5.3.3]"]["reason"]
        == "The broker does not support consumer to filter message by SQL92"
    )
    assert found["tag filter[java-5.3.3]"]["status"] == "passed"
    grpc = [r for r in found.values() if "grpc" in r["tags"]]
    assert grpc
    assert {(r["status"], r["reason"]) for r in grpc} == {("not run", "no endpoint (give --grpc HOST:PORT)")}
    assert code == 1
    assert "SQL92 filter" in stdout


AUTH_PROVIDERS = "org.apache.rocketmq.auth.{0}.provider.Local{1}MetadataProvider"
AUTHENTICATION = {  # docs/security.md, "Turning it on"
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "authenticationMetadataProvider": AUTH_PROVIDERS.format("authentication", "Authentication"),
    "authorizationMetadataProvider": AUTH_PROVIDERS.format("authorization", "Authorization"),
    "initAuthenticationUser": '{"username":"rocketmq","password":"12345678"}',
}


def test_a_target_that_authenticates_says_so_without_credentials_and_passes_with_them(
    java: None, tmp_path: Path
) -> None:
    target = GatewayTarget(tmp_path / "gateway", AUTHENTICATION)
    try:
        address = ("--namesrv", target.namesrv_addr, "--grpc", grpc_address(target), "--quick")
        code, _, report = rmq_compat(tmp_path, *address, "--only", "send,grpc", "--jobs", "4")
        # Signed: the rows whose programs sign their requests (the remoting scenario programs,
        # the gRPC transaction and recall ones do not, and say so).
        signed_code, _, signed = rmq_compat(
            tmp_path, *address, "--only", "grpc,admin", "--exclude", "transaction,delay", "--jobs", "4",
            "--access-key", "rocketmq", "--secret-key", "12345678",
        )  # fmt: skip
    finally:
        target.discard()
    found = rows(report)
    assert {r["status"] for r in found.values()} == {"not run"}
    for row in found.values():
        assert "code 16 username cannot be null." in row["reason"], row
        assert "give --access-key and --secret-key" in row["reason"], row
    assert code == 1
    assert set(rows(signed)) == {
        "mqadmin[mqadmin-5.3.3]", "gRPC send/receive[java-grpc-5]", "gRPC push[java-grpc-5]",
        "gRPC FIFO[java-grpc-5]",
    }  # fmt: skip
    assert {k: r["status"] for k, r in rows(signed).items() if r["status"] != "passed"} == {}
    assert signed_code == 0


def test_the_real_broker_passes_and_against_ours_shows_no_differences(
    ours: GatewayTarget, tmp_path: Path
) -> None:
    reference = ReferenceTarget(tmp_path / "reference")
    try:
        args = ("--quick", "--only", "tag,pull,reply", "--exclude", "grpc", "--against", ours.namesrv_addr)
        code, stdout, report = rmq_compat(tmp_path, "--namesrv", reference.namesrv_addr, *args)
    finally:
        reference.discard()
    for index in (0, 1):
        assert {r["status"] for r in rows(report, index).values()} == {"passed"}, rows(report, index)
    assert report["differences"] == []
    assert stdout.startswith(f"no differences between {reference.namesrv_addr} and {ours.namesrv_addr}")
    assert code == 0
