"""The lifecycle of a gRPC call (:class:`gateway.transport.grpc.call_state.CallState`), no sockets."""

from __future__ import annotations

import pytest

from gateway.transport.grpc.call_state import (
    TRANSITIONS,
    CallEvent,
    CallPhase,
    CallState,
    IllegalCallTransition,
)


def test_a_unary_answer_goes_headers_then_trailers() -> None:
    state = CallState(1)
    assert state.can_send
    assert not state.done
    assert not state.headers_sent
    assert state.send_headers() is True  # the first message sends the headers
    assert state.send_headers() is False  # the next ones do not
    assert state.headers_sent
    assert state.phase is CallPhase.HEADERS_SENT
    assert state.send_trailers() is False  # not Trailers-Only
    assert state.done
    assert not state.can_send
    assert not state.reset
    assert state.headers_sent


def test_a_status_without_messages_is_trailers_only() -> None:
    state = CallState(3)
    assert state.send_trailers() is True
    assert state.phase is CallPhase.CLOSED
    assert not state.headers_sent


def test_a_refusal_ends_the_call_before_it_starts() -> None:
    state = CallState(5)
    state.refuse()
    assert state.done
    assert not state.can_send
    with pytest.raises(IllegalCallTransition):
        state.send_headers()
    with pytest.raises(IllegalCallTransition):
        state.send_trailers()


@pytest.mark.parametrize("before", [[], ["send_headers"]])
def test_a_reset_stops_sending_and_ends_inbound(before: list[str]) -> None:
    state = CallState(7)
    for event in before:
        getattr(state, event)()
    state.stream_reset()
    assert state.reset
    assert state.done
    assert state.inbound_ended
    assert not state.can_send
    state.stream_reset()  # the connection ending after the client's reset
    assert state.phase is CallPhase.RESET
    with pytest.raises(IllegalCallTransition):
        state.send_trailers()


def test_a_reset_after_the_trailers_leaves_the_call_closed() -> None:
    state = CallState(9)
    state.send_trailers()
    state.stream_reset()
    assert state.phase is CallPhase.CLOSED
    assert not state.reset


def test_trailers_go_out_once() -> None:
    state = CallState(11)
    state.send_trailers()
    with pytest.raises(IllegalCallTransition, match="stream 11: send trailers not allowed when closed"):
        state.send_trailers()


def test_inbound_ends_independently_of_the_response() -> None:
    state = CallState(13)
    state.end_inbound()
    assert state.inbound_ended
    assert state.can_send
    assert "inbound ended" in repr(state)


def test_the_table_covers_every_phase_and_only_resets_leave_the_final_ones() -> None:
    assert set(TRANSITIONS) == set(CallPhase)
    for final in (CallPhase.CLOSED, CallPhase.RESET):
        assert set(TRANSITIONS[final]) == {CallEvent.RESET}
