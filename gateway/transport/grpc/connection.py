"""One HTTP/2 connection of the gRPC server (the ``h2`` state machine) and its calls.

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
The ``h2`` object is only touched between awaits, and one writer task per connection owns the
socket's sending side: whatever ``h2`` queues (a call's answer, a WINDOW_UPDATE, a PING's ACK)
wakes it, and it sends all that is queued in one write, so the calls that finish in one pass
of the scheduler share a system call and no call waits for the socket. A sender of bulk data
waits while more than ``WRITE_HIGH_WATER`` bytes are unsent.
Imported by :mod:`gateway.transport.grpc.server` when the first connection arrives, so a broker
no gRPC client talks to does not load ``h2``.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Protocol

import h2.config
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import trio

from gateway.transport.grpc.call import Handler, ServerCall, StreamGone, unary
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.framing import encode_grpc_message, parse_timeout
from gateway.transport.grpc.h2_state import ServerH2
from gateway.transport.grpc.request import (
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
DEFAULT_WINDOW = 65535  # RFC 9113 6.9.2: every window's size before SETTINGS or WINDOW_UPDATE
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
    """One HTTP/2 connection: the reader loop and the calls it started."""

    def __init__(self, server: GrpcServer, stream: trio.abc.Stream, peer: str, conn_id: int) -> None:
        self.server = server
        self.config = server.config
        self.stream = stream
        self.peer = peer
        self.id = conn_id
        self.h2 = ServerH2(
            h2.config.H2Configuration(
                client_side=False,
                header_encoding="utf-8",
                validate_inbound_headers=False,
                # What goes out is built here: lower-case names, gRPC's fixed response headers
                # and a percent-encoded grpc-message; grpc-java does not check them either.
                validate_outbound_headers=False,
                normalize_outbound_headers=False,
            ),
            self._output_queued,
        )
        self.calls: dict[int, ServerCall] = {}
        self._window_changed = trio.Event()
        self._output = trio.Event()  # set when h2 has queued bytes for the writer
        self._written = trio.Event()  # set (and replaced) after each write
        self._writing = False
        self._closed = False
        self.nursery: trio.Nursery  # the calls' tasks; set when run() starts

    def _output_queued(self) -> None:
        self._output.set()

    async def _write_loop(self) -> None:
        """The only sender on the socket: all that ``h2`` has queued, in one write each time."""
        while True:
            await self._output.wait()
            self._output = trio.Event()
            data = self.h2.data_to_send()
            if data:
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
        while self.h2.pending_output > limit or (not limit and self._writing):
            if self._closed:
                raise StreamGone
            await self._written.wait()

    def acknowledge(self, stream_id: int, flow_length: int) -> None:
        if flow_length and not self._closed:
            with contextlib.suppress(h2.exceptions.StreamClosedError):
                self.h2.acknowledge_received_data(flow_length, stream_id)

    def queue_headers(self, stream_id: int, headers: list[tuple[str, str]], end: bool = False) -> None:
        try:
            self.h2.send_headers(stream_id, headers, end_stream=end)
        except h2.exceptions.ProtocolError as err:  # StreamClosedError is one
            raise StreamGone from err

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
            if flush and self.h2.pending_output > WRITE_HIGH_WATER:
                await self.drain(WRITE_HIGH_WATER)

    def _wake_senders(self) -> None:
        self._window_changed.set()
        self._window_changed = trio.Event()

    async def run(self) -> None:
        self.h2.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_CONCURRENT_STREAMS,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEADER_LIST_SIZE,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: FLOW_CONTROL_WINDOW,
            },
        )
        self.h2.initiate_connection()
        self.h2.increment_flow_control_window(FLOW_CONTROL_WINDOW - DEFAULT_WINDOW)
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
                        events = self.h2.receive_data(data)
                    except h2.exceptions.ProtocolError as err:
                        refusal_log.info(
                            ("protocol", type(err)),
                            "grpc conn %d %s: HTTP/2 protocol error, closing: %s", self.id, self.peer, err,
                        )  # fmt: skip
                        await self.drain()
                        break
                    except UnicodeDecodeError as err:
                        # h2 decodes header blocks as UTF-8 (header_encoding): gRPC metadata that
                        # is not text ends the connection like any other malformed frame.
                        refusal_log.info(
                            "utf-8", "grpc conn %d %s: header not UTF-8, closing: %s", self.id, self.peer, err
                        )
                        with contextlib.suppress(h2.exceptions.ProtocolError):
                            self.h2.close_connection(h2.errors.ErrorCodes.PROTOCOL_ERROR)
                        await self.drain()
                        break
                    for event in events:
                        self._on_event(event, nursery)
            except StreamGone:
                pass
            finally:
                self._closed = True
                for call in self.calls.values():
                    call.state.stream_reset()
                self._wake_senders()
                self._written.set()  # a drain() waiting for the writer ends with StreamGone
                nursery.cancel_scope.cancel()

    def _on_event(self, event: h2.events.Event, nursery: trio.Nursery) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self._start_call(event, nursery)
        elif isinstance(event, h2.events.DataReceived):
            call = self.calls.get(event.stream_id)
            if call is not None and not call.state.done:
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
                call.state.stream_reset()
                call.scope.cancel()
            self._wake_senders()
        elif isinstance(event, h2.events.WindowUpdated | h2.events.RemoteSettingsChanged):
            self._wake_senders()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._closed = True

    def _start_call(self, event: h2.events.RequestReceived, nursery: trio.Nursery) -> None:
        if len(self.calls) >= MAX_CONCURRENT_STREAMS:
            self.server.calls_refused += 1
            refusal_log.info(
                "streams", "grpc conn %d %s: stream %d refused: %d calls open",
                self.id, self.peer, event.stream_id, len(self.calls),
            )  # fmt: skip
            self._reset(event.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
            return
        pseudo: dict[str, str] = {}
        metadata: dict[str, str] = {}
        headers = [(str(name), str(value)) for name, value in event.headers or []]
        broken = malformed(headers)
        if broken is not None:
            self.server.calls_refused += 1
            refusal_log.info(
                "malformed", "grpc conn %d %s: stream %d reset: %s",
                self.id, self.peer, event.stream_id, broken,
            )  # fmt: skip
            self._reset(event.stream_id, h2.errors.ErrorCodes.PROTOCOL_ERROR)
            return
        for key, text in headers:
            if key.startswith(":"):
                pseudo[key] = text
            else:
                metadata[key] = text
        call = ServerCall(self, event.stream_id, pseudo.get(":path", ""), metadata)
        self.calls[event.stream_id] = call
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
            if unread and not self._closed:
                # Only the connection window matters now: the stream is closed.
                self.h2.acknowledge_received_data(unread, call.stream_id)
            self.h2.forget(call.stream_id)

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
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self.h2.end_stream(call.stream_id)
        if not call.state.inbound_ended:
            self._reset(call.stream_id)

    def _reset(self, stream_id: int, code: h2.errors.ErrorCodes = h2.errors.ErrorCodes.NO_ERROR) -> None:
        with contextlib.suppress(h2.exceptions.ProtocolError):  # the client closed its side meanwhile
            self.h2.reset_stream(stream_id, code)

    async def close(self) -> None:
        if not self._closed:
            self.h2.close_connection()
            with contextlib.suppress(StreamGone):
                await self.drain()
