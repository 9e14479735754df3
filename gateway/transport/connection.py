"""One client connection: a reader task, a writer task, handlers, and calls to the peer.

Built like the connection handlers of trio's own servers (``trio.serve_listeners``) and of
hypercorn's Trio worker: one nursery per connection, whose tasks await I/O and report what
happened to a :class:`gateway.transport.connection_state.ConnectionState`, which alone keeps the
counts, the bounds, the pending calls and the lifecycle (``OPEN`` -> ``DRAINING`` -> ``CLOSED``):

* the **reader** receives bytes, feeds the :class:`codec.frame.FrameDecoder` and runs each request
  of the read in turn through :meth:`Dispatcher.dispatch_nowait`: a handler that completes without
  waiting (most: every send under ``ASYNC_FLUSH``, route lookups) is answered right there, and
  only one that must wait gets a task of its own, at most ``max_in_flight`` such tasks at once.
  A task per request cost more CPU than most handlers, and answering inline queues all answers
  of one read before the writer runs, so they leave in one ``send``. The reader never stops
  reading because handlers are busy: a request beyond that bound is answered at once with
  ``SYSTEM_BUSY`` and Java's remark for a rejected submission
  (``NettyRemotingAbstract.processRequestCommand`` when its executor throws
  ``RejectedExecutionException``), and a oneway request beyond it is dropped (logged at most
  every ``DROP_LOG_INTERVAL_S``). So a client that keeps thousands of async sends in flight sees
  its own flow control kick in, instead of both sides blocking on a write: a client blocked on
  writing to us may not read our answers until we read its requests;
* the **writer** alone calls ``send_all``, draining the outbox, bounded by ``send_queue_size``
  frames and ``send_queue_bytes`` bytes (see the state's docstring). Handlers and the reader's busy
  answers wait for room there, so the reader pauses only when the *peer* does not read our
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

import trio

from codec.codes import ResponseCode
from codec.command import RemotingCommand
from codec.errors import FrameError, RocketMQError
from codec.frame import FrameDecoder, encode_frame
from gateway.transport.config import ServerConfig
from gateway.transport.connection_state import ConnectionState, PeerClosedError, Phase
from gateway.transport.dispatch import ConnectionInfo, Dispatcher, RequestContext, Waiting

__all__ = ["BUSY_REMARK", "Connection", "PeerClosedError", "PeerTimeoutError"]

logger = logging.getLogger(__name__)

_MAX_COALESCED_FRAMES = 256
_RECEIVE_SIZE = 64 * 1024
_opaques = itertools.count(1)  # our own request ids, unique across connections
# Remark of Java's answer when a request cannot be queued for a processor
# (NettyRemotingAbstract.processRequestCommand, RejectedExecutionException): clients match no text,
# but operators grep for it.
BUSY_REMARK = "[OVERLOAD]system busy, start flow control for a while"


class PeerTimeoutError(RocketMQError):
    """The peer did not answer in time."""


class _Call:
    """Waits for the answer to one of our requests (a :class:`connection_state.Waiter`)."""

    __slots__ = ("done", "error", "response")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.response: RemotingCommand | None = None
        self.error: RocketMQError | None = None

    def succeed(self, response: RemotingCommand) -> None:
        self.response = response
        self.done.set()

    def fail(self, error: RocketMQError) -> None:
        self.error = error
        self.done.set()


class Connection:
    """Serves one stream until it closes; see the module docstring."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        conn_id: int,
        dispatcher: Dispatcher,
        config: ServerConfig,
        first: bytes = b"",
    ) -> None:
        """``stream``: a socket stream, or a TLS stream over one; ``first``: bytes already read
        from it (to sniff TLS), decoded before anything else."""
        self.stream = stream
        self._first = first
        self.dispatcher = dispatcher
        self.config = config
        self.info = ConnectionInfo(conn_id, _addr(stream, remote=True), _addr(stream, remote=False), self)
        self._decoder = FrameDecoder(config.max_frame_size)
        self._state = ConnectionState(
            repr(self.info),
            max_frames=config.send_queue_size,
            max_bytes=config.send_queue_bytes,
            max_in_flight=config.max_in_flight,
        )
        self._scope = trio.CancelScope()  # the whole connection: close() cancels it
        self._reader_scope = trio.CancelScope()  # reading only: stop_reading() cancels it
        self._room = trio.lowlevel.ParkingLot()  # enqueuers waiting for the writer to make room
        self._work = trio.lowlevel.ParkingLot()  # the writer, waiting for frames or the drain's end
        self._closed_event = trio.Event()

    def __repr__(self) -> str:
        return repr(self.info)

    async def serve(self) -> None:
        """Run until the stream closes or the connection is closed; never raises for I/O errors."""
        try:
            with self._scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._writer)
                    with self._reader_scope:
                        await self._reader(nursery)
                    # Reading stopped (EOF, error or shutdown): let in-flight handlers answer, let
                    # the writer drain what they queued, then leave; all within the grace period.
                    self._scope.deadline = trio.current_time() + self.config.shutdown_grace_s
                    self._state.reading_stopped()
                    self._work.unpark_all()
        finally:
            self._state.close()
            self._closed_event.set()
            self._room.unpark_all()  # callers from other tasks waiting for room now fail
            with trio.move_on_after(1) as scope:
                scope.shield = True
                await trio.aclose_forcefully(self.stream)

    @property
    def closed(self) -> bool:
        return self._state.phase is Phase.CLOSED

    @property
    def writable(self) -> bool:
        """Whether a frame queued now is taken without waiting (Netty's ``isWritable``)."""
        return self._state.writable

    async def wait_closed(self) -> None:
        """Return once the connection has closed."""
        await self._closed_event.wait()

    def stop_reading(self) -> None:
        """Graceful close: take no new requests, answer the ones in flight, then close."""
        self._reader_scope.cancel()

    def close(self) -> None:
        """Hard close: drop everything now."""
        self._scope.cancel()

    # -- reading ------------------------------------------------------------------------------

    async def _reader(self, nursery: trio.Nursery) -> None:
        idle = self.config.idle_timeout_s
        partial_since: float | None = None
        while True:
            deadline = trio.current_time() + idle
            if partial_since is not None:
                deadline = min(deadline, partial_since + idle)
            data, self._first = self._first, b""
            if not data:
                received = await self._receive(deadline)
                if received is None:
                    return
                data = received
                if not data:
                    logger.info("%s: closing after %.0f s without a complete frame", self, idle)
                    return
            try:
                commands = self._decoder.feed(data)
            except FrameError as err:
                logger.warning("%s: closing, bad frame: %s", self, err)
                return
            partial_since = (partial_since or trio.current_time()) if self._decoder.buffered else None
            self._state.frames_received(len(commands))
            for cmd in commands:
                if cmd.is_response:
                    if not self._state.answer_received(cmd):
                        logger.debug("%s: response to unknown opaque %d dropped", self, cmd.opaque)
                elif self._state.handler_room:
                    await self._start(nursery, cmd)
                else:
                    await self._refuse(cmd)

    async def _receive(self, deadline: float) -> bytes | None:
        """The next bytes; empty when ``deadline`` passed first, None when the stream ended."""
        with trio.move_on_at(deadline):
            try:
                data = await self.stream.receive_some(_RECEIVE_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
                logger.debug("%s: receive failed: %s", self, err)
                return None
            if not data:
                logger.debug("%s: closed by peer", self)
                return None
            return bytes(data)
        return b""

    async def _start(self, nursery: trio.Nursery, cmd: RemotingCommand) -> None:
        """Run ``cmd`` inline as far as it goes; a handler that must wait continues in a task."""
        self.info.language, self.info.version = cmd.language, cmd.version
        outcome = self.dispatcher.dispatch_nowait(RequestContext(self.info), cmd)
        if outcome is None:
            return
        if isinstance(outcome, RemotingCommand):
            try:  # inline rather than through _answer: one coroutine less on the hottest path
                await self._enqueue(outcome)
            except PeerClosedError:
                logger.debug("%s: answer to opaque %d not sent, connection closing", self, cmd.opaque)
            return
        self._state.handler_started()
        nursery.start_soon(self._handle, cmd, outcome)

    async def _refuse(self, cmd: RemotingCommand) -> None:
        """Answer a request beyond the in-flight bound with SYSTEM_BUSY; drop a oneway one."""
        if cmd.is_oneway:
            dropped = self._state.dropped_oneway(trio.current_time())
            if dropped:
                logger.warning(
                    "%s: %d oneway request(s) dropped, %d requests in flight (code of the last: %d)",
                    self,
                    dropped,
                    self._state.in_flight,
                    cmd.code,
                )
            return
        self._state.answered_busy()
        await self._answer(cmd, cmd.make_response(ResponseCode.SYSTEM_BUSY, remark=BUSY_REMARK))

    async def _handle(self, cmd: RemotingCommand, waiting: Waiting) -> None:
        try:
            response = await waiting
            if response is not None:
                await self._answer(cmd, response)
        finally:
            self._state.handler_finished()
            if self._state.drained:
                self._work.unpark_all()

    async def _answer(self, cmd: RemotingCommand, response: RemotingCommand) -> None:
        try:
            await self._enqueue(response)
        except PeerClosedError:
            logger.debug("%s: answer to opaque %d not sent, connection closing", self, cmd.opaque)

    # -- writing ------------------------------------------------------------------------------

    async def _enqueue(self, cmd: RemotingCommand, *, request: bool = False) -> None:
        """Queue ``cmd`` for the writer, waiting for room; raises :class:`PeerClosedError` when
        the connection takes no such frame any more (see :meth:`ConnectionState.admit`)."""
        if self.config.command_version is not None:
            cmd.version = self.config.command_version
        try:
            frame = encode_frame(cmd)
        except RocketMQError as err:
            logger.error("%s: cannot encode %r: %s", self, cmd, err)
            return
        while not self._state.admit(frame, request=request):
            await self._room.park()
        if self._work:  # the writer is parked (a ParkingLot is true while a task waits in it)
            self._work.unpark()

    async def _writer(self) -> None:
        state = self._state
        while True:
            # Coalesce whatever is queued into one write: fewer syscalls under load.
            frames = state.take(_MAX_COALESCED_FRAMES)
            if not frames:
                if state.drained:
                    return
                await self._work.park()
                continue
            data = frames[0] if len(frames) == 1 else b"".join(frames)
            with trio.move_on_after(self.config.write_timeout_s) as scope:
                try:
                    await self.stream.send_all(data)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
                    logger.debug("%s: send failed: %s", self, err)
                    self.close()
                    return
            if scope.cancelled_caught:
                logger.warning("%s: closing, peer not reading for %s s", self, self.config.write_timeout_s)
                self.close()
                return
            state.release(len(frames), len(data))
            if self._room:
                self._room.unpark_all()

    # -- calls to the peer (gateway.transport.dispatch.Peer) ---------------------------------------

    async def invoke(self, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        request.opaque = next(_opaques) & 0x7FFFFFFF
        call = _Call()
        self._state.call_started(request.opaque, call)
        try:
            with trio.move_on_after(timeout_s):
                await self._enqueue(request, request=True)
                await call.done.wait()
        finally:
            self._state.call_abandoned(request.opaque)
        if call.error is not None:
            raise call.error
        if call.response is None:
            raise PeerTimeoutError(f"{self}: no answer within {timeout_s} s")
        return call.response

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        request.opaque = next(_opaques) & 0x7FFFFFFF
        request.flag |= 0x2
        await self._enqueue(request, request=True)

    def try_invoke_oneway(self, request: RemotingCommand) -> bool:
        """Queue a oneway request without waiting; ``False`` (nothing sent) unless the connection
        is open and its outbox has room. For notices such as NOTIFY_CONSUMER_IDS_CHANGED, which
        Java sends with a 10 ms budget and drops when the channel is busy."""
        request.opaque = next(_opaques) & 0x7FFFFFFF
        request.flag |= 0x2
        if self.config.command_version is not None:
            request.version = self.config.command_version
        try:
            admitted = self._state.admit(encode_frame(request), request=True)
        except PeerClosedError:
            return False
        except RocketMQError as err:
            logger.error("%s: cannot encode %r: %s", self, request, err)
            return False
        if admitted and self._work:
            self._work.unpark()
        return admitted

    def statistics(self) -> dict[str, object]:
        return {
            "id": self.info.id,
            "remote": self.info.remote_addr,
            "client_id": self.info.client_id,
            **self._state.statistics(),
            "buffered_bytes": self._decoder.buffered,
        }


def _addr(stream: trio.abc.Stream, *, remote: bool) -> str:
    while not isinstance(stream, trio.SocketStream):  # TLS: the socket is below
        inner = getattr(stream, "transport_stream", None)
        if inner is None:
            return "?"
        stream = inner
    try:
        sockaddr = stream.socket.getpeername() if remote else stream.socket.getsockname()
    except OSError:
        return "?"
    host, port = sockaddr[0], sockaddr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
