"""One gRPC call on the server: its request headers, inbound messages, outbound messages.

A handler gets a :class:`ServerCall`; the call's lifecycle is its
:class:`~gateway.transport.grpc.call_state.CallState`, which only the call and its connection
(:mod:`gateway.transport.grpc.connection`, which owns the socket and the HTTP/2 state) advance
through its methods. :func:`unary` turns ``fn(request, call) -> response`` into a handler.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol

import trio

from gateway.transport.grpc.call_state import CallState
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.framing import MessageDecoder, encode_message
from gateway.transport.grpc.request import ENCODINGS, RESPONSE_HEADERS
from gateway.transport.grpc.status import GrpcError, StatusCode

Handler = Callable[["ServerCall"], Awaitable[None]]
POST_QUEUE_SIZE = 1024  # messages posted to a call from outside its handler, not yet sent


class CallConnection(Protocol):
    """What a call needs of its connection (gateway.transport.grpc.connection.Connection)."""

    id: int
    peer: str
    config: GrpcServerConfig
    nursery: trio.Nursery

    def acknowledge(self, stream_id: int, flow_length: int) -> None: ...

    def queue_headers(self, stream_id: int, headers: list[tuple[str, str]], end: bool = False) -> None: ...

    async def send_data(self, stream_id: int, data: bytes, *, flush: bool = True) -> None: ...


class StreamGone(Exception):
    """The client reset the stream or the connection closed under a call."""


class ServerCall:
    """One RPC: its request headers, its inbound messages, its outbound messages and status."""

    def __init__(self, conn: CallConnection, stream_id: int, path: str, metadata: dict[str, str]) -> None:
        self._conn = conn
        self.stream_id = stream_id
        self.path = path
        #: Request headers but the pseudo-headers, lower-case names (x-mq-client-id, ...).
        self.metadata = metadata
        self.peer = conn.peer
        #: The number of the connection the call came on (the server's connection ids).
        self.connection_id = conn.id
        #: What has been sent and received; only its own methods change it.
        self.state = CallState(stream_id)
        self._inbound_send, self._inbound = trio.open_memory_channel[tuple[bytes, int] | None](math.inf)
        encoding = metadata.get("grpc-encoding", "identity")  # one not in ENCODINGS is refused
        self._decoder = MessageDecoder(
            conn.config.grpc_max_inbound_message_size, encoding if encoding in ENCODINGS else "identity"
        )
        self._messages: deque[bytes] = deque()
        self._ended = False  # the handler has read up to the client's END_STREAM
        self.scope = trio.CancelScope()
        self._outbox: trio.MemorySendChannel[bytes] | None = None

    async def receive(self) -> bytes | None:
        """The next request message, or None once the client half-closed.

        Raises GrpcError (oversized, compressed or truncated message), StreamGone.
        """
        while not self._messages:
            if self._ended:
                if self._decoder.pending:
                    raise GrpcError(StatusCode.INTERNAL, "stream ended inside a message")
                return None
            item = await self._inbound.receive()
            if item is None:
                self._ended = True
                continue
            data, flow_length = item
            # Acknowledged first: a message the decoder refuses must not shrink the connection window.
            self._conn.acknowledge(self.stream_id, flow_length)
            self._messages.extend(self._decoder.feed(data))
        return self._messages.popleft()

    async def send(self, payload: bytes, *, flush: bool = True) -> None:
        """Queue one response message (the response headers first) for the connection's writer.
        Raises StreamGone.

        With ``flush`` (a streaming sender) it waits while the connection has more than
        ``WRITE_HIGH_WATER`` bytes unsent; ``flush=False`` never waits for the socket (a unary
        answer, which its trailers follow at once).
        """
        if not self.state.can_send:
            raise StreamGone
        if self.state.send_headers():
            self._conn.queue_headers(self.stream_id, RESPONSE_HEADERS)
        await self._conn.send_data(self.stream_id, encode_message(payload), flush=flush)

    @property
    def cancelled(self) -> bool:
        """The stream was reset (by the client, or its connection ended) before the call ended."""
        return self.state.reset

    def post(self, payload: bytes) -> bool:
        """Queue a response message from outside the handler (a server-initiated command on a
        bidirectional stream); False when the call is over or ``POST_QUEUE_SIZE`` are waiting."""
        if self.state.done:
            return False
        if self._outbox is None:
            self._outbox, outbox = trio.open_memory_channel[bytes](POST_QUEUE_SIZE)
            self._conn.nursery.start_soon(self._drain_outbox, outbox)
        try:
            self._outbox.send_nowait(payload)
        except (trio.WouldBlock, trio.ClosedResourceError):
            return False
        return True

    async def _drain_outbox(self, outbox: trio.MemoryReceiveChannel[bytes]) -> None:
        async with outbox:
            async for payload in outbox:
                if self.state.done:
                    return
                try:
                    await self.send(payload)
                except StreamGone:
                    return

    def feed(self, data: bytes, flow_length: int) -> None:
        self._inbound_send.send_nowait((data, flow_length))

    def end_inbound(self) -> None:
        self.state.end_inbound()
        self._inbound_send.send_nowait(None)

    def discard_inbound(self) -> int:
        """Drop what the handler left unread; returns its flow-controlled length to acknowledge."""
        length = 0
        while True:
            try:
                item = self._inbound.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                return length
            if item is None:
                self._ended = True
            else:
                length += item[1]


def unary(fn: Callable[[bytes, ServerCall], Awaitable[bytes]]) -> Handler:
    """A handler for a unary method from ``fn(request, call) -> response``."""

    async def handle(call: ServerCall) -> None:
        request = await call.receive()
        if request is None:
            raise GrpcError(StatusCode.INTERNAL, "no request message")
        if await call.receive() is not None:
            raise GrpcError(StatusCode.INTERNAL, "more than one request message on a unary call")
        await call.send(await fn(request, call), flush=False)

    return handle
