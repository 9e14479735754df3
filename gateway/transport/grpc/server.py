"""The gRPC server: accepts connections, TLS or plaintext on one port, and serves a method table.

Mirrors the Proxy's ``GrpcServer`` with its ``ProxyAndTlsProtocolNegotiator``: a method table keyed
by ``/package.Service/Method`` path, each connection handed to
:class:`gateway.transport.grpc.connection.Connection` (HTTP/2 and the calls). That module and the
method table (``methods`` may be a factory) are loaded when the first connection arrives: the
endpoint costs a broker nothing while no gRPC client uses it. Accepting is the remoting server's
(:class:`gateway.transport.accept.Acceptor`: resource errors pause and retry, connections beyond
``max_connections`` are closed at once), and so is the TLS sniff (:mod:`gateway.transport.tls`).
"""

from __future__ import annotations

import itertools
import logging
import ssl
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import trio

from gateway.transport.accept import Acceptor
from gateway.transport.address import join_address
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.tls import LazyServerContext, PrefixedStream, ServerTls
from gateway.transport.tls_config import TlsMode

logger = logging.getLogger(__name__)

RECEIVE_SIZE = 65536
#: A handler takes the call (gateway.transport.grpc.connection.ServerCall).
Handler = Callable[[Any], Awaitable[None]]


class GrpcServer:
    """Serves a method table on one port, TLS and plaintext alike. ``await nursery.start(run)``."""

    def __init__(
        self,
        methods: Mapping[str, Handler] | Callable[[], Mapping[str, Handler]],
        config: GrpcServerConfig | None = None,
        ssl_context: ssl.SSLContext | LazyServerContext | None = None,
        listeners: list[trio.SocketListener] | None = None,
        tls_mode: TlsMode = TlsMode.PERMISSIVE,
        ids: Iterator[int] | None = None,
    ) -> None:
        """``listeners``: sockets already bound (a caller that must know the port before it builds
        the methods); by default :meth:`run` binds ``config.host``/``config.grpc_server_port``.
        ``methods``: the table, or a function that builds it when the first connection arrives.
        ``tls_mode``: ``tls.server.mode``, as the Proxy reads it from ``TlsSystemConfig``.
        ``ids``: the connection numbers, shared with the remoting servers of the same broker so
        that a connection id names one connection whichever protocol it speaks."""
        self._methods = methods
        self._table: dict[str, Handler] | None = None
        self.config = config or GrpcServerConfig()
        self.tls = ServerTls(
            tls_mode, ssl_context, grpc=True, handshake_timeout_s=self.config.handshake_timeout_s
        )
        self.listeners: list[trio.SocketListener] = listeners or []
        self.connections: dict[int, Any] = {}  # gateway.transport.grpc.connection.Connection
        self._ids = ids if ids is not None else itertools.count(1)
        self._scope = trio.CancelScope()
        self._accepting = trio.CancelScope()
        self.acceptor = Acceptor("grpc", self.config.max_connections, logger)
        self.calls_started = 0
        self.calls_failed = 0
        self.calls_refused = 0  # HTTP errors before a call (405, 415, 431, 404) and refused streams

    @property
    def methods(self) -> dict[str, Handler]:
        """The method table (built on first use when given as a factory)."""
        if self._table is None:
            self._table = dict(self._methods() if callable(self._methods) else self._methods)
        return self._table

    @property
    def addresses(self) -> list[str]:
        return [join_address(*listener.socket.getsockname()[:2]) for listener in self.listeners]

    @property
    def port(self) -> int:
        return int(self.listeners[0].socket.getsockname()[1])

    @property
    def accepted(self) -> int:
        return self.acceptor.accepted

    def statistics(self) -> dict[str, Any]:
        return {
            "connections": len(self.connections),
            **self.acceptor.statistics(),
            "tls_accepted": self.tls.tls_accepted,
            "calls_started": self.calls_started,
            "calls_failed": self.calls_failed,
            "calls_refused": self.calls_refused,
        }

    async def run(
        self, *, task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Bind, report the listeners through ``task_status``, serve until :meth:`shutdown`."""
        if not self.listeners:
            port, host = self.config.grpc_server_port, self.config.host
            self.listeners = await trio.open_tcp_listeners(port, host=host)
        try:
            with self._scope:
                async with trio.open_nursery() as connections:
                    task_status.started(self.listeners)
                    with self._accepting:
                        async with trio.open_nursery() as accepting:
                            for listener in self.listeners:
                                accepting.start_soon(self.acceptor.run, listener, self._serve, connections)
        finally:
            for listener in self.listeners:
                with trio.CancelScope(shield=True):
                    await listener.aclose()

    async def shutdown(self) -> None:
        """Stop accepting, tell every client to go away (GOAWAY); calls in flight may finish
        within ``shutdown_grace_s``, then every connection is closed."""
        self._accepting.cancel()
        for conn in list(self.connections.values()):
            with trio.CancelScope(shield=True):
                await conn.close()
        self._scope.deadline = trio.current_time() + self.config.shutdown_grace_s

    async def _serve(self, raw: trio.SocketStream) -> None:
        conn_id = next(self._ids)
        try:
            peer = join_address(*raw.socket.getpeername()[:2])
        except OSError:
            await raw.aclose()
            return
        async with raw:
            stream = await self._negotiate(raw, peer)
            if stream is None:
                return
            from gateway.transport.grpc.connection import Connection

            conn = Connection(self, stream, peer, conn_id)
            self.connections[conn_id] = conn
            try:
                await conn.run()
            except Exception as err:
                # A connection's own fault (a frame the HTTP/2 library rejects in a way not handled
                # above it) ends that connection, never the server.
                while isinstance(err, ExceptionGroup) and len(err.exceptions) == 1:
                    err = err.exceptions[0]  # the connection's nursery wraps what its task raised
                logger.error("grpc conn %d %s: closed on an unexpected error: %r", conn_id, peer, err)
            finally:
                del self.connections[conn_id]
                with trio.CancelScope(shield=True):
                    await trio.aclose_forcefully(stream)

    async def _negotiate(self, raw: trio.SocketStream, peer: str) -> trio.abc.Stream | None:
        """TLS or plaintext as ``tls.server.mode`` and the first byte say (gateway.transport.tls)."""
        with trio.move_on_after(self.config.handshake_timeout_s):
            try:
                first = await raw.receive_some(RECEIVE_SIZE)
            except trio.BrokenResourceError:
                return None
            if not first:
                return None
            negotiated = await self.tls.negotiate(raw, bytes(first), f"grpc {peer}")
            if negotiated is None:
                return None
            stream, rest = negotiated
            return PrefixedStream(stream, rest) if rest else stream
        logger.info(
            "grpc %s: no HTTP/2 preface or TLS handshake within %.0f s", peer, self.config.handshake_timeout_s
        )
        return None
