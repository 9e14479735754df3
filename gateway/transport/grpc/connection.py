"""One HTTP/2 connection of the gRPC server and its calls.

Mirrors what grpc-java's Netty transport does for the Proxy: a request that is not gRPC gets the
HTTP error :mod:`gateway.transport.grpc.request` names (415, 405, 431, 404), an unknown path ends
the call with UNIMPLEMENTED, a message over ``grpcMaxInboundMessageSize`` with RESOURCE_EXHAUSTED,
a handler's :class:`GrpcError` with its code, any other exception with INTERNAL (logged once).
``grpc-timeout`` bounds a call (DEADLINE_EXCEEDED). A stream beyond ``MAX_CONCURRENT_STREAMS``
(advertised) is reset with REFUSED_STREAM and the connection goes on. Each call's lifecycle is a
:class:`~gateway.transport.grpc.call_state.CallState`; refusals are logged at most once per kind
per interval (:class:`~gateway.transport.log_limit.LogLimiter`).

Flow control is HTTP/2's own: inbound DATA is acknowledged as the handler consumes it, so a client
can get ahead of a slow handler only by the stream window; outbound DATA waits for window.
The HTTP/2 state (:class:`~gateway.transport.grpc.http2.ServerHttp2`, Trio-free) is only touched
between awaits, and one writer task per connection owns the
socket's sending side: whatever it queues (a call's answer, a WINDOW_UPDATE, a PING's ACK)
wakes it, and it sends all that is queued in one write, so the calls that finish in one pass
of the scheduler share a system call and no call waits for the socket. A sender of bulk data
waits while more than ``WRITE_HIGH_WATER`` bytes are unsent.
Imported by :mod:`gateway.transport.grpc.server` when the first connection arrives, so a broker
no gRPC client talks to does not load it.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Protocol

import trio

from gateway.transport.grpc.call import Handler, ServerCall, StreamGone, unary
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.framing import encode_grpc_message, parse_timeout
from gateway.transport.grpc.h2_frames import (
    INTERNAL_ERROR,
    NO_ERROR,
    PROTOCOL_ERROR,
    REFUSED_STREAM,
    Http2Error,
    StreamClosed,
)
from gateway.transport.grpc.http2 import ServerHttp2
from gateway.transport.grpc.request import (
    HEADER_LIST_GOAWAY_SIZE,
    MAX_HEADER_LIST_SIZE,
    RESPONSE_HEADERS,
    HttpRefusal,
    header_list_size,
    malformed,
    message_encoding,
    refusal,
)
from gateway.transport.grpc.status import GrpcError, StatusCode
from gateway.transport.log_limit import LogLimiter

__all__ = ["Connection", "GrpcServer", "Handler", "ServerCall", "StreamGone", "unary"]

logger = logging.getLogger(__name__)
#: Lines a client can cause (refusals, protocol errors): one per kind every 10 s.
refusal_log = LogLimiter(logger)

RECEIVE_SIZE = 65536
#: NettyServerBuilder's default flowControlWindow, which the Proxy keeps: each stream's window
#: (SETTINGS_INITIAL_WINDOW_SIZE) and the connection's, raised by a WINDOW_UPDATE at the start.
FLOW_CONTROL_WINDOW = 1024 * 1024
WRITE_HIGH_WATER = 256 * 1024  # unsent bytes beyond which a streaming sender waits for the socket
MAX_CONCURRENT_STREAMS = 1000  # advertised; a stream beyond it is refused, the connection kept


class GrpcServer(Protocol):
    """What a connection needs of its server (gateway.transport.grpc.server.GrpcServer)."""

    config: GrpcServerConfig
    calls_started: int
    calls_failed: int
    calls_refused: int

    @property
    def methods(self) -> dict[str, Handler]: ...


class Connection:
    """One HTTP/2 connection: the reader loop, the writer, and the calls it started; it is the
    :class:`~gateway.transport.grpc.http2.Http2Listener` of its HTTP/2 state."""

    def __init__(self, server: GrpcServer, stream: trio.abc.Stream, peer: str, conn_id: int) -> None:
        self.server = server
        self.config = server.config
        self.stream = stream
        self.peer = peer
        self.id = conn_id
        self.h2 = ServerHttp2(
            self,
            max_concurrent_streams=MAX_CONCURRENT_STREAMS,
            max_header_list_size=MAX_HEADER_LIST_SIZE,
            header_list_goaway_size=HEADER_LIST_GOAWAY_SIZE,
            window=FLOW_CONTROL_WINDOW,
        )
        self.calls: dict[int, ServerCall] = {}
        self._window_changed = trio.Event()
        self._output = trio.Event()  # set when frames are queued for the writer
        self._written = trio.Event()  # set (and replaced) after each write
        self._writing = False
        self._closed = False
        self.nursery: trio.Nursery  # the calls' tasks; set when run() starts

    async def _write_loop(self) -> None:
        """The only sender on the socket: all the HTTP/2 state has queued, in one write each time."""
        output = self.h2.output
        while True:
            await self._output.wait()
            self._output = trio.Event()
            if output:
                data = bytes(output)
                output.clear()
                self._writing = True
                try:
                    await self.stream.send_all(data)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    self._closed = True
                    self.nursery.cancel_scope.cancel()
                    return
                finally:
                    self._writing = False
            self._written.set()
            self._written = trio.Event()

    async def drain(self, limit: int = 0) -> None:
        """Wait until at most ``limit`` bytes are unsent (with 0, until the writer is idle).
        Raises StreamGone when the connection closes meanwhile."""
        while len(self.h2.output) > limit or (not limit and self._writing):
            if self._closed:
                raise StreamGone
            self._output.set()
            await self._written.wait()

    def acknowledge(self, stream_id: int, flow_length: int) -> None:
        if flow_length and not self._closed:
            self.h2.acknowledge(stream_id, flow_length)
            if self.h2.output:
                self._output.set()

    def queue_headers(self, stream_id: int, headers: list[tuple[str, str]], end: bool = False) -> None:
        try:
            self.h2.send_headers(stream_id, headers, end_stream=end)
        except StreamClosed as err:
            raise StreamGone from err
        self._output.set()

    async def send_data(self, stream_id: int, data: bytes, *, flush: bool = True) -> None:
        view = memoryview(data)
        h2 = self.h2
        while view:
            if self._closed:
                raise StreamGone
            try:
                window = h2.send_window_of(stream_id)
            except StreamClosed as err:
                raise StreamGone from err
            if window <= 0:
                await self._window_changed.wait()
                continue
            size = min(window, h2.peer_max_frame_size, len(view))
            h2.send_data(stream_id, view[:size])
            self._output.set()
            view = view[size:]
            if flush and len(h2.output) > WRITE_HIGH_WATER:
                await self.drain(WRITE_HIGH_WATER)

    def _wake_senders(self) -> None:
        self._window_changed.set()
        self._window_changed = trio.Event()

    async def run(self) -> None:
        self._output.set()  # our SETTINGS and the connection window's WINDOW_UPDATE
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            nursery.start_soon(self._write_loop)
            try:
                while not self._closed:
                    try:
                        data = await self.stream.receive_some(RECEIVE_SIZE)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        break
                    if not data:
                        break
                    try:
                        self.h2.receive(data)
                    except Http2Error as err:
                        refusal_log.info(
                            ("protocol", err.error_code),
                            "grpc conn %d %s: HTTP/2 protocol error %d, closing: %s",
                            self.id, self.peer, err.error_code, err,
                        )  # fmt: skip
                        await self.drain()
                        break
                    if self.h2.output:
                        self._output.set()
            except StreamGone:
                pass
            finally:
                self._closed = True
                for call in self.calls.values():
                    call.state.stream_reset()
                self._wake_senders()
                self._written.set()  # a drain() waiting for the writer ends with StreamGone
                nursery.cancel_scope.cancel()

    # -- Http2Listener: what the client's frames did -----------------------------------------

    def on_request(self, stream_id: int, headers: list[tuple[str, str]]) -> None:
        self._start_call(stream_id, headers, self.nursery)

    def on_data(self, stream_id: int, data: bytes, flow_length: int) -> None:
        call = self.calls.get(stream_id)
        if call is not None and not call.state.done:
            call.feed(data, flow_length)
        elif flow_length:
            # Nobody reads it: give the window back so other streams keep flowing.
            self.h2.acknowledge(stream_id, flow_length)

    def on_end(self, stream_id: int) -> None:
        call = self.calls.get(stream_id)
        if call is not None:
            call.end_inbound()

    def on_reset(self, stream_id: int) -> None:
        call = self.calls.pop(stream_id, None)
        if call is not None:
            call.state.stream_reset()
            call.scope.cancel()
        self._wake_senders()

    def on_window(self) -> None:
        self._wake_senders()

    def on_goaway(self) -> None:
        self._closed = True

    def _start_call(self, stream_id: int, headers: list[tuple[str, str]], nursery: trio.Nursery) -> None:
        if len(self.calls) >= MAX_CONCURRENT_STREAMS:
            self.server.calls_refused += 1
            refusal_log.info(
                "streams", "grpc conn %d %s: stream %d refused: %d calls open",
                self.id, self.peer, stream_id, len(self.calls),
            )  # fmt: skip
            self.h2.reset(stream_id, REFUSED_STREAM)
            return
        broken = malformed(headers)
        if broken is not None:
            self.server.calls_refused += 1
            refusal_log.info(
                "malformed", "grpc conn %d %s: stream %d reset: %s", self.id, self.peer, stream_id, broken
            )
            self.h2.reset(stream_id, PROTOCOL_ERROR)
            return
        pseudo: dict[str, str] = {}
        metadata: dict[str, str] = {}
        for key, text in headers:
            if key[0] == ":":
                pseudo[key] = text
            else:
                metadata[key] = text
        call = ServerCall(self, stream_id, pseudo.get(":path", ""), metadata)
        self.calls[stream_id] = call
        nursery.start_soon(self._run_call, call, refusal(pseudo, metadata, header_list_size(headers)))

    async def _run_call(self, call: ServerCall, refused: HttpRefusal | None) -> None:
        server = self.server
        server.calls_started += 1
        try:
            if refused is not None:
                server.calls_refused += 1
                refusal_log.info(
                    ("http", refused.http_status), "grpc conn %d %s: stream %d refused with HTTP %d: %s",
                    self.id, self.peer, call.stream_id, refused.http_status, refused.message,
                )  # fmt: skip
                await self._reject(call, refused)
                return
            code, message = await self._handle(call)
            await self._finish(call, code, message)
        except StreamGone:
            pass
        finally:
            self.calls.pop(call.stream_id, None)
            unread = call.discard_inbound()
            if not self._closed:
                if unread:
                    # Only the connection window matters now: the stream is closed.
                    self.h2.acknowledge(call.stream_id, unread)
                # A call that could not answer (its handler gone) must not leave its stream open.
                self.h2.reset(call.stream_id, INTERNAL_ERROR)
                if self.h2.output:
                    self._output.set()

    async def _handle(self, call: ServerCall) -> tuple[StatusCode, str]:
        handler = self.server.methods.get(call.path)
        try:
            if handler is None:
                raise GrpcError(StatusCode.UNIMPLEMENTED, f"Method not found: {call.path.lstrip('/')}")
            message_encoding(call.metadata)
            timeout = call.metadata.get("grpc-timeout")
            if timeout is not None:
                call.scope.deadline = trio.current_time() + parse_timeout(timeout)
            with call.scope:
                await handler(call)
            if call.scope.cancelled_caught:
                if call.state.reset:
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
        if call.state.done:
            raise StreamGone
        if call.state.send_trailers():  # "Trailers-Only": one HEADERS frame
            trailers = [*RESPONSE_HEADERS, *trailers]
        self.queue_headers(call.stream_id, trailers, end=True)
        # No longer counted against MAX_CONCURRENT_STREAMS: the client may open the next stream as
        # soon as it reads the trailers, which can be before this task runs again.
        self.calls.pop(call.stream_id, None)
        if not call.state.inbound_ended:
            # We are done; the client need not send the rest (grpc-java's servers do the same).
            self._reset(call.stream_id)

    async def _reject(self, call: ServerCall, refused: HttpRefusal) -> None:
        """NettyServerHandler.respondWithHttpError: the HTTP status with the gRPC status, the
        message as a text body; then the stream is reset, as the request is not read."""
        if call.state.done:  # the client reset the stream before its refusal could go out
            raise StreamGone
        call.state.refuse()
        self.queue_headers(call.stream_id, refused.headers())
        await self.send_data(call.stream_id, refused.body, flush=False)
        with contextlib.suppress(StreamClosed):
            self.h2.end_stream(call.stream_id)
        if not call.state.inbound_ended:
            self._reset(call.stream_id)

    def _reset(self, stream_id: int, code: int = NO_ERROR) -> None:
        self.h2.reset(stream_id, code)  # nothing if the client closed its side meanwhile
        self._output.set()

    async def close(self) -> None:
        if not self._closed:
            self.h2.goaway()
            self._output.set()
            with contextlib.suppress(StreamGone):
                await self.drain()
