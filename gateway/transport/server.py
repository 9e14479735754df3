"""The Trio TCP server that every component (NameServer, Broker) runs its dispatcher on.

Usable with ``await nursery.start(server.run)``, which returns the bound listeners, so tests can
bind port 0. Connections are served by :class:`gateway.transport.connection.Connection`; the server
keeps the open ones by id, so that a shutdown can drain them and statistics can count them.
Handlers reach their own client through ``RequestContext.connection.peer``. With
``config.tls`` set, each connection's first bytes decide between TLS and plaintext as
``tls.server.mode`` says (:mod:`gateway.transport.tls`, ``NettyRemotingServer.TlsModeHandler``).

Errors from ``accept`` are handled as trio's ``serve_listeners`` does: when the process or the
system is out of file descriptors or buffer memory, the listener logs it, pauses
``ACCEPT_PAUSE_S`` and tries again, since connections closing meanwhile free what the next accept
needs; any other error means the listener is broken and ends :meth:`RemotingServer.run` with it,
instead of a loop that logs the same failure forever. (``trio.SocketListener.accept`` already
retries the errors that concern only the one connection being accepted, such as ``ECONNABORTED``.)
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

import trio

from gateway.transport.address import join_address
from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection
from gateway.transport.dispatch import Dispatcher
from gateway.transport.tls import ServerTls

logger = logging.getLogger(__name__)

# accept(2) errors that mean "out of resources for now" (trio's ACCEPT_CAPACITY_ERRNOS).
ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
ACCEPT_PAUSE_S = 0.1  # as trio.serve_listeners
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
        connection ids, shared by servers whose connections one client table keys by id."""
        self.dispatcher = dispatcher
        self.config = config or ServerConfig()
        self.name = name
        self.connections: dict[int, Connection] = {}
        self.listeners: list[trio.SocketListener] = listeners or []
        self.ids = ids if ids is not None else itertools.count(1)
        self._accepting = trio.CancelScope()
        self._negotiating: set[trio.CancelScope] = set()  # connections still sniffing TLS
        self._done = trio.Event()
        self.accepted = 0
        self.refused = 0
        self.accept_pauses = 0  # accepts that failed for lack of resources, each followed by a pause
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

    async def _accept_loop(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        while True:
            try:
                stream = await listener.accept()
            except OSError as err:
                if err.errno not in ACCEPT_CAPACITY_ERRNOS:
                    raise
                self.accept_pauses += 1
                logger.error(
                    "%s: accept failed with %s (%s), %d connections open; retrying in %s s",
                    self.name,
                    errno.errorcode[err.errno],
                    os.strerror(err.errno),
                    len(self.connections),
                    ACCEPT_PAUSE_S,
                )
                await trio.sleep(ACCEPT_PAUSE_S)
                continue
            if len(self.connections) + len(self._negotiating) >= self.config.max_connections:
                self.refused += 1
                logger.warning("%s: refusing connection, %d open", self.name, len(self.connections))
                await trio.aclose_forcefully(stream)
                continue
            self.accepted += 1
            nursery.start_soon(self._serve_connection, stream)

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
            "accepted": self.accepted,
            "refused": self.refused,
            "accept_pauses": self.accept_pauses,
            "tls": None if self.config.tls is None else self.config.tls.statistics(),
            "dispatcher": self.dispatcher.statistics(),
        }
