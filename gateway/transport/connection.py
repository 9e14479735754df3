"""One client connection: a reader task, a writer task, handlers, and calls to the peer.

Per connection (style.md, after trio's own servers and hypercorn):

* the **reader** receives bytes, feeds the :class:`codec.frame.FrameDecoder` and runs each request
  of the read in turn through :meth:`Dispatcher.dispatch_nowait`: a handler that completes without
  waiting (most: every send under ``ASYNC_FLUSH``, route lookups) is answered right there, and
  only one that must wait gets a task of its own, at most ``max_in_flight`` such tasks at once.
  A task per request cost more CPU than most handlers, and answering inline queues all answers
  of one read before the writer runs, so they leave in one ``send`` (issue 18). The reader never
  stops reading because handlers are busy: a request beyond that bound is answered at once with
  ``SYSTEM_BUSY`` and Java's remark
  for a rejected submission (``NettyRemotingAbstract.processRequestCommand`` when its executor
  throws ``RejectedExecutionException``), and a oneway request beyond it is dropped (logged at most
  every ``_DROP_LOG_INTERVAL_S``). So a client that keeps thousands of async sends in flight
  sees its own flow control kick in, instead of both sides blocking on a write: a client blocked
  on writing to us may not read our answers until we read its requests (issue 18);
* the **writer** alone calls ``send_all``, draining a queue of encoded frames bounded by
  ``send_queue_size`` frames and ``send_queue_bytes`` bytes (a frame counts until it is written;
  one larger than the byte bound is admitted when the queue is empty). Handlers and the reader's
  busy answers wait for room there, so the reader pauses only when the *peer* does not read our
  answers, and a write that stalls for ``write_timeout_s`` closes the connection. The byte bound
  is large enough for thousands of small answers, so a client that writes a burst before it reads
  (the kernel's socket buffers hold far less) still gets through. Memory per connection is bounded
  by the in-flight handlers, the queued frames and one read buffer;
* responses to requests *we* sent (``invoke``) are matched by ``opaque``; every pending call fails
  with :class:`PeerClosedError` when the connection dies.

The connection closes on a malformed frame, on ``idle_timeout_s`` of inbound silence, when a
partial frame does not complete within ``idle_timeout_s``, and when a write stalls for
``write_timeout_s``. Trio's exception types never leave this module.
"""

from __future__ import annotations

import itertools
import logging
import math

import trio

from codec.codes import ResponseCode
from codec.command import RemotingCommand
from codec.errors import FrameError, RocketMQError
from codec.frame import FrameDecoder, encode_frame
from gateway.transport.config import ServerConfig
from gateway.transport.dispatch import ConnectionInfo, Dispatcher, RequestContext, Waiting

logger = logging.getLogger(__name__)

_MAX_COALESCED_FRAMES = 256
_RECEIVE_SIZE = 64 * 1024
_opaques = itertools.count(1)  # our own request ids, unique across connections
# Remark of Java's answer when a request cannot be queued for a processor
# (NettyRemotingAbstract.processRequestCommand, RejectedExecutionException): clients match no text,
# but operators grep for it.
BUSY_REMARK = "[OVERLOAD]system busy, start flow control for a while"
_DROP_LOG_INTERVAL_S = 10.0  # at most one "oneway dropped" line per connection per 10 s


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
        # Unbounded channel, bounded by _has_room: the bound counts bytes as well as frames.
        self._send, self._outbox = trio.open_memory_channel[bytes](math.inf)
        self._queued_bytes = 0
        # Frames in the channel not yet taken by the writer: the channel's current_buffer_used,
        # counted here because its statistics() builds an object per call (once per answer).
        self._queued_frames = 0
        self._room = trio.lowlevel.ParkingLot()  # enqueuers waiting for the writer to make room
        self._in_flight = 0
        self._drop_logged_at: float | None = None
        self._dropped_since_log = 0
        self._pending: dict[int, _Pending] = {}
        self._cancel: trio.CancelScope | None = None
        self._reader_scope = trio.CancelScope()
        self._draining = False
        self._drained = trio.Event()
        self._closed = False
        self._closed_event = trio.Event()
        self.frames_in = 0
        self.frames_out = 0
        self.writes = 0  # send_all calls: frames_out / writes is how well answers coalesce
        self.busy_answers = 0  # requests answered SYSTEM_BUSY at the in-flight bound
        self.oneway_dropped = 0  # oneway requests dropped at the in-flight bound

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
                if self._in_flight:
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
                elif self._in_flight >= self.config.max_in_flight:
                    await self._refuse(cmd)
                else:
                    await self._start(nursery, cmd)

    async def _start(self, nursery: trio.Nursery, cmd: RemotingCommand) -> None:
        """Run ``cmd`` inline as far as it goes; a handler that must wait continues in a task."""
        self.info.language, self.info.version = cmd.language, cmd.version
        outcome = self.dispatcher.dispatch_nowait(RequestContext(self.info), cmd)
        if outcome is None:
            return
        if isinstance(outcome, RemotingCommand):
            try:
                await self._enqueue(outcome)
            except PeerClosedError:
                logger.debug("%s: response to opaque %d not sent, connection closing", self, cmd.opaque)
            return
        self._in_flight += 1
        nursery.start_soon(self._handle, cmd, outcome)

    async def _refuse(self, cmd: RemotingCommand) -> None:
        """Answer a request beyond the in-flight bound with SYSTEM_BUSY; drop a oneway one."""
        if cmd.is_oneway:
            self.oneway_dropped += 1
            self._dropped_since_log += 1
            now = trio.current_time()
            if self._drop_logged_at is None or now - self._drop_logged_at >= _DROP_LOG_INTERVAL_S:
                logger.warning(
                    "%s: %d oneway request(s) dropped, %d requests in flight (code of the last: %d)",
                    self,
                    self._dropped_since_log,
                    self._in_flight,
                    cmd.code,
                )
                self._drop_logged_at, self._dropped_since_log = now, 0
            return
        self.busy_answers += 1
        try:
            await self._enqueue(cmd.make_response(ResponseCode.SYSTEM_BUSY, remark=BUSY_REMARK))
        except PeerClosedError:
            logger.debug("%s: busy answer to opaque %d not sent, connection closing", self, cmd.opaque)

    async def _handle(self, cmd: RemotingCommand, waiting: Waiting) -> None:
        try:
            response = await waiting
            if response is not None:
                await self._enqueue(response)
        except PeerClosedError:
            logger.debug("%s: response to opaque %d not sent, connection closing", self, cmd.opaque)
        finally:
            self._in_flight -= 1
            if self._draining and not self._in_flight:
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
            while not self._has_room(len(frame)):
                await self._room.park()
            self._send.send_nowait(frame)
            self._queued_frames += 1
            self._queued_bytes += len(frame)
        except (trio.ClosedResourceError, trio.BrokenResourceError) as err:
            raise PeerClosedError(f"{self}: connection closed") from err

    def _has_room(self, size: int) -> bool:
        queued = self._queued_frames
        if not queued and not self._queued_bytes:
            return True
        return (
            queued < self.config.send_queue_size and self._queued_bytes + size <= self.config.send_queue_bytes
        )

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
                self._queued_frames -= len(frames)
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
                self.writes += 1
                self._queued_bytes -= len(data)
                self._room.unpark_all()

    # -- calls to the peer (gateway.transport.dispatch.Peer) ---------------------------------------------

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

    def try_invoke_oneway(self, request: RemotingCommand) -> bool:
        """Queue a oneway request without waiting; ``False`` (nothing sent) when the connection is
        closed or its outbox is full. For notices such as NOTIFY_CONSUMER_IDS_CHANGED, which Java
        sends with a 10 ms budget and drops when the channel is busy."""
        request.opaque = next(_opaques) & 0x7FFFFFFF
        request.flag |= 0x2
        try:
            self._send.send_nowait(encode_frame(request))
            self._queued_frames += 1
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        except RocketMQError as err:
            logger.error("%s: cannot encode %r: %s", self, request, err)
            return False
        return True

    def statistics(self) -> dict[str, object]:
        return {
            "id": self.info.id,
            "remote": self.info.remote_addr,
            "client_id": self.info.client_id,
            "frames_in": self.frames_in,
            "frames_out": self.frames_out,
            "writes": self.writes,
            "in_flight": self._in_flight,
            "queued_frames": self._queued_frames,
            "queued_bytes": self._queued_bytes,
            "busy_answers": self.busy_answers,
            "oneway_dropped": self.oneway_dropped,
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
