"""One client connection: a reader task, a writer task, handlers, and calls to the peer.

Per connection (style.md, after trio's own servers and hypercorn):

* the **reader** receives bytes, feeds the :class:`codec.frame.FrameDecoder` and starts a handler
  task per request (at most ``max_in_flight`` at once: when that many are running the reader stops
  reading, which pushes back on the client through TCP);
* the **writer** alone calls ``send_all``, draining a small memory channel; a client that does
  not read fills the channel, which blocks the handlers, which stops the reader;
* responses to requests *we* sent (``invoke``) are matched by ``opaque``; every pending call fails
  with :class:`PeerClosedError` when the connection dies.

The connection closes on a malformed frame, on ``idle_timeout_s`` of inbound silence, when a
partial frame does not complete within ``idle_timeout_s``, and when a write stalls for
``write_timeout_s``. Trio's exception types never leave this module.
"""

from __future__ import annotations

import itertools
import logging

import trio

from codec.command import RemotingCommand
from codec.errors import FrameError, RocketMQError
from codec.frame import FrameDecoder, encode_frame
from gateway.config import ServerConfig
from gateway.dispatch import ConnectionInfo, Dispatcher, RequestContext

logger = logging.getLogger(__name__)

_MAX_COALESCED_FRAMES = 256
_RECEIVE_SIZE = 64 * 1024
_opaques = itertools.count(1)  # our own request ids, unique across connections


class PeerClosedError(RocketMQError):
    """The connection closed before the peer answered."""


class PeerTimeoutError(RocketMQError):
    """The peer did not answer in time."""


class _Pending:
    __slots__ = ("event", "response")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.response: RemotingCommand | None = None


class Connection:
    """Serves one stream until it closes; see the module docstring."""

    def __init__(
        self, stream: trio.SocketStream, conn_id: int, dispatcher: Dispatcher, config: ServerConfig
    ) -> None:
        self.stream = stream
        self.dispatcher = dispatcher
        self.config = config
        self.info = ConnectionInfo(conn_id, _addr(stream, remote=True), _addr(stream, remote=False), self)
        self._decoder = FrameDecoder(config.max_frame_size)
        self._send, self._outbox = trio.open_memory_channel[bytes](config.send_queue_size)
        self._limiter = trio.CapacityLimiter(config.max_in_flight)
        self._pending: dict[int, _Pending] = {}
        self._cancel: trio.CancelScope | None = None
        self._reader_scope = trio.CancelScope()
        self._draining = False
        self._drained = trio.Event()
        self._closed = False
        self._closed_event = trio.Event()
        self.frames_in = 0
        self.frames_out = 0

    def __repr__(self) -> str:
        return repr(self.info)

    async def serve(self) -> None:
        """Run until the stream closes or the connection is closed; never raises for I/O errors."""
        try:
            async with trio.open_nursery() as nursery:
                self._cancel = nursery.cancel_scope
                nursery.start_soon(self._writer)
                with self._reader_scope:
                    await self._reader(nursery)
                # Reading stopped (EOF, error or shutdown): let in-flight handlers answer, let the
                # writer drain what they queued, then leave; all of it within the grace period.
                nursery.cancel_scope.deadline = trio.current_time() + self.config.shutdown_grace_s
                self._draining = True
                if self._limiter.borrowed_tokens:
                    await self._drained.wait()
                await self._send.aclose()
        finally:
            self._closed = True
            self._closed_event.set()
            for pending in self._pending.values():
                pending.event.set()
            self._pending.clear()
            with trio.move_on_after(1) as scope:
                scope.shield = True
                await trio.aclose_forcefully(self.stream)

    @property
    def closed(self) -> bool:
        return self._closed

    async def wait_closed(self) -> None:
        """Return once the connection has closed."""
        await self._closed_event.wait()

    def stop_reading(self) -> None:
        """Graceful close: take no new requests, answer the ones in flight, then close."""
        self._reader_scope.cancel()

    def close(self) -> None:
        """Hard close: drop everything now."""
        if self._cancel is not None:
            self._cancel.cancel()
        else:
            self._reader_scope.cancel()

    # -- reading ------------------------------------------------------------------------------

    async def _reader(self, nursery: trio.Nursery) -> None:
        idle = self.config.idle_timeout_s
        partial_since: float | None = None
        while True:
            deadline = trio.current_time() + idle
            if partial_since is not None:
                deadline = min(deadline, partial_since + idle)
            data = b""
            with trio.move_on_at(deadline):
                try:
                    data = await self.stream.receive_some(_RECEIVE_SIZE)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
                    logger.debug("%s: receive failed: %s", self, err)
                    return
                if not data:
                    logger.debug("%s: closed by peer", self)
                    return
            if not data:
                logger.info("%s: closing after %.0f s without a complete frame", self, idle)
                return
            try:
                commands = self._decoder.feed(data)
            except FrameError as err:
                logger.warning("%s: closing, bad frame: %s", self, err)
                return
            partial_since = (partial_since or trio.current_time()) if self._decoder.buffered else None
            for cmd in commands:
                self.frames_in += 1
                if cmd.is_response:
                    self._resolve(cmd)
                    continue
                token = object()  # commands are unhashable; the limiter needs a borrower
                await self._limiter.acquire_on_behalf_of(token)
                nursery.start_soon(self._handle, cmd, token)

    async def _handle(self, cmd: RemotingCommand, token: object) -> None:
        try:
            self.info.language, self.info.version = cmd.language, cmd.version
            response = await self.dispatcher.dispatch(RequestContext(self.info), cmd)
            if response is not None:
                await self._enqueue(response)
        except PeerClosedError:
            logger.debug("%s: response to opaque %d not sent, connection closing", self, cmd.opaque)
        finally:
            self._limiter.release_on_behalf_of(token)
            if self._draining and not self._limiter.borrowed_tokens:
                self._drained.set()

    def _resolve(self, response: RemotingCommand) -> None:
        pending = self._pending.pop(response.opaque, None)
        if pending is None:
            logger.debug("%s: response to unknown opaque %d dropped", self, response.opaque)
            return
        pending.response = response
        pending.event.set()

    # -- writing ------------------------------------------------------------------------------

    async def _enqueue(self, cmd: RemotingCommand) -> None:
        try:
            frame = encode_frame(cmd)
        except RocketMQError as err:
            logger.error("%s: cannot encode %r: %s", self, cmd, err)
            return
        try:
            await self._send.send(frame)
        except (trio.ClosedResourceError, trio.BrokenResourceError) as err:
            raise PeerClosedError(f"{self}: connection closed") from err

    async def _writer(self) -> None:
        async with self._outbox:
            async for first in self._outbox:
                # Coalesce whatever else is queued into one write: fewer syscalls under load.
                frames = [first]
                while len(frames) < _MAX_COALESCED_FRAMES:
                    try:
                        frames.append(self._outbox.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                data = first if len(frames) == 1 else b"".join(frames)
                with trio.move_on_after(self.config.write_timeout_s) as scope:
                    try:
                        await self.stream.send_all(data)
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
                        logger.debug("%s: send failed: %s", self, err)
                        self.close()
                        return
                if scope.cancelled_caught:
                    logger.warning(
                        "%s: closing, peer not reading for %s s", self, self.config.write_timeout_s
                    )
                    self.close()
                    return
                self.frames_out += len(frames)

    # -- calls to the peer (gateway.dispatch.Peer) ---------------------------------------------

    async def invoke(self, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        if self._closed:
            raise PeerClosedError(f"{self}: connection closed")
        request.opaque = next(_opaques) & 0x7FFFFFFF
        pending = _Pending()
        self._pending[request.opaque] = pending
        try:
            with trio.move_on_after(timeout_s):
                await self._enqueue(request)
                await pending.event.wait()
        finally:
            self._pending.pop(request.opaque, None)
        if pending.response is None:
            if self._closed:
                raise PeerClosedError(f"{self}: connection closed before the answer")
            raise PeerTimeoutError(f"{self}: no answer within {timeout_s} s")
        return pending.response

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        request.opaque = next(_opaques) & 0x7FFFFFFF
        request.flag |= 0x2
        await self._enqueue(request)

    def statistics(self) -> dict[str, object]:
        return {
            "id": self.info.id,
            "remote": self.info.remote_addr,
            "client_id": self.info.client_id,
            "frames_in": self.frames_in,
            "frames_out": self.frames_out,
            "in_flight": self._limiter.borrowed_tokens,
            "pending_calls": len(self._pending),
            "buffered_bytes": self._decoder.buffered,
        }


def _addr(stream: trio.SocketStream, *, remote: bool) -> str:
    try:
        sockaddr = stream.socket.getpeername() if remote else stream.socket.getsockname()
    except OSError:
        return "?"
    host, port = sockaddr[0], sockaddr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
