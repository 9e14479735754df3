"""The server side of one HTTP/2 connection (RFC 9113) as gRPC uses it; no I/O, no Trio.

:class:`ServerHttp2` takes the bytes a client sent (:meth:`~ServerHttp2.receive`) and tells its
:class:`Http2Listener` what happened on which stream; what the server answers (frames) is queued
in :attr:`~ServerHttp2.output`, taken whole by the connection's writer. It implements what a gRPC
server needs and no more: the client preface, SETTINGS (ours: MAX_CONCURRENT_STREAMS,
MAX_HEADER_LIST_SIZE, INITIAL_WINDOW_SIZE; the client's: its windows and frame size), HEADERS and
CONTINUATION (HPACK in :mod:`gateway.transport.grpc.header_block`), DATA with flow control both
ways, PING (answered at once), RST_STREAM, GOAWAY (both ways), padding; PRIORITY and unknown
frame types are ignored; no server push.

A violation of the protocol queues GOAWAY with its error code (PROTOCOL_ERROR, FRAME_SIZE_ERROR,
FLOW_CONTROL_ERROR, COMPRESSION_ERROR, ...) and raises :class:`Http2Error`: the connection then
ends. An error confined to a stream resets that stream (RST_STREAM) and the connection goes on.
Frames for a stream the server closed or reset are dropped (their flow-controlled length is given
back to the connection window), as RFC 9113 5.1 lets a closing endpoint do.

Stream states are kept per open stream in :class:`StreamWindows` (a stream is forgotten once both
sides ended it or it was reset): whether the client may still send on it, whether the server may,
and the two windows. The stream limit is the gRPC connection's business (it refuses a stream
beyond it with REFUSED_STREAM), so nothing here counts streams.
"""

from __future__ import annotations

from typing import Protocol

from gateway.transport.grpc.h2_frames import (
    ACK,
    CONTINUATION,
    DATA,
    DEFAULT_FRAME_SIZE,
    DEFAULT_WINDOW,
    END_HEADERS,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    FLOW_CONTROL_ERROR,
    FRAME_HEADER,
    FRAME_HEADER_SIZE,
    FRAME_SIZE_ERROR,
    GOAWAY,
    GOAWAY_PAYLOAD,
    HEADERS,
    MAX_FRAME_SIZE_LIMIT,
    MAX_HEADER_BLOCK,
    MAX_WINDOW,
    NO_ERROR,
    PING,
    PREFACE,
    PRIORITY,
    PRIORITY_FLAG,
    PROTOCOL_ERROR,
    PUSH_PROMISE,
    RST_STREAM,
    SETTING,
    SETTINGS,
    SETTINGS_ENABLE_PUSH,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_CONCURRENT_STREAMS,
    SETTINGS_MAX_FRAME_SIZE,
    SETTINGS_MAX_HEADER_LIST_SIZE,
    STREAM_CLOSED,
    UINT32,
    WINDOW_UPDATE,
    Http2Error,
    StreamClosed,
    StreamWindows,
    frame,
    unpad,
)
from gateway.transport.grpc.header_block import HeaderBlockError, HeaderDecoder, encode_headers


class Http2Listener(Protocol):
    """What the connection is told, in the order of the frames."""

    def on_request(self, stream_id: int, headers: list[tuple[str, str]]) -> None: ...

    def on_data(self, stream_id: int, data: bytes, flow_length: int) -> None: ...

    def on_end(self, stream_id: int) -> None: ...

    def on_reset(self, stream_id: int) -> None: ...

    def on_window(self) -> None: ...

    def on_goaway(self) -> None: ...


class ServerHttp2:
    """The HTTP/2 state of one server connection (see the module)."""

    def __init__(
        self,
        listener: Http2Listener,
        *,
        max_concurrent_streams: int,
        max_header_list_size: int,
        header_list_goaway_size: int,
        window: int,
    ) -> None:
        self.listener = listener
        #: Frames queued for the peer; the writer takes them (and clears it).
        self.output = bytearray()
        self.streams: dict[int, StreamWindows] = {}
        self.decoder = HeaderDecoder(header_list_goaway_size)
        self.last_stream_id = 0  # the highest stream the client opened
        self.closed = False  # GOAWAY sent or received: no new streams
        self.send_window = DEFAULT_WINDOW  # the connection's, for our DATA
        self.peer_initial_window = DEFAULT_WINDOW
        self.peer_max_frame_size = DEFAULT_FRAME_SIZE
        self._window = window  # our INITIAL_WINDOW_SIZE and connection window
        self._recv_window = window
        self._unacked = 0  # connection window consumed and not yet given back
        self._buffer = bytearray()
        self._preface = False
        self._settings_seen = False
        self._block = bytearray()  # a header block awaiting its CONTINUATION
        self._block_stream = 0
        self._block_end_stream = False
        settings = b"".join(
            SETTING.pack(key, value)
            for key, value in (
                (SETTINGS_MAX_CONCURRENT_STREAMS, max_concurrent_streams),
                (SETTINGS_MAX_HEADER_LIST_SIZE, max_header_list_size),
                (SETTINGS_INITIAL_WINDOW_SIZE, window),
            )
        )
        self.output += frame(SETTINGS, 0, 0, settings)
        if window > DEFAULT_WINDOW:
            self.output += frame(WINDOW_UPDATE, 0, 0, UINT32.pack(window - DEFAULT_WINDOW))

    # -- receiving --------------------------------------------------------------------------

    def receive(self, data: bytes | bytearray) -> None:
        """Process what the client sent; the listener hears of every event. Raises Http2Error
        (after queueing GOAWAY)."""
        try:
            self._receive(data)
        except Http2Error as err:
            self.goaway(err.error_code, str(err))
            raise
        except HeaderBlockError as err:
            self.goaway(err.error_code, str(err))
            raise Http2Error(err.error_code, str(err)) from None

    def _receive(self, data: bytes | bytearray) -> None:
        if self._buffer:
            self._buffer += data
            data = bytes(self._buffer)
            self._buffer.clear()
        view = memoryview(data)
        pos = 0
        if not self._preface:
            if len(data) < len(PREFACE):
                if not PREFACE.startswith(data):
                    raise Http2Error(PROTOCOL_ERROR, "not the HTTP/2 client preface")
                self._buffer += data
                return
            if view[: len(PREFACE)] != PREFACE:
                raise Http2Error(PROTOCOL_ERROR, "not the HTTP/2 client preface")
            self._preface = True
            pos = len(PREFACE)
        end = len(data)
        unpack = FRAME_HEADER.unpack_from
        while end - pos >= FRAME_HEADER_SIZE:
            high, low, frame_type, flags, stream_id = unpack(view, pos)
            length = high << 16 | low
            if length > DEFAULT_FRAME_SIZE:
                raise Http2Error(FRAME_SIZE_ERROR, f"frame of {length} bytes over {DEFAULT_FRAME_SIZE}")
            start = pos + FRAME_HEADER_SIZE
            if end - start < length:
                break
            pos = start + length
            self._frame(frame_type, flags, stream_id & 0x7FFFFFFF, view[start:pos])
        if pos < end:
            self._buffer += view[pos:]

    def _frame(self, frame_type: int, flags: int, stream_id: int, payload: memoryview) -> None:
        if self._block_stream and frame_type != CONTINUATION:
            raise Http2Error(PROTOCOL_ERROR, "header block interrupted before END_HEADERS")
        if not self._settings_seen:
            if frame_type != SETTINGS or flags & ACK:
                raise Http2Error(PROTOCOL_ERROR, "the client preface must go on with SETTINGS")
            self._settings_seen = True
        if frame_type == DATA:
            self._data(flags, stream_id, payload)
        elif frame_type == HEADERS:
            self._headers(flags, stream_id, payload)
        elif frame_type == CONTINUATION:
            self._continuation(flags, stream_id, payload)
        elif frame_type == WINDOW_UPDATE:
            self._window_update(stream_id, payload)
        elif frame_type == PING:
            if stream_id:
                raise Http2Error(PROTOCOL_ERROR, "PING on a stream")
            if len(payload) != 8:
                raise Http2Error(FRAME_SIZE_ERROR, "PING of other than 8 bytes")
            if not flags & ACK:
                self._queue(frame(PING, ACK, 0, bytes(payload)))
        elif frame_type == SETTINGS:
            self._settings(flags, stream_id, payload)
        elif frame_type == RST_STREAM:
            self._rst_stream(stream_id, payload)
        elif frame_type == GOAWAY:
            if stream_id:
                raise Http2Error(PROTOCOL_ERROR, "GOAWAY on a stream")
            if len(payload) < 8:
                raise Http2Error(FRAME_SIZE_ERROR, "GOAWAY shorter than 8 bytes")
            self.closed = True
            self.listener.on_goaway()
        elif frame_type == PRIORITY:
            if not stream_id:
                raise Http2Error(PROTOCOL_ERROR, "PRIORITY on stream 0")
            if len(payload) != 5:
                raise Http2Error(FRAME_SIZE_ERROR, "PRIORITY of other than 5 bytes")
        elif frame_type == PUSH_PROMISE:
            raise Http2Error(PROTOCOL_ERROR, "PUSH_PROMISE from a client")
        # Any other type is an extension this server does not know: ignored (RFC 9113 5.5).

    def _data(self, flags: int, stream_id: int, payload: memoryview) -> None:
        if not stream_id:
            raise Http2Error(PROTOCOL_ERROR, "DATA on stream 0")
        length = len(payload)
        if length > self._recv_window:
            raise Http2Error(FLOW_CONTROL_ERROR, "DATA beyond the connection window")
        self._recv_window -= length
        body = unpad(flags, payload)
        stream = self.streams.get(stream_id)
        if stream is None or not stream.recv_open:
            if self._idle(stream_id):
                raise Http2Error(PROTOCOL_ERROR, f"DATA on idle stream {stream_id}")
            self.acknowledge(0, length)  # a closed stream's: given back at once
            if stream is not None:
                self._stream_error(stream_id, STREAM_CLOSED)
            return
        if length > stream.recv_window:
            self.acknowledge(0, length)
            self._stream_error(stream_id, FLOW_CONTROL_ERROR)
            return
        stream.recv_window -= length
        self.listener.on_data(stream_id, bytes(body), length)
        if flags & END_STREAM:
            self._end_inbound(stream_id, stream)

    def _headers(self, flags: int, stream_id: int, payload: memoryview) -> None:
        if not stream_id or not stream_id & 1:
            raise Http2Error(PROTOCOL_ERROR, f"HEADERS on stream {stream_id}")
        block = unpad(flags, payload)
        if flags & PRIORITY_FLAG:
            if len(block) < 5:
                raise Http2Error(FRAME_SIZE_ERROR, "HEADERS too short for its priority")
            block = block[5:]
        if flags & END_HEADERS:
            self._header_block(stream_id, block, bool(flags & END_STREAM))
        else:
            self._block_stream = stream_id
            self._block_end_stream = bool(flags & END_STREAM)
            self._block += block

    def _continuation(self, flags: int, stream_id: int, payload: memoryview) -> None:
        if not self._block_stream or stream_id != self._block_stream:
            raise Http2Error(PROTOCOL_ERROR, "CONTINUATION without its HEADERS")
        self._block += payload
        if len(self._block) > MAX_HEADER_BLOCK:
            raise Http2Error(ENHANCE_YOUR_CALM, f"header block over {MAX_HEADER_BLOCK} bytes")
        if flags & END_HEADERS:
            block = bytes(self._block)
            self._block.clear()
            self._block_stream = 0
            self._header_block(stream_id, block, self._block_end_stream)

    def _header_block(self, stream_id: int, block: bytes | memoryview, end_stream: bool) -> None:
        headers = self.decoder.decode(block)  # always: the dynamic table must stay in step
        stream = self.streams.get(stream_id)
        if stream is not None:  # trailers: gRPC clients send none, but they must end the stream
            if not stream.recv_open:
                self._stream_error(stream_id, STREAM_CLOSED)
            elif not end_stream:
                self._stream_error(stream_id, PROTOCOL_ERROR)
            else:
                self._end_inbound(stream_id, stream)
            return
        if stream_id <= self.last_stream_id or self.closed:
            return  # a stream already closed, or opened after GOAWAY: ignored
        self.last_stream_id = stream_id
        stream = StreamWindows(self.peer_initial_window, self._window)
        self.streams[stream_id] = stream
        self.listener.on_request(stream_id, headers)
        if end_stream and stream_id in self.streams:
            self._end_inbound(stream_id, stream)

    def _end_inbound(self, stream_id: int, stream: StreamWindows) -> None:
        stream.recv_open = False
        if not stream.send_open:
            del self.streams[stream_id]
        self.listener.on_end(stream_id)

    def _window_update(self, stream_id: int, payload: memoryview) -> None:
        if len(payload) != 4:
            raise Http2Error(FRAME_SIZE_ERROR, "WINDOW_UPDATE of other than 4 bytes")
        increment = UINT32.unpack_from(payload)[0] & 0x7FFFFFFF
        if not stream_id:
            if not increment:
                raise Http2Error(PROTOCOL_ERROR, "WINDOW_UPDATE of 0")
            self.send_window += increment
            if self.send_window > MAX_WINDOW:
                raise Http2Error(FLOW_CONTROL_ERROR, "connection window over 2^31-1")
        else:
            stream = self.streams.get(stream_id)
            if stream is None:
                if self._idle(stream_id):
                    raise Http2Error(PROTOCOL_ERROR, f"WINDOW_UPDATE on idle stream {stream_id}")
                return
            if not increment:
                self._stream_error(stream_id, PROTOCOL_ERROR)
                return
            stream.send_window += increment
            if stream.send_window > MAX_WINDOW:
                self._stream_error(stream_id, FLOW_CONTROL_ERROR)
                return
        self.listener.on_window()

    def _settings(self, flags: int, stream_id: int, payload: memoryview) -> None:
        if stream_id:
            raise Http2Error(PROTOCOL_ERROR, "SETTINGS on a stream")
        if flags & ACK:
            if payload:
                raise Http2Error(FRAME_SIZE_ERROR, "SETTINGS ACK with a payload")
            return
        if len(payload) % 6:
            raise Http2Error(FRAME_SIZE_ERROR, "SETTINGS not a multiple of 6 bytes")
        for key, value in SETTING.iter_unpack(payload):
            if key == SETTINGS_INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    raise Http2Error(FLOW_CONTROL_ERROR, f"SETTINGS_INITIAL_WINDOW_SIZE {value}")
                delta = value - self.peer_initial_window
                self.peer_initial_window = value
                for stream in self.streams.values():
                    stream.send_window += delta
                    if stream.send_window > MAX_WINDOW:
                        raise Http2Error(FLOW_CONTROL_ERROR, "a stream window over 2^31-1")
            elif key == SETTINGS_MAX_FRAME_SIZE:
                if not DEFAULT_FRAME_SIZE <= value <= MAX_FRAME_SIZE_LIMIT:
                    raise Http2Error(PROTOCOL_ERROR, f"SETTINGS_MAX_FRAME_SIZE {value}")
                self.peer_max_frame_size = value
            elif key == SETTINGS_ENABLE_PUSH and value > 1:
                raise Http2Error(PROTOCOL_ERROR, f"SETTINGS_ENABLE_PUSH {value}")
            # HEADER_TABLE_SIZE needs nothing: our header blocks never use the dynamic table.
        self._queue(frame(SETTINGS, ACK, 0))
        self.listener.on_window()

    def _rst_stream(self, stream_id: int, payload: memoryview) -> None:
        if not stream_id:
            raise Http2Error(PROTOCOL_ERROR, "RST_STREAM on stream 0")
        if len(payload) != 4:
            raise Http2Error(FRAME_SIZE_ERROR, "RST_STREAM of other than 4 bytes")
        if self._idle(stream_id):
            raise Http2Error(PROTOCOL_ERROR, f"RST_STREAM on idle stream {stream_id}")
        if self.streams.pop(stream_id, None) is not None:
            self.listener.on_reset(stream_id)

    def _idle(self, stream_id: int) -> bool:
        """A stream the client has not opened; after GOAWAY, frames of streams the server will
        not serve are dropped instead (RFC 9113 6.8)."""
        return stream_id > self.last_stream_id and not self.closed

    # -- sending ----------------------------------------------------------------------------

    def _queue(self, data: bytes) -> None:
        if not self.closed or data[3] == GOAWAY:
            self.output += data

    def acknowledge(self, stream_id: int, length: int) -> None:
        """``length`` bytes of DATA were consumed: give them back to the connection window (and
        the stream's while it may still send), with WINDOW_UPDATE once half a window is due."""
        self._unacked += length
        if self._unacked >= self._window // 2:
            self._recv_window += self._unacked
            self._queue(frame(WINDOW_UPDATE, 0, 0, UINT32.pack(self._unacked)))
            self._unacked = 0
        stream = self.streams.get(stream_id) if stream_id else None
        if stream is not None and stream.recv_open:
            stream.unacked += length
            if stream.unacked >= self._window // 2:
                stream.recv_window += stream.unacked
                self._queue(frame(WINDOW_UPDATE, 0, stream_id, UINT32.pack(stream.unacked)))
                stream.unacked = 0

    def send_headers(self, stream_id: int, headers: list[tuple[str, str]], end_stream: bool = False) -> None:
        """Queue HEADERS (and CONTINUATION frames, for a block over the peer's frame size).
        Raises StreamClosed."""
        stream = self._sending(stream_id)
        block = encode_headers(headers)
        size = self.peer_max_frame_size
        flags = END_STREAM if end_stream else 0
        if len(block) <= size:
            self._queue(frame(HEADERS, flags | END_HEADERS, stream_id, block))
        else:
            self._queue(frame(HEADERS, flags, stream_id, block[:size]))
            for at in range(size, len(block), size):
                last = at + size >= len(block)
                self._queue(frame(CONTINUATION, END_HEADERS if last else 0, stream_id, block[at : at + size]))
        if end_stream:
            self._end_outbound(stream_id, stream)

    def send_window_of(self, stream_id: int) -> int:
        """How many DATA bytes the stream may send now (both windows). Raises StreamClosed."""
        return min(self.send_window, self._sending(stream_id).send_window)

    def send_data(self, stream_id: int, data: bytes | memoryview, end_stream: bool = False) -> None:
        """Queue one DATA frame; ``data`` must fit :meth:`send_window_of` and the peer's frame size.
        Raises StreamClosed."""
        stream = self._sending(stream_id)
        length = len(data)
        stream.send_window -= length
        self.send_window -= length
        flags = END_STREAM if end_stream else 0
        self.output += FRAME_HEADER.pack(length >> 16, length & 0xFFFF, DATA, flags, stream_id)
        self.output += data
        if end_stream:
            self._end_outbound(stream_id, stream)

    def end_stream(self, stream_id: int) -> None:
        """An empty DATA frame with END_STREAM. Raises StreamClosed."""
        self.send_data(stream_id, b"", end_stream=True)

    def reset(self, stream_id: int, error_code: int = NO_ERROR) -> None:
        """The server ends a stream: RST_STREAM, and the stream is forgotten (nothing if it is
        closed already). The listener is not told: it asked."""
        if self.streams.pop(stream_id, None) is not None:
            self._queue(frame(RST_STREAM, 0, stream_id, UINT32.pack(error_code)))

    def _stream_error(self, stream_id: int, error_code: int) -> None:
        """The client broke the protocol on one stream: it is reset, the listener told."""
        if self.streams.pop(stream_id, None) is not None:
            self._queue(frame(RST_STREAM, 0, stream_id, UINT32.pack(error_code)))
            self.listener.on_reset(stream_id)

    def goaway(self, error_code: int = NO_ERROR, debug: str = "") -> None:
        """Queue GOAWAY (once): no stream after the last one opened will be served."""
        if self.closed and error_code == NO_ERROR:
            return
        payload = GOAWAY_PAYLOAD.pack(self.last_stream_id, error_code) + debug.encode(errors="replace")[:256]
        self.closed = True
        self.output += frame(GOAWAY, 0, 0, payload)

    def _sending(self, stream_id: int) -> StreamWindows:
        stream = self.streams.get(stream_id)
        if stream is None or not stream.send_open or self.closed:
            raise StreamClosed(stream_id)
        return stream

    def _end_outbound(self, stream_id: int, stream: StreamWindows) -> None:
        stream.send_open = False
        if not stream.recv_open:
            del self.streams[stream_id]
