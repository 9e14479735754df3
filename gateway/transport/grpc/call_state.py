"""The lifecycle of one gRPC call on the server, without Trio: what has been sent, what received.

Written in the manner of h11's ``_state.py`` (as :mod:`gateway.transport.connection_state` is for a
remoting connection): the allowed transitions sit in one table, each event is one method, and the
flags change only in those methods. :class:`gateway.transport.grpc.call.ServerCall` and its
:class:`~gateway.transport.grpc.connection.Connection` do the I/O and tell this object what
happened, so a handler, a poster and the reader loop agree on whether the call can still send.

Outbound, the response side of the stream (grpc's ``doc/PROTOCOL-HTTP2.md``: headers, messages,
then trailers; or "Trailers-Only", one HEADERS frame):

* ``IDLE`` -> ``HEADERS_SENT`` when the response headers go out (before the first message);
* ``IDLE`` or ``HEADERS_SENT`` -> ``CLOSED`` when the trailers go out (the call's status), or, from
  ``IDLE``, when the request is refused with an HTTP error before any handler runs;
* any state but ``CLOSED`` -> ``RESET`` when the stream is reset (by the client, or because the
  connection ended): nothing more can be sent. A reset after the trailers leaves ``CLOSED``.

Inbound, the request side only ever goes from receiving to ended (the client's END_STREAM, or the
reset). Mirrors what io.grpc.internal.ServerCallImpl and AbstractServerStream keep in their
``sendHeadersCalled``/``closeCalled``/``cancelled`` flags.
"""

from __future__ import annotations

import enum


class IllegalCallTransition(RuntimeError):
    """An event the call's current state does not allow: a bug in the caller."""


class CallPhase(enum.Enum):
    IDLE = "idle"  # request headers received, nothing sent yet
    HEADERS_SENT = "headers sent"  # response headers out, messages may follow
    CLOSED = "closed"  # trailers (or an HTTP refusal) sent: the call is over
    RESET = "reset"  # the stream was reset or the connection ended before the trailers


class CallEvent(enum.Enum):
    SEND_HEADERS = "send headers"
    SEND_TRAILERS = "send trailers"
    REFUSE = "refuse"  # an HTTP error answer instead of a call (405, 415, 431)
    RESET = "reset"


# Every change the call may make; any other is IllegalCallTransition.
TRANSITIONS: dict[CallPhase, dict[CallEvent, CallPhase]] = {
    CallPhase.IDLE: {
        CallEvent.SEND_HEADERS: CallPhase.HEADERS_SENT,
        CallEvent.SEND_TRAILERS: CallPhase.CLOSED,
        CallEvent.REFUSE: CallPhase.CLOSED,
        CallEvent.RESET: CallPhase.RESET,
    },
    CallPhase.HEADERS_SENT: {
        CallEvent.SEND_TRAILERS: CallPhase.CLOSED,
        CallEvent.RESET: CallPhase.RESET,
    },
    CallPhase.CLOSED: {CallEvent.RESET: CallPhase.CLOSED},
    CallPhase.RESET: {CallEvent.RESET: CallPhase.RESET},
}


class CallState:
    """The phase of one call's response side and whether its request side has ended."""

    __slots__ = ("_headers_sent", "_inbound_ended", "_phase", "stream_id")

    def __init__(self, stream_id: int) -> None:
        self.stream_id = stream_id
        self._phase = CallPhase.IDLE
        self._headers_sent = False
        self._inbound_ended = False

    def __repr__(self) -> str:
        inbound = "ended" if self._inbound_ended else "open"
        return f"<CallState stream {self.stream_id} {self._phase.value}, inbound {inbound}>"

    @property
    def phase(self) -> CallPhase:
        return self._phase

    @property
    def headers_sent(self) -> bool:
        """Response headers went out: the status must come as trailers, not Trailers-Only."""
        return self._headers_sent

    @property
    def can_send(self) -> bool:
        """Response messages may still be sent."""
        return self._phase in (CallPhase.IDLE, CallPhase.HEADERS_SENT)

    @property
    def done(self) -> bool:
        """Trailers sent or the stream reset: nothing more goes out, and inbound data is dropped."""
        return self._phase in (CallPhase.CLOSED, CallPhase.RESET)

    @property
    def reset(self) -> bool:
        return self._phase is CallPhase.RESET

    @property
    def inbound_ended(self) -> bool:
        """The client half-closed (END_STREAM) or the stream was reset."""
        return self._inbound_ended

    # -- events ----------------------------------------------------------------------------------

    def send_headers(self) -> bool:
        """Before a response message: True when the headers must go out first (the first one)."""
        if self._phase is CallPhase.HEADERS_SENT:
            return False
        self._transition(CallEvent.SEND_HEADERS)
        self._headers_sent = True
        return True

    def send_trailers(self) -> bool:
        """The call's status is going out; True when it is "Trailers-Only" (no headers before)."""
        trailers_only = self._phase is CallPhase.IDLE
        self._transition(CallEvent.SEND_TRAILERS)
        return trailers_only

    def refuse(self) -> None:
        """An HTTP error answers the request instead of a call."""
        self._transition(CallEvent.REFUSE)

    def stream_reset(self) -> None:
        """The stream was reset or the connection ended; idempotent, and harmless after the end."""
        self._transition(CallEvent.RESET)
        self._inbound_ended = True

    def end_inbound(self) -> None:
        """The client half-closed its side."""
        self._inbound_ended = True

    def _transition(self, event: CallEvent) -> None:
        try:
            self._phase = TRANSITIONS[self._phase][event]
        except KeyError:
            raise IllegalCallTransition(
                f"stream {self.stream_id}: {event.value} not allowed when {self._phase.value}"
            ) from None
