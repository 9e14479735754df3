"""The gRPC server's HTTP/2 state (gateway.transport.grpc.http2) without sockets: ``h2`` in client
mode is the independent peer, and hand-built frames are the broken ones."""

from __future__ import annotations

import itertools
import struct

import h2.config
import h2.connection
import h2.events
import h2.settings
import hpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.transport.grpc import h2_frames as f
from gateway.transport.grpc.http2 import ServerHttp2
from gateway.transport.grpc.request import RESPONSE_HEADERS

WINDOW = 1024 * 1024
REQUEST = [
    (":method", "POST"),
    (":scheme", "http"),
    (":path", "/apache.rocketmq.v2.MessagingService/SendMessage"),
    (":authority", "localhost"),
    ("content-type", "application/grpc"),
    ("te", "trailers"),
]


class Recorder:
    """The listener: every call it gets, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[object, ...]] = []

    def on_request(self, stream_id: int, headers: list[tuple[str, str]]) -> None:
        self.events.append(("request", stream_id, headers))

    def on_data(self, stream_id: int, data: bytes, flow_length: int) -> None:
        self.events.append(("data", stream_id, data, flow_length))

    def on_end(self, stream_id: int) -> None:
        self.events.append(("end", stream_id))

    def on_reset(self, stream_id: int) -> None:
        self.events.append(("reset", stream_id))

    def on_window(self) -> None:
        self.events.append(("window",))

    def on_goaway(self) -> None:
        self.events.append(("goaway",))


def _server() -> tuple[ServerHttp2, Recorder]:
    recorder = Recorder()
    server = ServerHttp2(
        recorder,
        max_concurrent_streams=1000,
        max_header_list_size=8192,
        header_list_goaway_size=10240,
        window=WINDOW,
    )
    return server, recorder


def _take(server: ServerHttp2) -> bytes:
    data = bytes(server.output)
    server.output.clear()
    return data


def _pair() -> tuple[ServerHttp2, Recorder, h2.connection.H2Connection]:
    """A server and an h2 client that have exchanged prefaces and SETTINGS."""
    server, recorder = _server()
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    client.initiate_connection()
    server.receive(client.data_to_send())
    client.receive_data(_take(server))
    server.receive(client.data_to_send())  # the client's SETTINGS ACK
    recorder.events.clear()
    return server, recorder, client


def test_handshake_advertises_our_settings_and_the_connection_window() -> None:
    server, _ = _server()
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    server.receive(client.data_to_send())
    events = client.receive_data(_take(server))
    changed = next(e for e in events if isinstance(e, h2.events.RemoteSettingsChanged))
    values = {code: setting.new_value for code, setting in changed.changed_settings.items()}
    assert values == {
        h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000,
        h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 8192,
        h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: WINDOW,
    }
    assert any(isinstance(e, h2.events.SettingsAcknowledged) for e in events)  # the client's SETTINGS
    assert client.outbound_flow_control_window == WINDOW


def test_unary_call_both_ways() -> None:
    server, recorder, client = _pair()
    client.send_headers(1, REQUEST)
    client.send_data(1, b"\x00\x00\x00\x00\x02hi", end_stream=True)
    server.receive(client.data_to_send())
    assert recorder.events == [("request", 1, REQUEST), ("data", 1, b"\x00\x00\x00\x00\x02hi", 7), ("end", 1)]
    server.send_headers(1, RESPONSE_HEADERS)
    server.send_data(1, b"\x00\x00\x00\x00\x02ok")
    server.send_headers(1, [("grpc-status", "0")], end_stream=True)
    assert server.streams == {}  # both sides ended: forgotten
    events = client.receive_data(_take(server))
    kinds = [type(e) for e in events]
    assert kinds == [
        h2.events.ResponseReceived,
        h2.events.DataReceived,
        h2.events.TrailersReceived,
        h2.events.StreamEnded,
    ]
    assert events[0].headers == RESPONSE_HEADERS
    assert events[2].headers == [("grpc-status", "0")]


def test_request_ended_by_its_headers_and_fed_one_byte_at_a_time() -> None:
    server, recorder, client = _pair()
    client.send_headers(1, REQUEST, end_stream=True)
    client.send_headers(3, REQUEST)
    client.send_data(3, b"x", pad_length=10)
    for byte in client.data_to_send():
        server.receive(bytes([byte]))
    assert recorder.events == [
        ("request", 1, REQUEST),
        ("end", 1),
        ("request", 3, REQUEST),
        ("data", 3, b"x", 12),
    ]


def test_ping_is_acknowledged_with_its_payload() -> None:
    server, _, client = _pair()
    client.ping(b"12345678")
    server.receive(client.data_to_send())
    events = client.receive_data(_take(server))
    assert [(type(e), e.ping_data) for e in events] == [(h2.events.PingAckReceived, b"12345678")]


def test_sending_respects_the_peer_windows_and_their_changes() -> None:
    server, recorder, client = _pair()
    client.send_headers(1, REQUEST)
    server.receive(client.data_to_send())
    assert server.send_window_of(1) == 65535  # the client's default stream window
    client.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 10})
    server.receive(client.data_to_send())
    assert recorder.events[-1] == ("window",)
    assert server.send_window_of(1) == 10
    server.send_headers(1, RESPONSE_HEADERS)
    server.send_data(1, b"0123456789")
    assert server.send_window_of(1) == 0
    client.receive_data(_take(server))
    client.increment_flow_control_window(5, stream_id=1)
    server.receive(client.data_to_send())
    assert server.send_window_of(1) == 5
    client.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    server.receive(client.data_to_send())
    assert server.send_window_of(1) == -5  # a smaller initial window can leave it negative


def test_consumed_data_is_given_back_once_half_a_window_is_due() -> None:
    server, recorder, client = _pair()
    client.send_headers(1, REQUEST)
    chunk = b"x" * 16384
    for _ in range(40):  # 640 KiB, more than half of the 1 MiB windows
        client.send_data(1, chunk)
    server.receive(client.data_to_send())
    assert sum(1 for e in recorder.events if e[0] == "data") == 40
    for _ in range(31):
        server.acknowledge(1, len(chunk))
    assert not server.output  # 496 KiB: under half a window
    server.acknowledge(1, len(chunk))
    updates = [e for e in client.receive_data(_take(server)) if isinstance(e, h2.events.WindowUpdated)]
    assert sorted((e.stream_id, e.delta) for e in updates) == [(0, 32 * 16384), (1, 32 * 16384)]


def test_continuation_priority_and_unknown_frames() -> None:
    server, recorder, _ = _pair()
    block = hpack.Encoder().encode(REQUEST)
    priority = struct.pack(">LB", 0, 15)
    data = f.frame(f.HEADERS, f.PRIORITY_FLAG, 1, priority + block[:5])
    data += f.frame(0xBB, 0, 0, b"an extension")
    data += f.frame(f.PRIORITY, 0, 3, struct.pack(">LB", 1, 1))
    with pytest.raises(f.Http2Error, match="interrupted"):
        server.receive(data)
    server, recorder, _ = _pair()
    data = f.frame(f.HEADERS, f.PRIORITY_FLAG, 1, priority + block[:5])
    data += f.frame(f.CONTINUATION, 0, 1, block[5:9]) + f.frame(f.CONTINUATION, f.END_HEADERS, 1, block[9:])
    data += f.frame(0xBB, 0, 0, b"an extension") + f.frame(f.PRIORITY, 0, 3, struct.pack(">LB", 1, 1))
    server.receive(data)
    assert recorder.events == [("request", 1, REQUEST)]


def test_client_reset_and_goaway_are_told() -> None:
    server, recorder, client = _pair()
    client.send_headers(1, REQUEST)
    client.reset_stream(1)
    client.close_connection()
    server.receive(client.data_to_send())
    assert recorder.events == [("request", 1, REQUEST), ("reset", 1), ("goaway",)]
    assert server.streams == {}
    with pytest.raises(f.StreamClosed):
        server.send_headers(1, RESPONSE_HEADERS)


def test_server_reset_drops_what_follows_and_gives_its_window_back() -> None:
    server, recorder, client = _pair()
    client.send_headers(1, REQUEST)
    server.receive(client.data_to_send())
    server.reset(1, f.REFUSED_STREAM)
    events = client.receive_data(_take(server))
    assert [(type(e), e.error_code) for e in events] == [(h2.events.StreamReset, f.REFUSED_STREAM)]
    frame = f.frame(f.DATA, 0, 1, b"y" * 16384)
    server.receive(frame * 40)  # sent before the client saw the reset
    assert recorder.events == [("request", 1, REQUEST)]
    updates = [e for e in client.receive_data(_take(server)) if isinstance(e, h2.events.WindowUpdated)]
    assert [(e.stream_id, e.delta) for e in updates] == [(0, 32 * 16384)]


def test_goaway_names_the_last_stream_and_stops_new_ones() -> None:
    server, recorder, client = _pair()
    client.send_headers(1, REQUEST, end_stream=True)
    server.receive(client.data_to_send())
    server.goaway()
    events = client.receive_data(_take(server))
    assert [(type(e), e.last_stream_id, e.error_code) for e in events] == [
        (h2.events.ConnectionTerminated, 1, 0)
    ]
    with pytest.raises(f.StreamClosed):
        server.send_headers(1, RESPONSE_HEADERS)
    server.receive(f.frame(f.HEADERS, f.END_HEADERS, 3, hpack.Encoder().encode(REQUEST)))
    server.receive(f.frame(f.DATA, f.END_STREAM, 3, b"x") + f.frame(f.RST_STREAM, 0, 3, b"\x00\x00\x00\x08"))
    assert [e[0] for e in recorder.events] == ["request", "end"]  # stream 3 ignored


def test_large_trailers_go_out_in_continuation_frames() -> None:
    server, _, client = _pair()
    client.send_headers(1, REQUEST, end_stream=True)
    server.receive(client.data_to_send())
    message = "m" * 40000
    server.send_headers(
        1, [*RESPONSE_HEADERS, ("grpc-status", "13"), ("grpc-message", message)], end_stream=True
    )
    events = client.receive_data(_take(server))
    assert events[0].headers[-1] == ("grpc-message", message)
    assert isinstance(events[1], h2.events.StreamEnded)


def _error_after_handshake(data: bytes) -> tuple[int, bytes]:
    server, _, _ = _pair()
    with pytest.raises(f.Http2Error) as raised:
        server.receive(data)
    output = _take(server)
    assert output[3] == f.GOAWAY
    assert f.GOAWAY_PAYLOAD.unpack_from(output, 9)[1] == raised.value.error_code
    return raised.value.error_code, output


BLOCK = hpack.Encoder().encode(REQUEST)


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (f.frame(f.DATA, 0, 0, b"x"), f.PROTOCOL_ERROR),
        (f.frame(f.DATA, 0, 7, b"x"), f.PROTOCOL_ERROR),  # idle stream
        (f.frame(f.HEADERS, f.END_HEADERS, 2, BLOCK), f.PROTOCOL_ERROR),  # even stream
        (f.frame(f.HEADERS, f.END_HEADERS | f.PADDED, 1, b"\xff" + BLOCK[:10]), f.PROTOCOL_ERROR),
        (f.frame(f.PING, 0, 0, b"1234"), f.FRAME_SIZE_ERROR),
        (f.frame(f.PING, 0, 1, b"12345678"), f.PROTOCOL_ERROR),
        (f.frame(f.CONTINUATION, f.END_HEADERS, 1, BLOCK), f.PROTOCOL_ERROR),
        (f.frame(f.SETTINGS, 0, 0, b"\x00\x05\x00\x00\x00\x01"), f.PROTOCOL_ERROR),  # frame size 1
        (f.frame(f.SETTINGS, 0, 0, b"\x00\x04\x80\x00\x00\x00"), f.FLOW_CONTROL_ERROR),
        (f.frame(f.SETTINGS, 0, 0, b"\x00\x04"), f.FRAME_SIZE_ERROR),
        (f.frame(f.WINDOW_UPDATE, 0, 0, b"\x00\x00\x00\x00"), f.PROTOCOL_ERROR),
        (f.frame(f.WINDOW_UPDATE, 0, 0, b"\x7f\xff\xff\xff"), f.FLOW_CONTROL_ERROR),
        (f.frame(f.RST_STREAM, 0, 9, b"\x00\x00\x00\x00"), f.PROTOCOL_ERROR),
        (f.frame(f.PUSH_PROMISE, 0, 1, b"\x00\x00\x00\x02"), f.PROTOCOL_ERROR),
        (f.FRAME_HEADER.pack(0, 16385, f.DATA, 0, 1), f.FRAME_SIZE_ERROR),
        (f.frame(f.HEADERS, f.END_HEADERS, 1, b"\x80"), 0x9),  # COMPRESSION_ERROR: index 0
        (f.frame(f.HEADERS, f.END_HEADERS, 1, b"\x00\x01a\x01\xff"), f.PROTOCOL_ERROR),  # not UTF-8
        (
            f.frame(f.HEADERS, f.END_HEADERS, 1, hpack.Encoder().encode([("x", "m" * 10240)])),
            f.ENHANCE_YOUR_CALM,
        ),
    ],
)
def test_protocol_errors_queue_goaway_with_their_code(data: bytes, code: int) -> None:
    assert _error_after_handshake(data)[0] == code


def test_data_beyond_the_connection_window() -> None:
    server, _, client = _pair()
    client.send_headers(1, REQUEST)
    server.receive(client.data_to_send())
    chunk = f.frame(f.DATA, 0, 1, b"z" * 16384)
    server.receive(chunk * 64)  # exactly the 1 MiB window
    with pytest.raises(f.Http2Error) as raised:
        server.receive(chunk)
    assert raised.value.error_code == f.FLOW_CONTROL_ERROR


def test_stream_errors_reset_that_stream_alone() -> None:
    server, recorder, client = _pair()
    client.send_headers(1, REQUEST, end_stream=True)
    server.receive(client.data_to_send())
    server.receive(f.frame(f.DATA, 0, 1, b"after its end"))  # half-closed (remote): STREAM_CLOSED
    assert recorder.events[-1] == ("reset", 1)
    events = client.receive_data(_take(server))
    assert [(type(e), e.error_code) for e in events] == [(h2.events.StreamReset, f.STREAM_CLOSED)]
    client.send_headers(3, REQUEST)
    server.receive(client.data_to_send())
    server.receive(f.frame(f.WINDOW_UPDATE, 0, 3, b"\x00\x00\x00\x00"))
    assert recorder.events[-1] == ("reset", 3)


@pytest.mark.parametrize(
    "data", [b"GET / HTTP/1.1\r\n\r\n", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + f.frame(f.PING, 0, 0, b"1" * 8)]
)
def test_wrong_preface(data: bytes) -> None:
    server, _ = _server()
    with pytest.raises(f.Http2Error) as raised:
        server.receive(data)
    assert raised.value.error_code == f.PROTOCOL_ERROR


def _conversation() -> bytes:
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    client.initiate_connection()
    for stream_id in (1, 3, 5):
        client.send_headers(stream_id, [*REQUEST, ("x-mq-request-id", f"id-{stream_id}")])
        client.send_data(
            stream_id, b"d" * (stream_id * 1000), pad_length=stream_id, end_stream=stream_id != 3
        )
    client.ping(b"abcdefgh")
    client.reset_stream(3)
    return client.data_to_send()


CONVERSATION = _conversation()


@settings(max_examples=100, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(CONVERSATION)), max_size=12))
def test_any_split_of_the_bytes_gives_the_same_events_and_answers(cuts: list[int]) -> None:
    whole, whole_events = _server()
    whole.receive(CONVERSATION)
    split, split_events = _server()
    points = sorted({0, *cuts, len(CONVERSATION)})
    for start, end in itertools.pairwise(points):
        split.receive(CONVERSATION[start:end])
    assert split_events.events == whole_events.events
    assert [e[0] for e in whole_events.events].count("request") == 3
    assert split.output == whole.output
