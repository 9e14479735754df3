"""A testcontainers module for the gateway's image (``docker/Dockerfile``).

::

    from gateway.testing.container import RocketMQGatewayContainer

    with RocketMQGatewayContainer() as gateway:          # image rmq-gateway:local, host network
        namesrv = gateway.get_namesrv_address()          # "127.0.0.1:<free port>"

Start-up waits on readiness over the wire (:mod:`gateway.testing.probe`: the NameServer answers
and the broker has registered), never on a sleep or a log line.

Networking. A RocketMQ client asks the NameServer for the broker's address and then connects to
that address, so the broker must advertise one the client can reach (``brokerIP1``, like the real
broker) on the port it really listens on. Two modes:

* ``network_mode="host"`` (default): the container shares the host's network; both servers
  listen on free ports of ``127.0.0.1`` and advertise ``127.0.0.1``. Nothing is published.
* ``network_mode="bridge"``: ports are published one-to-one (host port = container port, picked
  free on the host) on ``publish_host`` (loopback by default) and the broker advertises
  ``broker_ip1`` (default: the Docker host's address as testcontainers sees it), so clients
  outside the container reach it. A random host port mapping cannot work: the advertised port
  would be wrong.

Faults on demand and the stored messages go through the image's HTTP control endpoint
(``RMQ_GATEWAY_CONTROL_PORT``, on a free port like the others): :attr:`RocketMQGatewayContainer.faults`
has the methods of the in-process gateway's fault table (``add``, ``remove``, ``clear``,
``list``), and :meth:`RocketMQGatewayContainer.stored_messages` those of its namesake. The
surface of the Java and Go modules (``docker/testcontainers/``) is here too::

    gateway = RocketMQGatewayContainer().with_topic("orders", 4, "FIFO").with_group("bill", retryMaxTimes=3)
    with gateway as gw:
        gw.add_fault("SEND_MESSAGE_V2", 2, times=2)      # SYSTEM_BUSY twice
        ...
        gw.await_messages("orders", 1)                     # what the broker stored
        gw.clear_faults()

A broker of another NameServer: ``namesrv_addr="127.0.0.1:9876"`` runs the image's ``broker``
command (no NameServer of its own) registering there; with ``properties`` ``brokerId``/``brokerRole``
that is how :class:`gateway.testing.container_pair.RocketMQGatewayPair` starts a master and its
slave. Such a container is ready when its broker is registered under its ``brokerId``.

``TESTCONTAINERS_RYUK_DISABLED=true`` is needed where the reaper image cannot be pulled; the
container is then removed by :meth:`stop` (the context manager does it).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Self, cast

from testcontainers.core.container import DockerContainer

from gateway.control.client import ControlClient, RemoteFaults
from gateway.resources import GROUPS_ENV, TOPICS_ENV
from gateway.testing.ports import free_port
from gateway.testing.probe import ProbeError, ProbeResult, probe

logger = logging.getLogger(__name__)

DEFAULT_IMAGE = os.environ.get("RMQ_GATEWAY_IMAGE", "rmq-gateway:local")
STARTUP_TIMEOUT_S = 60.0  # container start to a registered broker; ~1 s on a 2-core machine
# A refused connection costs the probe ~0.1 ms, so it polls often; asking Docker whether the
# container died is an API round trip (and dockerd CPU on a busy machine), so that is rarer.
PROBE_INTERVAL_S = 0.01
STATUS_INTERVAL_S = 0.25
LOOPBACK = "127.0.0.1"


class RocketMQGatewayContainer(DockerContainer):
    """``rmq-gateway standalone`` (NameServer + Broker) in a container; see the module docstring.

    ``properties`` are Java broker.conf keys (``{"flushDiskType": "SYNC_FLUSH"}``), passed as
    ``RMQ_PROP_<key>`` variables to the image's entrypoint; ``topics`` / ``groups`` (``"orders:8:FIFO"``,
    ``"billing:retryMaxTimes=3"``) are created before the gateway is ready. ``namesrv_addr``: run
    only a broker (the image's ``broker`` command), registering to that NameServer.
    """

    def __init__(
        self,
        image: str = DEFAULT_IMAGE,
        *,
        network_mode: Literal["host", "bridge"] = "host",
        namesrv_port: int | None = None,
        broker_port: int | None = None,
        grpc_port: int | None = None,
        control_port: int | None = None,
        broker_ip1: str | None = None,
        broker_name: str = "broker-a",
        namesrv_addr: str | None = None,
        publish_host: str = LOOPBACK,
        properties: Mapping[str, str] | None = None,
        topics: Sequence[str] = (),
        groups: Sequence[str] = (),
        startup_timeout: float = STARTUP_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(image, **kwargs)
        self.network_mode = network_mode
        self.publish_host = publish_host
        self.namesrv_port = namesrv_port or free_port()
        self.broker_port = broker_port or free_port(offsets=(-2, 0))  # and its VIP channel at - 2
        self.grpc_port = grpc_port or free_port()
        self.control_port = control_port or free_port()
        self.startup_timeout = startup_timeout
        self.ready: ProbeResult | None = None
        self.startup_seconds: float | None = None
        self.with_env("NAMESRV_PORT", str(self.namesrv_port))
        self.with_env("BROKER_PORT", str(self.broker_port))
        self.with_env("GRPC_PORT", str(self.grpc_port))
        self.with_env("RMQ_GATEWAY_CONTROL_PORT", str(self.control_port))
        self.with_env("BROKER_NAME", broker_name)
        self.broker_name = broker_name
        self.broker_id = int((properties or {}).get("brokerId", "0"))
        self.namesrv_addr = namesrv_addr
        if namesrv_addr is not None:
            self.with_command("broker")
            self.with_env("NAMESRV_ADDR", namesrv_addr)
        if network_mode == "host":
            # Loopback only: the host's other interfaces see nothing of a test broker.
            self.with_kwargs(network_mode="host")
            self.with_env("RMQ_HOST", LOOPBACK)
            self.with_env("BROKER_IP1", broker_ip1 or LOOPBACK)
        else:
            for port in (self.namesrv_port, self.broker_port, self.grpc_port, self.control_port):
                # docker-py takes (host_ip, host_port) too: publish on one host address only
                self.ports[f"{port}/tcp"] = cast("int", (publish_host, port))
            self._broker_ip1 = broker_ip1
        for key, value in (properties or {}).items():
            self.with_env(f"RMQ_PROP_{key}", value)
        self._topics: list[str] = []
        self._groups: list[str] = []
        for topic in topics:  # created before ready (gateway.resources): NAME[:QUEUES[:TYPE]]
            self._declare(self._topics, TOPICS_ENV, ",", topic)
        for group in groups:  # NAME[:KEY=VALUE,...]
            self._declare(self._groups, GROUPS_ENV, ";", group)

    def _declare(self, specs: list[str], env: str, separator: str, spec: str) -> None:
        specs.append(spec)
        self.with_env(env, separator.join(specs))

    def with_topic(self, name: str, queues: int = 8, message_type: str = "NORMAL") -> Self:
        """Declare a topic of ``queues`` queues and message type ``NORMAL``, ``FIFO``, ``DELAY`` or
        ``TRANSACTION``, created before the gateway is ready; call before :meth:`start`. Raises
        ``ValueError`` for a name the spec cannot carry or a queue count below 1."""
        if not name or "," in name or ":" in name or queues < 1:
            raise ValueError(f"topic {name!r} with {queues} queues")
        self._declare(self._topics, TOPICS_ENV, ",", f"{name}:{queues}:{message_type.upper()}")
        return self

    def with_group(self, name: str, **settings: object) -> Self:
        """Declare a consumer group with ``SubscriptionGroupConfig`` settings
        (``retryMaxTimes=3``, ``consumeMessageOrderly=True``); call before :meth:`start`."""
        pairs = ",".join(
            f"{key}={str(value).lower() if isinstance(value, bool) else value}"
            for key, value in settings.items()
        )
        self._declare(self._groups, GROUPS_ENV, ";", f"{name}:{pairs}" if pairs else name)
        return self

    def _host(self) -> str:
        if self.network_mode == "host":
            return LOOPBACK
        if self.publish_host not in ("0.0.0.0", "::"):
            return self.publish_host
        host = self.get_container_host_ip()
        return LOOPBACK if host == "localhost" else host

    def get_namesrv_address(self) -> str:
        """``host:port`` of the NameServer, what clients take as ``namesrvAddr``/``NAMESRV_ADDR``."""
        if self.namesrv_addr is not None:
            return self.namesrv_addr
        return f"{self._host()}:{self.namesrv_port}"

    def get_broker_address(self) -> str:
        """``host:port`` the broker advertises (clients learn it from the NameServer)."""
        return f"{self._host()}:{self.broker_port}"

    def get_grpc_endpoint(self) -> str:
        """``host:port`` of the gRPC endpoint, what RocketMQ 5 clients take as their endpoints."""
        return f"{self._host()}:{self.grpc_port}"

    def get_control_address(self) -> str:
        """``host:port`` of the HTTP control endpoint (docs/testing-with-gateway.md)."""
        return f"{self._host()}:{self.control_port}"

    @property
    def control(self) -> ControlClient:
        """The control endpoint's client: ``group_offsets``, ``retry_messages``, ``dlq_messages``,
        ``reset`` and the rest of :class:`gateway.control.client.ControlClient`."""
        return ControlClient(self.get_control_address())

    @property
    def faults(self) -> RemoteFaults:
        """The gateway's fault rules, over the control endpoint (``add``, ``remove``, ``clear``, ``list``)."""
        return RemoteFaults(ControlClient(self.get_control_address()))

    def stored_messages(
        self, topic: str, *, wait_for: int = 0, timeout_s: float = 10.0, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """The stored messages of ``topic``, once there are ``wait_for``; raises ``TimeoutError``."""
        client = ControlClient(self.get_control_address())
        return client.stored_messages(topic, wait_for=wait_for, timeout_s=timeout_s, limit=limit)

    def await_messages(self, topic: str, count: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
        """The stored messages of ``topic`` once there are at least ``count``; raises
        ``TimeoutError`` saying how many there were."""
        return self.stored_messages(topic, wait_for=count, timeout_s=timeout_s)

    def add_fault(
        self, request: str, response_code: int, remark: str | None = None, times: int | None = None
    ) -> int:
        """Answer the next ``times`` (None: every) requests of ``request`` (a RequestCode's Java
        name such as ``SEND_MESSAGE_V2``, or a unary gRPC method such as ``SendMessage``) with
        ``response_code`` and ``remark`` (None: the real broker's text); returns the rule's id.
        Raises :class:`gateway.control.client.ControlError` for a rule the gateway refuses."""
        rule: dict[str, Any] = {"request": request, "respond": response_code}
        if remark is not None:
            rule["remark"] = remark
        if times is not None:
            rule["times"] = times
        return self.faults.add(rule)

    def clear_faults(self) -> int:
        """Remove every fault rule; returns how many there were."""
        return self.faults.clear()

    def start(self) -> Self:
        """Start the container and wait until the broker is registered; on failure the container
        is removed and ``TimeoutError``/``RuntimeError`` (with its logs) raised."""
        if self.network_mode == "bridge":
            self.with_env("BROKER_IP1", self._broker_ip1 or self._host())
        began = time.monotonic()
        super().start()
        try:
            self.ready = self._wait_ready(began)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        logger.info("rmq-gateway container ready in %.2f s: %s", self.startup_seconds, self.ready.summary())
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        """Remove the container (and its anonymous /data volume); a second call does nothing."""
        if self._container is None:
            return
        super().stop(force=force, delete_volume=delete_volume)
        self._container = None

    def _wait_ready(self, began: float) -> ProbeResult:
        deadline = began + self.startup_timeout
        reason = "not probed yet"
        status_due = time.monotonic() + STATUS_INTERVAL_S
        while time.monotonic() < deadline:
            try:
                return probe(
                    self.get_namesrv_address(),
                    broker_name=self.broker_name,
                    broker_id=self.broker_id or None,  # a slave: registered under its own id
                    timeout=1.0,
                )
            except ProbeError as err:
                reason = str(err)
            if time.monotonic() >= status_due:
                self.reload()
                if self.status in ("exited", "dead"):
                    raise RuntimeError(f"rmq-gateway container {self.status}:\n{self._log_tail()}")
                status_due = time.monotonic() + STATUS_INTERVAL_S
            time.sleep(PROBE_INTERVAL_S)
        limit = f"{self.startup_timeout:g} s"
        raise TimeoutError(f"rmq-gateway container not ready within {limit} ({reason}):\n{self._log_tail()}")

    def _log_tail(self, chars: int = 3000) -> str:
        stdout, stderr = self.get_logs()
        return (stdout + stderr).decode(errors="replace")[-chars:]
