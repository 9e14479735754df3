"""The bookkeeping of one connection, without Trio: its lifecycle, outbox, handlers and calls.

It keeps what Java keeps for a channel: the calls awaiting an answer (``NettyRemotingAbstract``'s
``responseTable`` by opaque, whose entries ``failFast`` fails when their channel closes) and a
bound on the answers waiting to be written (Netty's ``WriteBufferWaterMark`` on the server's
channels). It is written in the manner of h11's ``_state.py``: the allowed
lifecycle transitions sit in one table, each event is one method, and every counter changes only
in those methods. :class:`gateway.transport.connection.Connection` owns the socket and the tasks;
it awaits, and tells this object what happened. So the accounting is tested without sockets
(``tests/gateway/test_connection_state.py``), and no path can queue a frame without counting it:

* ``OPEN`` -> ``DRAINING`` when the connection stops reading (the peer closed its side, a read
  failed, or a graceful shutdown): handlers in flight may still answer, nothing new is sent to
  the peer, since its answer could no longer be read;
* ``OPEN`` or ``DRAINING`` -> ``CLOSED`` when the connection is gone: queued frames are dropped and
  every pending call fails with :class:`PeerClosedError`.

The outbox is bounded by ``max_frames`` and ``max_bytes``; a frame counts from :meth:`admit`
until the writer reports it written through :meth:`release`. One frame larger than the byte bound
is admitted when nothing else is queued, so an answer of any size the codec accepts gets through.
"""

from __future__ import annotations

import enum
from collections import deque
from typing import Protocol

from codec.command import RemotingCommand
from codec.errors import RocketMQError

DROP_LOG_INTERVAL_S = 10.0  # at most one "oneway dropped" line per connection per 10 s


class PeerClosedError(RocketMQError):
    """The connection closed before the peer answered, or before a frame could be queued."""


class IllegalTransition(RuntimeError):
    """An event that the connection's current phase does not allow: a bug in the caller."""


class Phase(enum.Enum):
    OPEN = "open"  # reading requests and answers, sending anything
    DRAINING = "draining"  # no longer reading: answering the handlers in flight, then closing
    CLOSED = "closed"


class _Event(enum.Enum):
    READING_STOPPED = "reading stopped"
    CLOSED = "closed"


# Every lifecycle change the connection may make; any other is IllegalTransition.
_TRANSITIONS: dict[Phase, dict[_Event, Phase]] = {
    Phase.OPEN: {_Event.READING_STOPPED: Phase.DRAINING, _Event.CLOSED: Phase.CLOSED},
    Phase.DRAINING: {_Event.CLOSED: Phase.CLOSED},
    Phase.CLOSED: {},
}


class Waiter(Protocol):
    """What waits for the answer to one call to the peer (the Trio side supplies it)."""

    def succeed(self, response: RemotingCommand) -> None: ...

    def fail(self, error: RocketMQError) -> None: ...


class ConnectionState:
    """Lifecycle, outbox, in-flight handlers and pending calls of one connection.

    ``name`` labels error messages; the bounds are the connection's ``ServerConfig``.
    """

    def __init__(self, name: str, *, max_frames: int, max_bytes: int, max_in_flight: int) -> None:
        self.name = name
        self.max_frames = max_frames
        self.max_bytes = max_bytes
        self.max_in_flight = max_in_flight
        self._phase = Phase.OPEN
        self._outbox: deque[bytes] = deque()
        self._queued_frames = 0  # admitted and not yet written, the ones being written included
        self._queued_bytes = 0
        self._taken_frames = 0  # handed to the writer by take(), not yet released
        self._taken_bytes = 0
        self._in_flight = 0
        self._calls: dict[int, Waiter] = {}
        self._frames_in = 0
        self._frames_out = 0
        self._writes = 0
        self._busy_answers = 0
        self._oneway_dropped = 0
        self._dropped_since_log = 0
        self._drop_logged_at: float | None = None

    def __repr__(self) -> str:
        return f"<ConnectionState {self.name} {self._phase.value}>"

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def drained(self) -> bool:
        """Draining, with no handler left to answer and every queued frame written."""
        return self._phase is Phase.DRAINING and not self._in_flight and not self._queued_frames

    def reading_stopped(self) -> None:
        """The connection stopped reading: ``OPEN`` -> ``DRAINING``."""
        self._transition(_Event.READING_STOPPED)

    def close(self) -> None:
        """The connection is gone: drop the outbox and fail every pending call."""
        self._transition(_Event.CLOSED)
        self._outbox.clear()
        self._queued_frames = self._queued_bytes = self._taken_frames = self._taken_bytes = 0
        calls, self._calls = self._calls, {}
        for waiter in calls.values():
            waiter.fail(PeerClosedError(f"{self.name}: connection closed before the answer"))

    def _transition(self, event: _Event) -> None:
        new_phase = _TRANSITIONS[self._phase].get(event)
        if new_phase is None:
            raise IllegalTransition(f"{self.name}: {event.value} while {self._phase.value}")
        self._phase = new_phase

    # -- the outbox -----------------------------------------------------------------------------

    def admit(self, frame: bytes, *, request: bool = False) -> bool:
        """Queue ``frame`` if it fits the bounds; ``False`` (nothing queued) when it does not yet.

        A ``request`` (a call or notice to the peer) is taken only while ``OPEN``; an answer also
        while ``DRAINING``. Raises :class:`PeerClosedError` when the phase takes no such frame.
        """
        if self._phase is not Phase.OPEN and (request or self._phase is Phase.CLOSED):
            raise PeerClosedError(f"{self.name}: connection {self._phase.value}")
        size = len(frame)
        if self._queued_frames and (
            self._queued_frames >= self.max_frames or self._queued_bytes + size > self.max_bytes
        ):
            return False
        self._outbox.append(frame)
        self._queued_frames += 1
        self._queued_bytes += size
        return True

    def take(self, max_frames: int) -> list[bytes]:
        """Hand up to ``max_frames`` queued frames to the writer, to be written in one ``send``.

        They still count against the bounds until :meth:`release`.
        """
        outbox = self._outbox
        frames = [outbox.popleft() for _ in range(min(max_frames, len(outbox)))]
        self._taken_frames += len(frames)
        self._taken_bytes += sum(map(len, frames))
        return frames

    def release(self, frames: int, nbytes: int) -> None:
        """The writer wrote ``frames`` frames of ``nbytes`` bytes in one ``send``: make room."""
        if not 0 < frames <= self._taken_frames or not 0 <= nbytes <= self._taken_bytes:
            raise ValueError(
                f"{self.name}: released {frames} frames / {nbytes} bytes, "
                f"taken {self._taken_frames} / {self._taken_bytes}"
            )
        self._taken_frames -= frames
        self._taken_bytes -= nbytes
        self._queued_frames -= frames
        self._queued_bytes -= nbytes
        self._frames_out += frames
        self._writes += 1

    @property
    def writable(self) -> bool:
        """Netty's ``Channel.isWritable``: open, and the outbox below both of its bounds."""
        return (
            self._phase is Phase.OPEN
            and self._queued_frames < self.max_frames
            and self._queued_bytes < self.max_bytes
        )

    @property
    def queued_frames(self) -> int:
        return self._queued_frames

    @property
    def queued_bytes(self) -> int:
        return self._queued_bytes

    # -- requests from the peer -----------------------------------------------------------------

    def frames_received(self, count: int) -> None:
        self._frames_in += count

    @property
    def in_flight(self) -> int:
        """Handlers that had to wait and have not answered yet."""
        return self._in_flight

    @property
    def handler_room(self) -> bool:
        """Whether another request may get a handler task (else it is refused)."""
        return self._in_flight < self.max_in_flight

    def handler_started(self) -> None:
        if self._phase is not Phase.OPEN or not self.handler_room:
            raise IllegalTransition(
                f"{self.name}: handler started while {self._phase.value}, {self._in_flight} in flight"
            )
        self._in_flight += 1

    def handler_finished(self) -> None:
        if not self._in_flight:
            raise IllegalTransition(f"{self.name}: handler finished with none in flight")
        self._in_flight -= 1

    def answered_busy(self) -> None:
        """A request beyond the in-flight bound is answered ``SYSTEM_BUSY``."""
        self._busy_answers += 1

    def dropped_oneway(self, now: float) -> int:
        """A oneway request beyond the in-flight bound is dropped at time ``now`` (seconds).

        Returns how many were dropped since the last log line when one is due (at most every
        ``DROP_LOG_INTERVAL_S``), else 0.
        """
        self._oneway_dropped += 1
        self._dropped_since_log += 1
        if self._drop_logged_at is not None and now - self._drop_logged_at < DROP_LOG_INTERVAL_S:
            return 0
        dropped, self._dropped_since_log, self._drop_logged_at = self._dropped_since_log, 0, now
        return dropped

    # -- calls to the peer ----------------------------------------------------------------------

    def call_started(self, opaque: int, waiter: Waiter) -> None:
        """Remember ``waiter`` for the answer to our request ``opaque``.

        Raises :class:`PeerClosedError` unless ``OPEN``: no answer could be read any more.
        """
        if self._phase is not Phase.OPEN:
            raise PeerClosedError(f"{self.name}: connection {self._phase.value}")
        if opaque in self._calls:
            raise IllegalTransition(f"{self.name}: opaque {opaque} already awaits an answer")
        self._calls[opaque] = waiter

    def answer_received(self, response: RemotingCommand) -> bool:
        """Hand ``response`` to the call it answers; ``False`` if no call awaits it."""
        waiter = self._calls.pop(response.opaque, None)
        if waiter is None:
            return False
        waiter.succeed(response)
        return True

    def call_abandoned(self, opaque: int) -> None:
        """The caller stopped waiting (timeout, cancellation); a late answer is then dropped."""
        self._calls.pop(opaque, None)

    def statistics(self) -> dict[str, object]:
        return {
            "phase": self._phase.value,
            "frames_in": self._frames_in,
            "frames_out": self._frames_out,
            "writes": self._writes,
            "in_flight": self._in_flight,
            "queued_frames": self._queued_frames,
            "queued_bytes": self._queued_bytes,
            "busy_answers": self._busy_answers,
            "oneway_dropped": self._oneway_dropped,
            "pending_calls": len(self._calls),
        }
