"""One HTTP/2 connection of the gRPC server (the ``h2`` state machine) and its calls.

Mirrors what grpc-java's Netty transport does for the Proxy: an unknown path ends the call with
UNIMPLEMENTED, a request that is not gRPC (content-type) with HTTP 415, a message over
``grpcMaxInboundMessageSize`` with RESOURCE_EXHAUSTED, a handler's :class:`GrpcError` with its
code, any other exception with INTERNAL (logged once). ``grpc-timeout`` bounds a call
(DEADLINE_EXCEEDED).

Flow control is HTTP/2's own: inbound DATA is acknowledged as the handler consumes it, so a client
can get ahead of a slow handler only by the stream window; outbound DATA waits for window.
One lock serialises writes to the socket; the ``h2`` object is only touched between awaits.
Imported by :mod:`gateway.transport.grpc.server` when the first connection arrives, so a broker
no gRPC client talks to does not load ``h2``.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import trio

from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.framing import (
    MessageDecoder,
    encode_grpc_message,
    encode_message,
    parse_timeout,
)
from gateway.transport.grpc.status import GrpcError, StatusCode

logger = logging.getLogger(__name__)

Handler = Callable[["ServerCall"], Awaitable[None]]
RECEIVE_SIZE = 65536
POST_QUEUE_SIZE = 1024  # messages posted to a call from outside its handler, not yet sent
_RESPONSE_HEADERS = [(":status", "200"), ("content-type", "application/grpc")]


class GrpcServer(Protocol):
    """What a connection needs of its server (gateway.transport.grpc.server.GrpcServer)."""

    config: GrpcServerConfig
    calls_started: int
    calls_failed: int

    @property
    def methods(self) -> dict[str, Handler]: ...


class StreamGone(Exception):
    """The client reset the stream or the connection closed under a call."""


class ServerCall:
    """One RPC: its request headers, its inbound messages, its outbound messages and status."""

    def __init__(self, conn: Connection, stream_id: int, path: str, metadata: dict[str, str]) -> None:
        self._conn = conn
        self.stream_id = stream_id
        self.path = path
        #: Request headers but the pseudo-headers, lower-case names (x-mq-client-id, ...).
        self.metadata = metadata
        self.peer = conn.peer
        self._inbound_send, self._inbound = trio.open_memory_channel[tuple[bytes, int] | None](math.inf)
        self._decoder = MessageDecoder(conn.config.grpc_max_inbound_message_size)
        self._messages: deque[bytes] = deque()
        self._ended = False
        self.headers_sent = False
        self.closed = False  # trailers sent or stream reset
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
            await self._conn.acknowledge(self.stream_id, flow_length)
            self._messages.extend(self._decoder.feed(data))
        return self._messages.popleft()

    async def send(self, payload: bytes, *, flush: bool = True) -> None:
        """Send one response message (the response headers first). Raises StreamGone.

        ``flush=False`` leaves the bytes for the next write (a unary answer goes out with its
        trailers, one socket write per call).
        """
        if not self.headers_sent:
            self._conn.queue_headers(self.stream_id, _RESPONSE_HEADERS)
            self.headers_sent = True
        await self._conn.send_data(self.stream_id, encode_message(payload), flush=flush)

    def post(self, payload: bytes) -> bool:
        """Queue a response message from outside the handler (a server-initiated command on a
        bidirectional stream); False when the call is over or ``POST_QUEUE_SIZE`` are waiting."""
        if self.closed:
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
                if self.closed:
                    return
                try:
                    await self.send(payload)
                except StreamGone:
                    return

    def feed(self, data: bytes, flow_length: int) -> None:
        self._inbound_send.send_nowait((data, flow_length))

    def end_inbound(self) -> None:
        self._inbound_send.send_nowait(None)

    @property
    def inbound_ended(self) -> bool:
        return self._ended

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


class Connection:
    """One HTTP/2 connection: the reader loop and the calls it started."""

    def __init__(self, server: GrpcServer, stream: trio.abc.Stream, peer: str, conn_id: int) -> None:
        self.server = server
        self.config = server.config
        self.stream = stream
        self.peer = peer
        self.id = conn_id
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        )
        self.calls: dict[int, ServerCall] = {}
        self._send_lock = trio.Lock()
        self._window_changed = trio.Event()
        self._closed = False
        self.nursery: trio.Nursery  # the calls' tasks; set when run() starts

    async def flush(self) -> None:
        async with self._send_lock:
            data = self.h2.data_to_send()
            if data:
                try:
                    await self.stream.send_all(data)
                except (trio.BrokenResourceError, trio.ClosedResourceError) as err:
                    self._closed = True
                    raise StreamGone from err

    async def acknowledge(self, stream_id: int, flow_length: int) -> None:
        if flow_length and not self._closed:
            try:
                self.h2.acknowledge_received_data(flow_length, stream_id)
            except h2.exceptions.StreamClosedError:
                return
            await self.flush()

    def queue_headers(self, stream_id: int, headers: list[tuple[str, str]], end: bool = False) -> None:
        try:
            self.h2.send_headers(stream_id, headers, end_stream=end)
        except h2.exceptions.ProtocolError as err:  # StreamClosedError is one
            raise StreamGone from err

    async def send_headers(self, stream_id: int, headers: list[tuple[str, str]], end: bool = False) -> None:
        self.queue_headers(stream_id, headers, end)
        await self.flush()

    async def send_data(self, stream_id: int, data: bytes, *, flush: bool = True) -> None:
        view = memoryview(data)
        while view:
            if self._closed:
                raise StreamGone
            try:
                window = self.h2.local_flow_control_window(stream_id)
            except h2.exceptions.ProtocolError as err:
                raise StreamGone from err
            if window <= 0:
                await self._window_changed.wait()
                continue
            size = min(window, self.h2.max_outbound_frame_size, len(view))
            try:
                self.h2.send_data(stream_id, view[:size].tobytes())
            except h2.exceptions.ProtocolError as err:
                raise StreamGone from err
            view = view[size:]
            if view or flush:
                await self.flush()

    def _wake_senders(self) -> None:
        self._window_changed.set()
        self._window_changed = trio.Event()

    async def run(self) -> None:
        self.h2.local_settings = h2.settings.Settings(
            client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000}
        )
        self.h2.initiate_connection()
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            try:
                await self.flush()
                while not self._closed:
                    try:
                        data = await self.stream.receive_some(RECEIVE_SIZE)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        break
                    if not data:
                        break
                    try:
                        events = self.h2.receive_data(data)
                    except h2.exceptions.ProtocolError as err:
                        logger.info(
                            "grpc conn %d %s: HTTP/2 protocol error, closing: %s", self.id, self.peer, err
                        )
                        await self.flush()
                        break
                    except UnicodeDecodeError as err:
                        # h2 decodes header blocks as UTF-8 (header_encoding): gRPC metadata that
                        # is not text ends the connection like any other malformed frame.
                        logger.info(
                            "grpc conn %d %s: header not UTF-8, closing: %s", self.id, self.peer, err
                        )
                        with contextlib.suppress(h2.exceptions.ProtocolError):
                            self.h2.close_connection(h2.errors.ErrorCodes.PROTOCOL_ERROR)
                        await self.flush()
                        break
                    for event in events:
                        self._on_event(event, nursery)
                    await self.flush()
            except StreamGone:
                pass
            finally:
                self._closed = True
                self._wake_senders()
                nursery.cancel_scope.cancel()

    def _on_event(self, event: h2.events.Event, nursery: trio.Nursery) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self._start_call(event, nursery)
        elif isinstance(event, h2.events.DataReceived):
            call = self.calls.get(event.stream_id)
            if call is not None and not call.closed:
                call.feed(event.data, event.flow_controlled_length)
            elif event.flow_controlled_length:
                # Nobody reads it: give the window back so other streams keep flowing.
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            call = self.calls.get(event.stream_id)
            if call is not None:
                call.end_inbound()
        elif isinstance(event, h2.events.StreamReset):
            call = self.calls.pop(event.stream_id, None)
            if call is not None:
                call.closed = True
                call.scope.cancel()
            self._wake_senders()
        elif isinstance(event, h2.events.WindowUpdated | h2.events.RemoteSettingsChanged):
            self._wake_senders()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._closed = True

    def _start_call(self, event: h2.events.RequestReceived, nursery: trio.Nursery) -> None:
        pseudo: dict[str, str] = {}
        metadata: dict[str, str] = {}
        for name, value in event.headers or []:
            key, text = str(name), str(value)
            if key.startswith(":"):
                pseudo[key] = text
            else:
                metadata[key] = text
        call = ServerCall(self, event.stream_id, pseudo.get(":path", ""), metadata)
        self.calls[event.stream_id] = call
        nursery.start_soon(self._run_call, call, pseudo)

    async def _run_call(self, call: ServerCall, pseudo: dict[str, str]) -> None:
        server = self.server
        server.calls_started += 1
        try:
            if pseudo.get(":method") != "POST":
                await self._reject(call, "405", f"HTTP method {pseudo.get(':method')} is not POST")
                return
            if not call.metadata.get("content-type", "").startswith("application/grpc"):
                await self._reject(
                    call, "415", f"Content-Type {call.metadata.get('content-type')!r} is not gRPC"
                )
                return
            code, message = await self._handle(call)
            await self._finish(call, code, message)
        except StreamGone:
            pass
        finally:
            self.calls.pop(call.stream_id, None)
            unread = call.discard_inbound()
            if unread and not self._closed:
                # Only the connection window matters now: the stream is closed.
                self.h2.acknowledge_received_data(unread, call.stream_id)
                with contextlib.suppress(StreamGone):
                    await self.flush()

    async def _handle(self, call: ServerCall) -> tuple[StatusCode, str]:
        handler = self.server.methods.get(call.path)
        try:
            if handler is None:
                raise GrpcError(StatusCode.UNIMPLEMENTED, f"Method not found: {call.path.lstrip('/')}")
            encoding = call.metadata.get("grpc-encoding", "identity")
            if encoding != "identity":
                raise GrpcError(StatusCode.UNIMPLEMENTED, f"grpc-encoding {encoding} is not supported")
            timeout = call.metadata.get("grpc-timeout")
            if timeout is not None:
                call.scope.deadline = trio.current_time() + parse_timeout(timeout)
            with call.scope:
                await handler(call)
            if call.scope.cancelled_caught:
                if call.closed:
                    raise StreamGone
                raise GrpcError(StatusCode.DEADLINE_EXCEEDED, "deadline exceeded")
        except GrpcError as err:
            self.server.calls_failed += 1
            return err.code, err.message
        except StreamGone:
            raise
        except Exception:
            self.server.calls_failed += 1
            logger.exception("grpc conn %d %s: %s failed", self.id, self.peer, call.path)
            return StatusCode.INTERNAL, "internal error"
        return StatusCode.OK, ""

    async def _finish(self, call: ServerCall, code: StatusCode, message: str) -> None:
        trailers = [("grpc-status", str(int(code)))]
        if message:
            trailers.append(("grpc-message", encode_grpc_message(message)))
        if not call.headers_sent:  # "Trailers-Only": one HEADERS frame
            trailers = [(":status", "200"), ("content-type", "application/grpc"), *trailers]
        call.closed = True
        await self.send_headers(call.stream_id, trailers, end=True)
        if not call.inbound_ended:
            # We are done; the client need not send the rest (grpc-java's servers do the same).
            self._reset(call.stream_id)
            await self.flush()

    async def _reject(self, call: ServerCall, http_status: str, message: str) -> None:
        call.closed = True
        headers = [
            (":status", http_status),
            ("content-type", "application/grpc"),
            ("grpc-status", str(int(StatusCode.INTERNAL))),
            ("grpc-message", encode_grpc_message(message)),
        ]
        await self.send_headers(call.stream_id, headers, end=True)
        self._reset(call.stream_id)
        await self.flush()

    def _reset(self, stream_id: int) -> None:
        with contextlib.suppress(h2.exceptions.ProtocolError):  # the client closed its side meanwhile
            self.h2.reset_stream(stream_id, h2.errors.ErrorCodes.NO_ERROR)

    async def close(self) -> None:
        if not self._closed:
            self.h2.close_connection()
            with contextlib.suppress(StreamGone):
                await self.flush()


