"""Outbound connections: the broker's link to each NameServer, and a client for tests and tools.

An outbound connection is the same :class:`Connection` as an inbound one (reader, writer, opaque
table, a dispatcher for requests the peer sends us), started over a stream we opened.
"""

from __future__ import annotations

import itertools
import math
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
) -> AsyncIterator[Connection]:
    """Open a connection to ``address`` and serve it until the block exits.

    Raises ``OSError`` when the peer cannot be reached within ``connect_timeout_s``.
    """
    host, port = split_address(address)
    stream: trio.SocketStream | None = None
    with trio.move_on_after(connect_timeout_s):
        stream = await trio.open_tcp_stream(host, port)
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
