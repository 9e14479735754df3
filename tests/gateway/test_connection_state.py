"""The connection's bookkeeping on its own: no sockets, no Trio (``ConnectionState``)."""

from __future__ import annotations

import pytest

from codec.codes import ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from gateway.transport.connection_state import (
    DROP_LOG_INTERVAL_S,
    ConnectionState,
    IllegalTransition,
    PeerClosedError,
    Phase,
)


class Recorder:
    """A waiter that keeps what it was told."""

    def __init__(self) -> None:
        self.response: RemotingCommand | None = None
        self.error: RocketMQError | None = None

    def succeed(self, response: RemotingCommand) -> None:
        self.response = response

    def fail(self, error: RocketMQError) -> None:
        self.error = error


def make_state(max_frames: int = 4, max_bytes: int = 100, max_in_flight: int = 2) -> ConnectionState:
    return ConnectionState(
        "<conn 1>", max_frames=max_frames, max_bytes=max_bytes, max_in_flight=max_in_flight
    )


def counts(state: ConnectionState) -> tuple[int, int]:
    return state.queued_frames, state.queued_bytes


def write_all(state: ConnectionState) -> list[bytes]:
    """What the writer does: take what is queued, write it, release it."""
    frames = state.take(256)
    if frames:
        state.release(len(frames), sum(map(len, frames)))
    return frames


def test_admit_counts_frames_and_bytes_until_released() -> None:
    state = make_state()
    assert state.admit(b"a" * 10)
    assert state.admit(b"b" * 20, request=True)
    assert counts(state) == (2, 30)
    taken = state.take(256)
    assert taken == [b"a" * 10, b"b" * 20]
    assert counts(state) == (2, 30)  # taken is not written: still counted
    assert state.take(256) == []  # nothing is handed out twice
    state.release(2, 30)
    assert counts(state) == (0, 0)
    stats = state.statistics()
    assert (stats["frames_out"], stats["writes"]) == (2, 1)


def test_take_coalesces_at_most_the_given_number_in_order() -> None:
    state = make_state(max_frames=10)
    for i in range(5):
        assert state.admit(bytes([i]))
    assert state.take(3) == [b"\x00", b"\x01", b"\x02"]
    assert state.take(3) == [b"\x03", b"\x04"]
    state.release(3, 3)
    assert counts(state) == (2, 2)


def test_frame_bound_refuses_until_a_write_makes_room() -> None:
    state = make_state(max_frames=3, max_bytes=1000)
    assert [state.admit(b"x") for _ in range(4)] == [True, True, True, False]
    assert counts(state) == (3, 3)  # the refused frame is not counted
    frames = state.take(1)
    assert not state.admit(b"x")  # being written still counts
    state.release(len(frames), 1)
    assert state.admit(b"x")
    assert counts(state) == (3, 3)


def test_byte_bound_counts_every_byte_and_admits_an_oversized_frame_only_alone() -> None:
    state = make_state(max_frames=100, max_bytes=100)
    assert state.admit(b"x" * 60)
    assert state.admit(b"y" * 40)  # exactly the bound
    assert not state.admit(b"z")
    write_all(state)
    assert counts(state) == (0, 0)
    assert state.admit(b"big" * 100)  # larger than the bound, but the queue is empty
    assert counts(state) == (1, 300)
    assert not state.admit(b"z")  # nothing else until it is written
    assert not state.admit(b"big" * 100)
    write_all(state)
    assert state.admit(b"z")


def test_release_of_more_than_was_taken_is_refused() -> None:
    state = make_state()
    assert state.admit(b"abc")
    with pytest.raises(ValueError, match="released"):
        state.release(1, 3)  # not taken yet
    state.take(1)
    with pytest.raises(ValueError, match="released"):
        state.release(1, 4)
    with pytest.raises(ValueError, match="released"):
        state.release(2, 3)
    state.release(1, 3)
    assert counts(state) == (0, 0)


def test_draining_takes_answers_but_no_requests() -> None:
    state = make_state()
    state.handler_started()
    state.reading_stopped()
    assert state.phase is Phase.DRAINING
    assert state.admit(b"answer")
    with pytest.raises(PeerClosedError, match="draining"):
        state.admit(b"request", request=True)
    with pytest.raises(PeerClosedError):
        state.call_started(7, Recorder())
    assert not state.drained  # a handler is in flight and its answer unwritten
    state.handler_finished()
    assert not state.drained
    write_all(state)
    assert state.drained


def test_closed_takes_nothing_and_drops_the_outbox() -> None:
    state = make_state()
    assert state.admit(b"queued")
    state.take(1)
    assert state.admit(b"also")
    state.close()
    assert state.phase is Phase.CLOSED
    assert counts(state) == (0, 0)
    assert state.take(10) == []
    for request in (False, True):
        with pytest.raises(PeerClosedError, match="closed"):
            state.admit(b"late", request=request)
    assert not state.drained


@pytest.mark.parametrize(
    ("events", "illegal"),
    [
        pytest.param(["reading_stopped"], "reading_stopped", id="stop-reading-twice"),
        pytest.param(["close"], "reading_stopped", id="stop-reading-after-close"),
        pytest.param(["close"], "close", id="close-twice"),
        pytest.param(["reading_stopped", "close"], "close", id="close-after-drain-close"),
    ],
)
def test_illegal_lifecycle_transitions_raise_and_change_nothing(events: list[str], illegal: str) -> None:
    state = make_state()
    for event in events:
        getattr(state, event)()
    phase = state.phase
    with pytest.raises(IllegalTransition, match="while"):
        getattr(state, illegal)()
    assert state.phase is phase


def test_legal_lifecycle_paths() -> None:
    graceful = make_state()
    graceful.reading_stopped()
    graceful.close()
    assert graceful.phase is Phase.CLOSED
    hard = make_state()
    hard.close()  # OPEN -> CLOSED directly: a hard close or a failed write
    assert hard.phase is Phase.CLOSED


def test_in_flight_bound_and_counts() -> None:
    state = make_state(max_in_flight=2)
    assert state.handler_room
    state.handler_started()
    state.handler_started()
    assert state.in_flight == 2
    assert not state.handler_room
    with pytest.raises(IllegalTransition, match="in flight"):
        state.handler_started()
    state.handler_finished()
    assert state.handler_room
    state.handler_finished()
    with pytest.raises(IllegalTransition, match="none in flight"):
        state.handler_finished()
    state.reading_stopped()
    with pytest.raises(IllegalTransition, match="draining"):
        state.handler_started()


def test_busy_answers_and_dropped_oneways_are_counted_and_drops_logged_at_most_every_interval() -> None:
    state = make_state()
    state.answered_busy()
    assert state.dropped_oneway(now=100.0) == 1  # the first drop is logged
    assert state.dropped_oneway(now=101.0) == 0
    assert state.dropped_oneway(now=100.0 + DROP_LOG_INTERVAL_S - 0.1) == 0
    assert state.dropped_oneway(now=100.0 + DROP_LOG_INTERVAL_S) == 3  # the three since the last line
    stats = state.statistics()
    assert (stats["busy_answers"], stats["oneway_dropped"]) == (1, 4)


def test_calls_are_answered_by_opaque_and_late_answers_dropped() -> None:
    state = make_state()
    first, second = Recorder(), Recorder()
    state.call_started(1, first)
    state.call_started(2, second)
    with pytest.raises(IllegalTransition, match="opaque 1"):
        state.call_started(1, Recorder())
    answer = RemotingCommand.request(9, opaque=2).make_response(ResponseCode.SUCCESS)
    assert state.answer_received(answer)
    assert second.response is answer
    assert not state.answer_received(answer)  # already answered
    state.call_abandoned(1)  # the caller timed out
    assert not state.answer_received(RemotingCommand.request(9, opaque=1).make_response(ResponseCode.SUCCESS))
    assert first.response is None
    assert state.statistics()["pending_calls"] == 0


def test_close_fails_every_pending_call() -> None:
    state = make_state()
    waiters = [Recorder() for _ in range(3)]
    for opaque, waiter in enumerate(waiters, 1):
        state.call_started(opaque, waiter)
    state.reading_stopped()
    state.close()
    assert all(isinstance(w.error, PeerClosedError) for w in waiters)
    assert all("closed before the answer" in str(w.error) for w in waiters)
    assert state.statistics()["pending_calls"] == 0
    with pytest.raises(PeerClosedError):
        state.call_started(9, Recorder())


def test_statistics_keys() -> None:
    state = make_state()
    state.frames_received(3)
    assert state.statistics() == {
        "phase": "open",
        "frames_in": 3,
        "frames_out": 0,
        "writes": 0,
        "in_flight": 0,
        "queued_frames": 0,
        "queued_bytes": 0,
        "busy_answers": 0,
        "oneway_dropped": 0,
        "pending_calls": 0,
    }


def test_writable_while_open_and_below_both_bounds() -> None:
    """Netty's ``isWritable``, which a transaction check-back uses to pick a producer's channel."""
    state = make_state(max_frames=2, max_bytes=10)
    assert state.writable
    state.admit(b"x")
    assert state.writable
    state.admit(b"y")
    assert not state.writable  # frame bound reached
    state.release(len(state.take(2)), 2)
    assert state.writable
    state.admit(b"z" * 10)
    assert not state.writable  # byte bound reached
    state.release(len(state.take(1)), 10)
    state.reading_stopped()
    assert not state.writable  # draining: nothing more goes to the peer
