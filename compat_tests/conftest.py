"""Fixtures of the compatibility suites: one target per module and target name (ours, then the
real Apache RocketMQ 5.3.3 broker), and a client home per target."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests import gobuild
from compat_tests.helpers import TARGETS
from compat_tests.reference import REFERENCE_LIB, reference_failures
from compat_tests.targets import GATEWAY_TARGET_ENV, Target, start_target


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--gateway-target",
        choices=("subprocess", "container", "inprocess"),
        default=None,
        help="how our gateway runs in the compat suites (default subprocess: rmq-gateway standalone)",
    )


def pytest_configure(config: pytest.Config) -> None:
    kind = config.getoption("--gateway-target")
    if kind is not None:
        os.environ[GATEWAY_TARGET_ENV] = kind


@pytest.fixture(scope="module", params=TARGETS)
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """A running target serving the whole module; a missing Java or reference jar fails the test
    (the clients are Java too, so even the gateway target needs them)."""
    if shutil.which("java") is None or not REFERENCE_LIB.is_dir():
        pytest.fail("java or the reference jars are missing: run scripts/setup-java.sh")
    name: str = request.param
    started = start_target(name, tmp_path_factory.mktemp(name))
    try:
        yield started
    finally:
        started.discard()


@pytest.fixture(scope="module")
def home(target: Target, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Client home per target: broadcasting consumers keep their offsets in ~/.rocketmq_offsets."""
    return tmp_path_factory.mktemp(f"clients-{target.name}")


@pytest.fixture(scope="session")
def grpc_go() -> Path:
    """The Go 5.x gRPC client program (``compat_tests/grpc_go``), built once and cached."""
    try:
        return gobuild.go_binary(Path(__file__).resolve().parent / "grpc_go")
    except gobuild.GoBuildError as err:
        pytest.fail(str(err))


@pytest.fixture(autouse=True)
def _reference_servers_healthy() -> Iterator[None]:
    """Fail the test during which a real server ran out of memory or exited unasked: its answers
    are no reference any more (:func:`compat_tests.reference.reference_failures`)."""
    reference_failures()  # what happened before this test belongs to the one before
    yield
    found = reference_failures()
    if found:
        pytest.fail("reference server failed during the test:\n" + "\n".join(found))
