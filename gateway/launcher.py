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
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass

import trio

from broker.app import BrokerApp
from broker.config import BrokerConfig
from gateway.address import loopback_if_wildcard
from gateway.config import ServerConfig
from namesrv.app import NamesrvApp
from namesrv.config import NamesrvConfig

logger = logging.getLogger(__name__)

STOP_TIMEOUT_S = 15.0  # per component, then it is cancelled


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Where clients reach what a :class:`Gateway` runs (``host:port``, loopback for a wildcard bind)."""

    namesrv_addr: str | None
    broker_addr: str | None


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


class Gateway:
    """Runs the components it is given; see the module docstring."""

    def __init__(self, namesrv: NamesrvSpec | None = None, broker: BrokerSpec | None = None) -> None:
        if namesrv is None and broker is None:
            raise ValueError("a gateway runs a NameServer, a Broker or both")
        if broker is not None and broker.use_local_namesrv and namesrv is None:
            raise ValueError("a broker using the local NameServer needs one")
        self.namesrv_spec = namesrv
        self.broker_spec = broker
        self.namesrv: NamesrvApp | None = None
        self.broker: BrokerApp | None = None
        self._stop = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[Endpoints] = trio.TASK_STATUS_IGNORED) -> None:
        """Start every component in order, report the :class:`Endpoints`, serve until :meth:`shutdown`."""
        async with trio.open_nursery() as nursery:
            namesrv_addr = broker_addr = None
            if self.namesrv_spec is not None:
                self.namesrv = NamesrvApp(self.namesrv_spec.config, self.namesrv_spec.server)
                server = await nursery.start(self.namesrv.run)
                namesrv_addr = loopback_if_wildcard(server.addresses[0])
            if self.broker_spec is not None:
                config = self.broker_spec.config
                if self.broker_spec.use_local_namesrv:
                    config = dataclasses.replace(config, namesrv_addr=namesrv_addr or "")
                self.broker = BrokerApp(config, self.broker_spec.server)
                server = await nursery.start(self.broker.run)
                broker_addr = loopback_if_wildcard(server.addresses[0])
            task_status.started(Endpoints(namesrv_addr, broker_addr))
            await self._stop.wait()
            for app in (self.broker, self.namesrv):
                if app is not None:
                    with trio.move_on_after(STOP_TIMEOUT_S) as scope:
                        app.shutdown()
                        await app.wait_stopped()
                    if scope.cancelled_caught:
                        logger.warning("%s did not stop within %.0f s", app.name, STOP_TIMEOUT_S)
            nursery.cancel_scope.cancel()

    def shutdown(self) -> None:
        """Stop gracefully: the broker unregisters and drains, then the NameServer stops."""
        self._stop.set()


def standalone_gateway(
    store_dir: str,
    *,
    host: str = "127.0.0.1",
    namesrv_port: int = 0,
    broker_port: int = 0,
    properties: Mapping[str, str] | None = None,
) -> Gateway:
    """A NameServer and a Broker in one process, the broker storing under ``store_dir`` and
    registering to the NameServer. ``properties`` are RocketMQ ``broker.conf`` / ``namesrv.conf``
    keys (e.g. ``flushDiskType``, ``kvConfigPath``); raises ``ValueError`` for a malformed value."""
    props = {**(properties or {}), "storePathRootDir": store_dir}
    return Gateway(
        NamesrvSpec(NamesrvConfig.from_properties(props), ServerConfig(host=host, port=namesrv_port)),
        BrokerSpec(
            BrokerConfig.from_properties(props),
            ServerConfig(host=host, port=broker_port),
            use_local_namesrv=True,
        ),
    )
