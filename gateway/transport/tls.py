"""TLS and plaintext on one port: the first byte of a connection decides, as ``tls.server.mode`` says.

Mirrors ``NettyRemotingServer.TlsModeHandler`` for the remoting ports (NameServer, broker, broker
VIP) and the Proxy's ``ProxyAndTlsProtocolNegotiator.TlsModeHandler`` for the gRPC port, one
decision table for both (:func:`decide`):

=================  ==============================  ==============================
mode               first byte 0x16 (ClientHello)   any other first byte
=================  ==============================  ==============================
``disabled``       remoting: log, close            plaintext
                   gRPC: plaintext (handshake fails on the client)
``permissive``     TLS                             plaintext
``enforcing``      TLS                             remoting: log, close
                                                   gRPC: TLS (the handshake fails)
=================  ==============================  ==============================

The server certificate is made or loaded when the first TLS client arrives
(:class:`LazyServerContext`), not at start as Java does: loading ``cryptography`` adds about
15 MiB to a process that no TLS client may ever talk to. A failed handshake (garbage after 0x16,
a client certificate the CA does not vouch for) costs one log line and the connection, as in
Netty, where ``SslHandler`` fires an exception that ``NettyConnectManageHandler`` logs and closes on.
"""

from __future__ import annotations

import enum
import logging
import ssl

import trio

from gateway.transport.tls_config import ServerCertificate, TlsMode, server_context

logger = logging.getLogger(__name__)

TLS_HANDSHAKE = 0x16  # TLS record content type "handshake": a ClientHello starts with it
HANDSHAKE_TIMEOUT_S = 10.0  # Netty SslHandler's default handshakeTimeoutMillis


class Decision(enum.Enum):
    PLAINTEXT = "plaintext"
    TLS = "tls"
    CLOSE_TLS_REFUSED = "tls refused"  # disabled mode, a TLS client (remoting)
    CLOSE_PLAINTEXT_REFUSED = "plaintext refused"  # enforcing mode, a plaintext client (remoting)


def decide(first_byte: int, mode: TlsMode, *, grpc: bool = False) -> Decision:
    """What a server does with a connection whose first byte is ``first_byte``; see the table."""
    hello = first_byte == TLS_HANDSHAKE
    if mode is TlsMode.PERMISSIVE:
        return Decision.TLS if hello else Decision.PLAINTEXT
    if mode is TlsMode.ENFORCING:
        return Decision.TLS if hello or grpc else Decision.CLOSE_PLAINTEXT_REFUSED
    return Decision.CLOSE_TLS_REFUSED if hello and not grpc else Decision.PLAINTEXT


class PrefixedStream(trio.abc.Stream):
    """A stream whose first bytes, already read to sniff the protocol, are given back first."""

    def __init__(self, stream: trio.abc.Stream, prefix: bytes) -> None:
        self.transport_stream = stream
        self._prefix = prefix

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._prefix:
            size = len(self._prefix) if max_bytes is None else max_bytes
            data, self._prefix = self._prefix[:size], self._prefix[size:]
            return bytes(data)
        return bytes(await self.transport_stream.receive_some(max_bytes))

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.transport_stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.transport_stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        if isinstance(self.transport_stream, trio.abc.HalfCloseableStream):
            await self.transport_stream.send_eof()

    async def aclose(self) -> None:
        await self.transport_stream.aclose()


class LazyServerContext:
    """The server's TLS context, made on first use (in a worker thread: making a certificate
    takes milliseconds, loading ``cryptography`` tens of them), then kept."""

    def __init__(self, certificate: ServerCertificate) -> None:
        self.certificate = certificate
        self.enabled = certificate.offered
        self._context: ssl.SSLContext | None = None
        self._lock = trio.Lock()

    async def get(self) -> ssl.SSLContext | None:
        """None when TLS cannot be offered; raises OSError/ssl.SSLError for unusable files."""
        if not self.enabled:
            return None
        async with self._lock:
            if self._context is None:
                self._context = await trio.to_thread.run_sync(server_context, self.certificate)
        return self._context


class ServerTls:
    """What a server port needs to sniff and serve TLS: the mode and the (lazy) context.

    One instance may serve several ports (the NameServer, the broker and its VIP port share
    ``tls.server.*`` and hence one certificate). Counts what it decided, for statistics.
    """

    def __init__(
        self,
        mode: TlsMode,
        context: LazyServerContext | ssl.SSLContext | None,
        *,
        grpc: bool = False,
        handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S,
    ) -> None:
        self.mode = mode
        self.context = context
        self.grpc = grpc
        self.handshake_timeout_s = handshake_timeout_s
        self.tls_accepted = 0
        self.refused = 0
        self.handshake_failures = 0

    async def negotiate(
        self, raw: trio.abc.Stream, first: bytes, name: str
    ) -> tuple[trio.abc.Stream, bytes] | None:
        """What to serve after the first bytes ``first`` (non-empty) were read from ``raw``: a TLS
        stream after a completed handshake and no bytes, or ``raw`` and ``first``, the bytes its
        reader is to take first (no wrapper on the plaintext path, the hot one); None when the
        connection is to be closed (logged once here)."""
        decision = decide(first[0], self.mode, grpc=self.grpc)
        if decision is Decision.PLAINTEXT:
            return raw, first
        if decision is Decision.CLOSE_TLS_REFUSED:
            self.refused += 1
            logger.warning("%s: closing, a TLS client while tls.server.mode is disabled", name)
            return None
        if decision is Decision.CLOSE_PLAINTEXT_REFUSED:
            self.refused += 1
            logger.warning("%s: closing, a plaintext client while tls.server.mode is enforcing", name)
            return None
        try:
            context = (
                await self.context.get() if isinstance(self.context, LazyServerContext) else self.context
            )
        except (OSError, ssl.SSLError) as err:  # tried again with the next TLS client
            self.refused += 1
            logger.error("%s: closing a TLS client, the certificate is unusable: %s", name, err)
            return None
        if context is None:
            self.refused += 1
            logger.error("%s: closing a TLS client: no certificate (tls.server.certPath/keyPath)", name)
            return None
        tls = trio.SSLStream(PrefixedStream(raw, first), context, server_side=True)
        with trio.move_on_after(self.handshake_timeout_s):
            try:
                await tls.do_handshake()
            except trio.BrokenResourceError as err:
                self.handshake_failures += 1
                logger.info("%s: closing, TLS handshake failed: %s", name, err.__cause__ or err)
                return None
            self.tls_accepted += 1
            return tls, b""
        self.handshake_failures += 1
        logger.info("%s: closing, TLS handshake not done within %.0f s", name, self.handshake_timeout_s)
        return None

    def statistics(self) -> dict[str, object]:
        return {
            "mode": self.mode.value,
            "tls_accepted": self.tls_accepted,
            "refused": self.refused,
            "handshake_failures": self.handshake_failures,
        }
