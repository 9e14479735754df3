"""pytest fixtures for using the gateway as a test broker (registered as a ``pytest11`` plugin).

Once ``rocketmq-gateway`` is installed, any test suite gets::

    def test_send(rmq_namesrv: str) -> None:           # in-process NameServer + Broker, no Docker
        producer.setNamesrvAddr(rmq_namesrv)

    def test_send_in_docker(rmq_container_namesrv: str) -> None:   # the container image
        ...

    def test_grpc(rmq_grpc_endpoint: str) -> None:     # RocketMQ 5 gRPC clients, same gateway
        ClientConfiguration(rmq_grpc_endpoint, Credentials())   # rocketmq-python-client

Both gateways are session-scoped (one for the whole run: use distinct topics and groups per
test). ``rmq_namesrv`` / ``rmq_container_namesrv`` yield the NameServer address
``"127.0.0.1:<port>"``; ``rmq_grpc_endpoint`` / ``rmq_container_grpc_endpoint`` yield the gRPC
endpoint of the same gateway (plaintext, or TLS with a self-signed certificate, on one port).
The fixtures stop the servers and remove their state at the end.
The in-process gateway listens on free ports with a temporary store and
writes nothing under ``HOME``. The container fixture needs Docker and the image
(``scripts/setup-docker.sh`` builds ``rmq-gateway:local``; ``--rmq-gateway-image`` or
``RMQ_GATEWAY_IMAGE`` choose another) and uses host networking; a missing engine or image is an
error, not a skip. ``rmq_gateway`` / ``rmq_container`` give the objects themselves (addresses of
both servers, start-up time). ``rmq_faults`` gives the in-process gateway's fault rules
(:class:`gateway.transport.faults.FaultTable`: ``add``, ``remove``, ``clear``, ``list``) and clears
them after the test, so one test's faults never reach the next::

    def test_retry_on_busy(rmq_namesrv: str, rmq_faults: FaultTable) -> None:
        rmq_faults.add(request="SEND_MESSAGE_V2", respond=2, times=2)   # SYSTEM_BUSY twice

Isolation per test on the shared gateway: ``rmq_namespace`` gives each test its own namespace
(:class:`gateway.testing.namespace.TestNamespace`, named after the test), to hand to the clients
(``setNamespace(rmq_namespace.name)``), so tests can reuse topic and group names; a test that
wants a broker with nothing in it asks for ``rmq_clean_gateway``, which empties the gateway
(:meth:`InProcessGateway.reset`: topics, groups, offsets, messages, faults) before the test::

    def test_orders(rmq_namesrv: str, rmq_namespace: TestNamespace) -> None:
        consumer.setNamespace(rmq_namespace.name)

Topics and groups declared up front: the ``rmq_topics`` and ``rmq_groups`` markers of every
collected test (on a test, class or module) are created before the session's gateway is ready,
so a test's first route query finds them with their queues and message type; the fixture
``rmq_clean_gateway`` declares its test's again after emptying the gateway::

    @pytest.mark.rmq_topics("orders:8:FIFO", "audit")
    @pytest.mark.rmq_groups("billing:consumeMessageOrderly=true")
    def test_fifo(rmq_grpc_endpoint: str) -> None: ...
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import pytest

from gateway.testing.inprocess import InProcessGateway
from gateway.testing.namespace import TestNamespace, namespace_for

if TYPE_CHECKING:
    from gateway.testing.container import RocketMQGatewayContainer
    from gateway.transport.faults import FaultTable


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocketmq-gateway")
    group.addoption(
        "--rmq-gateway-image",
        default=None,
        help="image of the rmq_container fixture (default $RMQ_GATEWAY_IMAGE or rmq-gateway:local)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "rmq_topics(*specs): topics (NAME[:QUEUES[:TYPE]]) the rmq_gateway fixture creates before ready",
    )
    config.addinivalue_line(
        "markers",
        "rmq_groups(*specs): consumer groups (NAME[:KEY=VALUE,...]) the rmq_gateway fixture creates",
    )


def declared_by_markers(items: Iterable[pytest.Item]) -> tuple[list[str], list[str]]:
    """The topic and group specs of every ``rmq_topics`` / ``rmq_groups`` marker of ``items``
    (tests, their classes and modules), each once, in order."""
    topics: dict[str, None] = {}
    groups: dict[str, None] = {}
    for item in items:
        for marker in item.iter_markers("rmq_topics"):
            topics.update(dict.fromkeys(str(spec) for spec in marker.args))
        for marker in item.iter_markers("rmq_groups"):
            groups.update(dict.fromkeys(str(spec) for spec in marker.args))
    return list(topics), list(groups)


@pytest.fixture(scope="session")
def rmq_gateway(request: pytest.FixtureRequest) -> Iterator[InProcessGateway]:
    """An in-process NameServer + Broker on free ports of 127.0.0.1 with a temporary store
    (removed at the end), with the topics and groups of every collected test's ``rmq_topics``
    and ``rmq_groups`` markers."""
    topics, groups = declared_by_markers(request.session.items)
    gateway = InProcessGateway(topics=topics, groups=groups)
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture(scope="session")
def rmq_namesrv(rmq_gateway: InProcessGateway) -> str:
    """The in-process gateway's NameServer address."""
    return rmq_gateway.namesrv_addr


@pytest.fixture
def rmq_faults(rmq_gateway: InProcessGateway) -> Iterator[FaultTable]:
    """The in-process gateway's fault rules, cleared after the test."""
    try:
        yield rmq_gateway.faults
    finally:
        rmq_gateway.faults.clear()


@pytest.fixture
def rmq_namespace(request: pytest.FixtureRequest) -> TestNamespace:
    """A namespace of this test's own (its name, plus a random suffix)."""
    return namespace_for(request.node.name)


@pytest.fixture
def rmq_clean_gateway(request: pytest.FixtureRequest, rmq_gateway: InProcessGateway) -> InProcessGateway:
    """The in-process gateway, emptied before the test (:meth:`InProcessGateway.reset`), with
    this test's ``rmq_topics`` / ``rmq_groups`` declared again."""
    rmq_gateway.reset()
    topics, groups = declared_by_markers([request.node])
    rmq_gateway.declare(topics, groups)
    return rmq_gateway


@pytest.fixture(scope="session")
def rmq_grpc_endpoint(rmq_gateway: InProcessGateway) -> str:
    """The in-process gateway's gRPC endpoint (RocketMQ 5 clients' ``endpoints``)."""
    return rmq_gateway.grpc_endpoint


@pytest.fixture(scope="session")
def rmq_container(request: pytest.FixtureRequest) -> Iterator[RocketMQGatewayContainer]:
    """The gateway image in a container (host network, free ports), ready when yielded."""
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # the reaper image cannot be pulled offline
    from gateway.testing.container import DEFAULT_IMAGE, RocketMQGatewayContainer

    image = request.config.getoption("--rmq-gateway-image") or DEFAULT_IMAGE
    container = RocketMQGatewayContainer(image)
    container.start()
    try:
        yield container
    finally:
        container.stop()


@pytest.fixture(scope="session")
def rmq_container_namesrv(rmq_container: RocketMQGatewayContainer) -> str:
    """The container's NameServer address."""
    return rmq_container.get_namesrv_address()


@pytest.fixture(scope="session")
def rmq_container_grpc_endpoint(rmq_container: RocketMQGatewayContainer) -> str:
    """The container's gRPC endpoint."""
    return rmq_container.get_grpc_endpoint()
