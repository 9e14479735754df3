"""Outbound connections: the broker's link to each NameServer, and a client for tests and tools.

An outbound connection is the same :class:`Connection` as an inbound one (reader, writer, opaque
table, a dispatcher for requests the peer sends us), started over a stream we opened.
"""

from __future__ import annotations

import itertools
import math
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from gateway.transport.address import split_address
from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection
from gateway.transport.dispatch import Dispatcher

_client_ids = itertools.count(1_000_000)


@asynccontextmanager
async def connect(
    address: str,
    dispatcher: Dispatcher | None = None,
    config: ServerConfig | None = None,
    connect_timeout_s: float = 3.0,
    tls: ssl.SSLContext | None = None,
) -> AsyncIterator[Connection]:
    """Open a connection to ``address`` and serve it until the block exits; over TLS with the
    context ``tls`` (``NettyRemotingClient`` with ``useTLS``: an SSL handler first in the pipeline).

    Raises ``OSError`` when the peer cannot be reached, or the TLS handshake does not complete,
    within ``connect_timeout_s``.
    """
    host, port = split_address(address)
    stream: trio.abc.Stream | None = None
    with trio.move_on_after(connect_timeout_s):
        stream = await trio.open_tcp_stream(host, port)
        if tls is not None:
            stream = await _handshake(stream, tls, address)
    if stream is None:
        raise OSError(f"connect to {address} timed out after {connect_timeout_s} s")
    conn = Connection(
        stream,
        next(_client_ids),
        dispatcher or Dispatcher("client"),
        config or ServerConfig(idle_timeout_s=math.inf),
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.serve)
        try:
            yield conn
        finally:
            conn.close()


async def _handshake(
    raw: trio.SocketStream, context: ssl.SSLContext, address: str
) -> trio.SSLStream[trio.SocketStream]:
    """The client side of the TLS handshake; raises OSError (the socket closed) when it fails."""
    stream = trio.SSLStream(raw, context)
    try:
        await stream.do_handshake()
    except BaseException as err:
        await trio.aclose_forcefully(raw)
        if isinstance(err, trio.BrokenResourceError):
            raise OSError(f"TLS handshake with {address} failed: {err.__cause__ or err}") from err
        raise
    return stream
