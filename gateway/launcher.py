"""The composition of the whole program: a NameServer, a Broker, or both in one process.

This is the top layer: it imports the NameServer and Broker apps (which import the lower
``gateway`` modules), and nothing below imports it. ``rmq-gateway`` (:mod:`gateway.cli`) and the
in-process test fixtures build a :class:`Gateway` and run it::

    gateway = standalone_gateway("/tmp/store", namesrv_port=0, broker_port=0)
    endpoints = await nursery.start(gateway.run)   # Endpoints(namesrv_addr=..., broker_addr=...)
    ...
    gateway.shutdown()                              # run() returns once everything has stopped

In standalone mode the NameServer starts first; the Broker is built once the NameServer's bound
address is known and registers to it. Stopping runs in the other order: the Broker unregisters
and drains while the NameServer still answers, then the NameServer stops.

Everything that can be checked before a socket is opened is checked when a gateway is built
(:func:`check_specs`): the store settings (``StoreConfig.validate``), the NameServer addresses a
broker registers to, and the property keys no component uses, each logged once at WARNING with
the known key it most resembles (``flushdisktype`` → ``flushDiskType``).
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from broker.app import BrokerApp
from broker.auth.config import AuthConfig, auth_config_of
from broker.config import JAVA_KEY_ALIASES, BrokerConfig
from broker.controller import BrokerController, store_config_of
from broker.ha.roles import apply_broker_role
from codec.config_fields import camel_case, snake_case
from gateway.control.api import ControlApi
from gateway.control.broker_faults import BrokerFaults
from gateway.control.server import ControlConfig, ControlServer
from gateway.resources import Resources, apply_resources
from gateway.transport.address import join_address, loopback_if_wildcard, split_address
from gateway.transport.config import ServerConfig
from gateway.transport.faults import FaultTable
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.tls import LazyServerContext, ServerTls
from gateway.transport.tls_config import ServerCertificate, TlsMode, TlsSystemConfig, client_context
from namesrv.app import NamesrvApp
from namesrv.config import JAVA_DEFAULTS as NAMESRV_JAVA_KEYS
from namesrv.config import NamesrvConfig
from store.config import StoreConfig
from store.errors import StoreError
from store.message_store import MessageStore

if TYPE_CHECKING:
    from broker.grpc.common import Handler
    from gateway.transport.grpc.server import GrpcServer

logger = logging.getLogger(__name__)

STOP_TIMEOUT_S = 15.0  # per component, then it is cancelled
DECLARE_TIMEOUT_S = 10.0  # declared topics to reach the NameServer (one registration, ms normally)
DECLARE_POLL_S = 0.005


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Where clients reach what a :class:`Gateway` runs (``host:port``, loopback for a wildcard bind)."""

    namesrv_addr: str | None
    broker_addr: str | None
    grpc_addr: str | None = None  # the broker's gRPC endpoint (RocketMQ 5 clients), when on
    control_addr: str | None = None  # the HTTP control endpoint (faults, stored messages), when on


@dataclass(slots=True)
class NamesrvSpec:
    config: NamesrvConfig
    server: ServerConfig


@dataclass(slots=True)
class BrokerSpec:
    """A broker to run; ``use_local_namesrv``: register to the NameServer of the same gateway
    (its bound address replaces ``config.namesrv_addr``)."""

    config: BrokerConfig
    server: ServerConfig
    use_local_namesrv: bool = False
    grpc: GrpcServerConfig | None = None  # the gRPC endpoint; None: off


class Gateway:
    """Runs the components it is given; see the module docstring."""

    def __init__(
        self,
        namesrv: NamesrvSpec | None = None,
        broker: BrokerSpec | None = None,
        tls: TlsSystemConfig | None = None,
        faults: FaultTable | None = None,
        control: ControlConfig | None = None,
        resources: Resources | None = None,
    ) -> None:
        """``resources``: topics and groups created before ``run`` reports (:mod:`gateway.resources`).
        ``tls``: the ``tls.*`` settings (``TlsSystemConfig``) of every port and of the broker's
        connections to the NameServers; by default Java's: permissive, test mode, no ``tls.enable``.
        ``faults``: fault rules the servers consult (:mod:`gateway.transport.faults`; None: none,
        unless ``control`` is given); ``control``: serve the HTTP control endpoint there."""
        if namesrv is None and broker is None:
            raise ValueError("a gateway runs a NameServer, a Broker or both")
        if broker is not None and broker.use_local_namesrv and namesrv is None:
            raise ValueError("a broker using the local NameServer needs one")
        self.namesrv_spec = namesrv
        self.broker_spec = broker
        self.namesrv: NamesrvApp | None = None
        self.broker: BrokerApp | None = None
        #: Full disk, route removal, redelivery (:mod:`gateway.control.broker_faults`).
        self.broker_faults = BrokerFaults(lambda: self.broker, lambda: self.namesrv)
        self.grpc: GrpcServer | None = None  # the gRPC server when on
        self.tls = tls or TlsSystemConfig()
        self.faults = faults if faults is not None or control is None else FaultTable(trio.sleep)
        self.control_config = control
        self.control: ControlServer | None = None
        self.resources = resources or Resources()
        #: tls.server.mode and the certificate of the remoting ports, shared by all of them.
        self.remoting_tls = remoting_server_tls(self.tls)
        self._stop = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[Endpoints] = trio.TASK_STATUS_IGNORED) -> None:
        """Start every component in order, report the :class:`Endpoints`, serve until :meth:`shutdown`."""
        async with trio.open_nursery() as nursery:
            namesrv_addr = broker_addr = None
            if self.namesrv_spec is not None:
                server_config = self._with_tls(self.namesrv_spec.server)
                faults = self.faults.point("namesrv") if self.faults is not None else None
                self.namesrv = NamesrvApp(self.namesrv_spec.config, server_config, faults)
                server = await nursery.start(self.namesrv.run)
                namesrv_addr = loopback_if_wildcard(server.addresses[0])
            if self.broker_spec is not None:
                config = self.broker_spec.config
                if self.broker_spec.use_local_namesrv:
                    config = dataclasses.replace(config, namesrv_addr=namesrv_addr or "")
                client_tls = client_context(self.tls) if self.tls.client_enabled else None
                faults = self.faults.point("broker") if self.faults is not None else None
                self.broker = BrokerApp(config, self._with_tls(self.broker_spec.server), client_tls, faults)
                server = await nursery.start(self.broker.run)
                broker_addr = loopback_if_wildcard(server.addresses[0])
                await self.declare(self.resources)
            grpc_addr = None
            if self.broker is not None and self.broker_spec is not None and self.broker_spec.grpc is not None:
                mode = self.tls.server_mode
                self.grpc = await start_grpc(nursery, self.broker, self.broker_spec.grpc, mode)
                grpc_addr = loopback_if_wildcard(self.grpc.addresses[0])
            control_addr = None
            if self.control_config is not None and self.faults is not None:
                api = ControlApi(
                    self.faults,
                    self._store,
                    self.reset,
                    self._controller,
                    self.broker_faults.disk_full,
                    self.broker_faults.withhold_route,
                    self.broker_faults.rewind,
                )
                self.control = await ControlServer.bind(api, self.control_config)
                control_addr = loopback_if_wildcard(await nursery.start(self.control.run))
            task_status.started(Endpoints(namesrv_addr, broker_addr, grpc_addr, control_addr))
            await self._stop.wait()
            if self.grpc is not None:
                with trio.move_on_after(STOP_TIMEOUT_S):
                    await self.grpc.shutdown()
            for app in (self.broker, self.namesrv):
                if app is not None:
                    with trio.move_on_after(STOP_TIMEOUT_S) as scope:
                        app.shutdown()
                        await app.wait_stopped()
                    if scope.cancelled_caught:
                        logger.warning("%s did not stop within %.0f s", app.name, STOP_TIMEOUT_S)
            nursery.cancel_scope.cancel()

    def _store(self) -> MessageStore | None:
        """The running broker's store, for the control endpoint (None: no broker here)."""
        return self.broker.broker.store if self.broker is not None else None

    async def declare(self, resources: Resources) -> None:
        """Create ``resources`` in the broker and, with a NameServer in this process, wait until
        its route table has every declared topic (so a client's first route query finds them).
        Raises ``TimeoutError`` when the registration does not arrive within ``DECLARE_TIMEOUT_S``."""
        if self.broker is None or not resources:
            return
        controller = self.broker.controller
        apply_resources(controller.topics, controller.groups, resources)
        if self.namesrv is None:
            return
        names = [topic.topic_name for topic in resources.topics]
        with trio.fail_after(DECLARE_TIMEOUT_S):
            while any(name not in self.namesrv.routes.topic_queues for name in names):  # noqa: ASYNC110 - another component's plain state
                await trio.sleep(DECLARE_POLL_S)

    def reset(self) -> dict[str, int]:
        """Empty the gateway for the next test (:func:`broker.reset.reset_broker`, the deleted
        topics' routes in the NameServer, every fault rule); call in the servers' Trio thread.
        Returns what went, by kind."""
        from broker.reset import reset_broker

        removed: dict[str, int] = {}
        if self.broker is not None:
            report, deleted = reset_broker(self.broker.controller)
            removed.update(report.to_obj())
            if self.namesrv is not None:
                for topic in deleted:
                    self.namesrv.routes.delete_topic(topic)
        if self.faults is not None:
            removed["faults"] = self.faults.clear()
        removed.update(self.broker_faults.clear())
        return removed

    def _controller(self) -> BrokerController | None:
        """The running broker's state, for the control endpoint (None: no broker here)."""
        return self.broker.controller if self.broker is not None else None

    def _with_tls(self, server: ServerConfig) -> ServerConfig:
        return server if server.tls is not None else dataclasses.replace(server, tls=self.remoting_tls)

    def shutdown(self) -> None:
        """Stop gracefully: the broker unregisters and drains, then the NameServer stops."""
        self._stop.set()


def remoting_server_tls(tls: TlsSystemConfig) -> ServerTls:
    """The mode and lazily made context of the remoting ports (``NettyRemotingServer.loadSslContext``:
    none when disabled, where the first byte only serves to close TLS clients)."""
    if tls.server_mode is TlsMode.DISABLED:
        return ServerTls(tls.server_mode, None)
    return ServerTls(tls.server_mode, LazyServerContext(ServerCertificate.remoting(tls)))


async def start_grpc(
    nursery: trio.Nursery, broker: BrokerApp, config: GrpcServerConfig, tls_mode: TlsMode = TlsMode.PERMISSIVE
) -> GrpcServer:
    """Serve RocketMQ 5's gRPC protocol in front of ``broker`` (docs/grpc.md); returns the server.

    The port is bound at once; HTTP/2, protobuf and the handlers are loaded when the first client
    connects and the TLS certificate is made when the first TLS client does, so the endpoint costs
    an idle broker next to nothing. Raises OSError when the port cannot be bound.
    """
    from gateway.transport.grpc.server import GrpcServer

    listeners = await trio.open_tcp_listeners(config.grpc_server_port, host=config.host)
    port = int(listeners[0].socket.getsockname()[1])
    # ProxyAndTlsProtocolNegotiator: the Proxy's own certificate keys, ALPN h2, no client auth.
    certificate = ServerCertificate(
        config.tls_cert_path, config.tls_key_path, test_mode=config.tls_test_mode_enable, alpn=("h2",)
    )
    context = LazyServerContext(certificate)

    def methods() -> dict[str, Handler]:
        return broker.grpc_methods(port, config, nursery.start_soon)

    server = GrpcServer(methods, config, context, listeners, tls_mode, ids=broker.connection_ids)
    await nursery.start(server.run)
    logger.info(
        "gRPC endpoint listening on %s (tls.server.mode %s%s)",
        join_address(config.host, port),
        tls_mode.value,
        "" if context.enabled else ", no certificate",
    )
    return server


def grpc_config_of(props: Mapping[str, str], host: str, port: int | None) -> GrpcServerConfig:
    """The endpoint's settings from the Proxy's keys in ``props`` (``grpcServerPort``,
    ``grpcMaxInboundMessageSize``, ``tlsTestModeEnable``, ``tlsCertPath``, ``tlsKeyPath``, the
    request checks' limits such as ``maxUserPropertySize`` or ``maxDelayTimeMills``: every field of
    GrpcServerConfig under its ProxyConfig name);
    ``port`` (a flag) overrides ``grpcServerPort``. Raises ValueError for a malformed value."""
    config = GrpcServerConfig(host=host)
    for field in dataclasses.fields(GrpcServerConfig):
        key = camel_case(field.name)
        if key not in props or field.name == "host":
            continue
        text = props[key].strip()
        value: object
        if field.type in ("int", int):
            if not text.lstrip("-").isdigit():
                raise ValueError(f"{key}={text!r} is not an integer")
            value = int(text)
        elif field.type in ("bool", bool):
            value = text.lower() == "true"
        elif field.type in ("float", float):
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{key}={text!r} is not a number") from None
        else:
            value = text or None
        setattr(config, field.name, value)
    if port is not None:
        config.grpc_server_port = port
    if not 0 <= config.grpc_server_port <= 65535:
        raise ValueError(f"grpcServerPort {config.grpc_server_port} is outside 0..65535")
    for name in ("default_invisible_time_mills", "renew_schedule_period_millis"):
        if getattr(config, name) <= 0:
            raise ValueError(f"{camel_case(name)}={getattr(config, name)} must be positive")
    return config


def known_property_keys(*, namesrv: bool, broker: bool) -> dict[str, str]:
    """The keys the chosen components read, as ``snake_case name → Java key`` (for suggestions)."""
    configs: list[type] = []
    keys: dict[str, str] = {}
    if namesrv:
        configs.append(NamesrvConfig)
        keys.update({snake_case(k): k for k in NAMESRV_JAVA_KEYS})
    if broker:
        configs += [BrokerConfig, StoreConfig, GrpcServerConfig, AuthConfig]
        keys.update({snake_case(k): k for k in JAVA_KEY_ALIASES})
    for config in configs:
        for field in dataclasses.fields(config):
            if field.name != "extra":
                keys.setdefault(field.name, camel_case(field.name))
    keys.update({"broker_ip1": "brokerIP1", "broker_ip2": "brokerIP2"})
    keys["use_tls"] = "useTLS"  # NettyClientConfig.useTLS: the broker's connections to the NameServers
    return keys


def unused_property_keys(
    props: Iterable[str], *, namesrv: bool, broker: bool
) -> list[tuple[str, str | None]]:
    """The keys of ``props`` no chosen component reads, each with the known key it most
    resembles (same letters in another case, else a close spelling), or ``None``."""
    known = known_property_keys(namesrv=namesrv, broker=broker)
    by_lower = {java.lower(): java for java in known.values()}
    out: list[tuple[str, str | None]] = []
    for key in props:
        if snake_case(key) in known:
            continue
        guess = by_lower.get(key.lower())
        if guess is None:
            close = difflib.get_close_matches(key, list(known.values()), n=1, cutoff=0.8)
            guess = close[0] if close else None
        out.append((key, guess))
    return out


def log_unused_property_keys(props: Iterable[str], *, namesrv: bool, broker: bool) -> None:
    """One WARNING per key no component reads (they are kept, never an error)."""
    for key, guess in unused_property_keys(props, namesrv=namesrv, broker=broker):
        hint = f"; did you mean {guess}?" if guess else ""
        logger.warning("config key %s is not used by this gateway (ignored)%s", key, hint)


def check_specs(
    namesrv: NamesrvSpec | None, broker: BrokerSpec | None, tls: TlsSystemConfig | None = None
) -> None:
    """Refuse, before anything starts, what would only fail later; raises ``ValueError``
    (a ``StoreConfigError`` is re-raised as one, with its message)."""
    if tls is not None and tls.server_mode is not TlsMode.DISABLED:
        ServerCertificate.remoting(tls).check()
    if broker is None:
        return
    try:
        apply_broker_role(broker.config, store_config_of(broker.config))
    except (StoreError, ValueError) as err:
        raise ValueError(f"store configuration: {err}") from err
    auth_config_of(broker.config)  # a malformed auth key, or an unsupported one, stops here
    if not broker.use_local_namesrv:
        addresses = broker.config.namesrv_addrs
        if not addresses:
            raise ValueError("namesrvAddr is empty: give --namesrv-addr host:port[;host:port]")
        for address in addresses:
            try:
                _host, port = split_address(address)
            except ValueError as err:
                raise ValueError(f"namesrvAddr: {err}") from err
            if not 0 < port <= 65535:
                raise ValueError(f"namesrvAddr: port of {address!r} is outside 1..65535")


def standalone_gateway(
    store_dir: str,
    *,
    host: str = "127.0.0.1",
    namesrv_port: int = 0,
    broker_port: int = 0,
    properties: Mapping[str, str] | None = None,
    grpc_port: int | None = None,
    tls: TlsSystemConfig | None = None,
    faults: FaultTable | None = None,
    control_port: int | None = None,
    resources: Resources | None = None,
) -> Gateway:
    """A NameServer and a Broker in one process, the broker storing under ``store_dir`` and
    registering to the NameServer. ``properties`` are RocketMQ ``broker.conf`` / ``namesrv.conf``
    keys (e.g. ``flushDiskType``, ``kvConfigPath``); ``grpc_port`` serves the gRPC endpoint there
    (0: any free port; None: off); ``tls``: the ``tls.*`` settings; ``faults``: the fault rules
    the servers consult; ``control_port``: the HTTP control endpoint's port (None: off); raises
    ``ValueError`` for a malformed or out-of-range value (:func:`check_specs`); keys no component
    reads are logged; ``resources``: topics and groups created before the gateway reports."""
    props = {**(properties or {}), "storePathRootDir": store_dir}
    namesrv = NamesrvSpec(NamesrvConfig.from_properties(props), ServerConfig(host=host, port=namesrv_port))
    broker = BrokerSpec(
        BrokerConfig.from_properties(props),
        ServerConfig(host=host, port=broker_port),
        use_local_namesrv=True,
        grpc=None if grpc_port is None else grpc_config_of(props, host, grpc_port),
    )
    check_specs(namesrv, broker, tls)
    log_unused_property_keys(properties or {}, namesrv=True, broker=True)
    control = None if control_port is None else ControlConfig(host, control_port)
    return Gateway(namesrv, broker, tls, faults, control, resources)
