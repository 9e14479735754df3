"""The Trio TCP server that every component (NameServer, Broker) runs its dispatcher on.

Usable with ``await nursery.start(server.run)``, which returns the bound listeners, so tests can
bind port 0. Connections are served by :class:`gateway.transport.connection.Connection`; the server
keeps the open ones by id, so that a shutdown can drain them and statistics can count them.
Handlers reach their own client through ``RequestContext.connection.peer``. With
``config.tls`` set, each connection's first bytes decide between TLS and plaintext as
``tls.server.mode`` says (:mod:`gateway.transport.tls`, ``NettyRemotingServer.TlsModeHandler``).

Accepting is :class:`gateway.transport.accept.Acceptor`'s, shared with the gRPC server: out of
resources pauses and retries, any other accept error ends :meth:`RemotingServer.run`, connections
beyond ``max_connections`` are closed at once, and its lines are rate-limited.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator
from typing import Any

import trio

from gateway.transport.accept import ACCEPT_CAPACITY_ERRNOS, ACCEPT_PAUSE_S, Acceptor
from gateway.transport.address import join_address
from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection
from gateway.transport.dispatch import Dispatcher
from gateway.transport.tls import ServerTls

__all__ = ["ACCEPT_CAPACITY_ERRNOS", "ACCEPT_PAUSE_S", "RemotingServer"]

logger = logging.getLogger(__name__)

RECEIVE_SIZE = 64 * 1024  # the first read, which decides between TLS and plaintext


class RemotingServer:
    """Serves one dispatcher on one port; see the module docstring."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        config: ServerConfig | None = None,
        name: str = "server",
        listeners: list[trio.SocketListener] | None = None,
        ids: Iterator[int] | None = None,
    ) -> None:
        """``listeners``: sockets already bound (a caller that must know its port before it builds
        the rest); by default :meth:`run` binds ``config.host``/``config.port``. ``ids``: the
        connection ids, shared by the servers of one broker so that an id names one connection."""
        self.dispatcher = dispatcher
        self.config = config or ServerConfig()
        self.name = name
        self.connections: dict[int, Connection] = {}
        self.listeners: list[trio.SocketListener] = listeners or []
        self.ids = ids if ids is not None else itertools.count(1)
        self._accepting = trio.CancelScope()
        self._negotiating: set[trio.CancelScope] = set()  # connections still sniffing TLS
        self._done = trio.Event()
        self.acceptor = Acceptor(name, self.config.max_connections, logger)
        #: Called with each connection as it closes (e.g. the NameServer drops its brokers).
        self.on_disconnect: list[Callable[[Connection], None]] = []

    @property
    def addresses(self) -> list[str]:
        """``host:port`` of every listener still open (none once the server has stopped)."""
        addresses = []
        for listener in self.listeners:
            try:
                host, port = listener.socket.getsockname()[:2]
            except OSError:  # closed: statistics() of a stopped server still answers
                continue
            addresses.append(join_address(host, port))
        return addresses

    @property
    def port(self) -> int:
        return int(self.listeners[0].socket.getsockname()[1])

    @property
    def accepted(self) -> int:
        return self.acceptor.accepted

    @property
    def refused(self) -> int:
        """Connections closed at once because ``max_connections`` were open."""
        return self.acceptor.refused

    @property
    def accept_pauses(self) -> int:
        """Accepts that failed for lack of resources, each followed by a pause."""
        return self.acceptor.accept_pauses

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
                            accept_nursery.start_soon(
                                self.acceptor.run, listener, self._serve_connection, nursery
                            )
                # Accepting stopped: drain connections gracefully; one that has not yet said
                # whether it speaks TLS has nothing in flight.
                for scope in list(self._negotiating):
                    scope.cancel()
                for conn in list(self.connections.values()):
                    conn.stop_reading()
        finally:
            for listener in self.listeners:
                with trio.CancelScope(shield=True):
                    await listener.aclose()
            self._done.set()

    async def _serve_connection(self, raw: trio.SocketStream) -> None:
        stream: trio.abc.Stream = raw
        first = b""
        if self.config.tls is not None:
            negotiated = None
            if self._accepting.cancel_called:  # accepted just before the shutdown
                await trio.aclose_forcefully(raw)
                return
            with trio.CancelScope() as scope:
                self._negotiating.add(scope)
                try:
                    negotiated = await self._negotiate(raw, self.config.tls)
                finally:
                    self._negotiating.discard(scope)
            if negotiated is None:
                with trio.CancelScope(shield=True):
                    await trio.aclose_forcefully(raw)
                return
            stream, first = negotiated
        conn = Connection(stream, next(self.ids), self.dispatcher, self.config, first)
        self.connections[conn.info.id] = conn
        logger.debug("%s: %s connected", self.name, conn)
        try:
            await conn.serve()
        finally:
            del self.connections[conn.info.id]
            for hook in list(self.on_disconnect):
                hook(conn)
            logger.debug("%s: %s disconnected", self.name, conn)

    async def _negotiate(
        self, raw: trio.SocketStream, tls: ServerTls
    ) -> tuple[trio.abc.Stream, bytes] | None:
        """Read the first bytes (within ``idle_timeout_s``, as any silence) and let ``tls``
        decide: TLS, plaintext, or close (``NettyRemotingServer.TlsModeHandler``)."""
        try:
            name = f"{self.name} {join_address(*raw.socket.getpeername()[:2])}"
        except OSError:  # already gone
            return None
        first = b""
        with trio.move_on_after(self.config.idle_timeout_s):
            try:
                first = bytes(await raw.receive_some(RECEIVE_SIZE))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
                logger.debug("%s: receive failed: %s", name, err)
        if not first:
            return None
        return await tls.negotiate(raw, first, name)

    def shutdown(self) -> None:
        """Stop accepting; open connections answer what they have in flight, then close."""
        self._accepting.cancel()

    async def wait_closed(self) -> None:
        await self._done.wait()

    def statistics(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "addresses": self.addresses,
            "connections": len(self.connections),
            "negotiating": len(self._negotiating),  # accepted, first bytes (TLS or not) awaited
            **self.acceptor.statistics(),
            "tls": None if self.config.tls is None else self.config.tls.statistics(),
            "dispatcher": self.dispatcher.statistics(),
        }
