"""The Trio TCP server that every component (NameServer, Broker) runs its dispatcher on.

Usable with ``await nursery.start(server.run)``, which returns the bound listeners, so tests can
bind port 0. Connections are served by :class:`gateway.transport.connection.Connection`; the server keeps a
registry of them (by id, and by client id once a heartbeat names it) for broker-to-client calls.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

import trio

from gateway.transport.address import join_address
from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection
from gateway.transport.dispatch import Dispatcher

logger = logging.getLogger(__name__)


class RemotingServer:
    """Serves one dispatcher on one port; see the module docstring."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        config: ServerConfig | None = None,
        name: str = "server",
        listeners: list[trio.SocketListener] | None = None,
    ) -> None:
        """``listeners``: sockets already bound (a caller that must know its port before it builds
        the rest); by default :meth:`run` binds ``config.host``/``config.port``."""
        self.dispatcher = dispatcher
        self.config = config or ServerConfig()
        self.name = name
        self.connections: dict[int, Connection] = {}
        self.listeners: list[trio.SocketListener] = listeners or []
        self._ids = itertools.count(1)
        self._accepting = trio.CancelScope()
        self._done = trio.Event()
        self.accepted = 0
        self.refused = 0
        #: Called with each connection as it closes (e.g. the NameServer drops its brokers).
        self.on_disconnect: list[Callable[[Connection], None]] = []

    @property
    def addresses(self) -> list[str]:
        """``host:port`` of every bound listener."""
        return [join_address(*listener.socket.getsockname()[:2]) for listener in self.listeners]

    @property
    def port(self) -> int:
        return int(self.listeners[0].socket.getsockname()[1])

    async def run(
        self, *, task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Bind, report the listeners through ``task_status``, and serve until :meth:`shutdown`."""
        if not self.listeners:
            self.listeners = await trio.open_tcp_listeners(self.config.port, host=self.config.host)
        try:
            async with trio.open_nursery() as nursery:
                task_status.started(self.listeners)
                with self._accepting:
                    async with trio.open_nursery() as accept_nursery:
                        for listener in self.listeners:
                            accept_nursery.start_soon(self._accept_loop, listener, nursery)
                # Accepting stopped: drain connections gracefully.
                for conn in list(self.connections.values()):
                    conn.stop_reading()
        finally:
            for listener in self.listeners:
                with trio.CancelScope(shield=True):
                    await listener.aclose()
            self._done.set()

    async def _accept_loop(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        while True:
            try:
                stream = await listener.accept()
            except OSError as err:  # e.g. EMFILE: back off instead of spinning
                logger.warning("%s: accept failed: %s", self.name, err)
                await trio.sleep(0.1)
                continue
            if len(self.connections) >= self.config.max_connections:
                self.refused += 1
                logger.warning("%s: refusing connection, %d open", self.name, len(self.connections))
                await trio.aclose_forcefully(stream)
                continue
            self.accepted += 1
            nursery.start_soon(self._serve_connection, stream)

    async def _serve_connection(self, stream: trio.SocketStream) -> None:
        conn = Connection(stream, next(self._ids), self.dispatcher, self.config)
        self.connections[conn.info.id] = conn
        logger.debug("%s: %s connected", self.name, conn)
        try:
            await conn.serve()
        finally:
            del self.connections[conn.info.id]
            for hook in list(self.on_disconnect):
                hook(conn)
            logger.debug("%s: %s disconnected", self.name, conn)

    def shutdown(self) -> None:
        """Stop accepting; open connections answer what they have in flight, then close."""
        self._accepting.cancel()

    async def wait_closed(self) -> None:
        await self._done.wait()

    def find_client(self, client_id: str) -> Connection | None:
        """The live connection of a client that named itself ``client_id`` in a heartbeat."""
        for conn in self.connections.values():
            if conn.info.client_id == client_id:
                return conn
        return None

    def statistics(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "addresses": self.addresses,
            "connections": len(self.connections),
            "accepted": self.accepted,
            "refused": self.refused,
            "dispatcher": self.dispatcher.statistics(),
        }
