"""The hostile gRPC requests found by the wire fuzzer, each sent on a fresh HTTP/2 connection, and
what the server answered (its HTTP status, gRPC status, stream reset, and whether the connection
still answers a PING afterwards).

Used against our server (tests/gateway/test_grpc_hostile.py, tests/fault/test_grpc_fuzz.py) and,
by hand, against the real Proxy to read grpc-java's answers (``python -m tests.fault.grpc_hostile
HOST:PORT``).
"""

from __future__ import annotations

import contextlib
import gzip
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions

from gateway.transport.address import split_address
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

QUERY_ROUTE = "/apache.rocketmq.v2.MessagingService/QueryRoute"
_PREFIX = struct.Struct(">BI")
EXTRA_STREAMS = 1001  # one over the 1,000 concurrent calls our server admits
ANSWER_TIMEOUT_S = 10.0


def route_request() -> bytes:
    return pb.QueryRouteRequest(topic=pb.Resource(name="HostileTopic")).SerializeToString()


def frame(payload: bytes, compressed: bool = False) -> bytes:
    return _PREFIX.pack(int(compressed), len(payload)) + payload


def headers(
    *, method: str = "POST", content_type: str | None = "application/grpc", te: str | None = "trailers",
    extra: tuple[tuple[str, str], ...] = (),
) -> list[tuple[str, str]]:  # fmt: skip
    base = [(":method", method), (":scheme", "http"), (":path", QUERY_ROUTE), (":authority", "hostile")]
    if content_type is not None:
        base.append(("content-type", content_type))
    if te is not None:
        base.append(("te", te))
    return [*base, ("x-mq-client-id", "hostile"), ("x-mq-protocol", "v2"), *extra]


@dataclass
class Request:
    """One request: its headers, its body (already framed), how many copies are opened at once,
    and whether the client resets it in the same write (before any answer can come)."""

    headers: list[tuple[str, str]]
    body: bytes = field(default_factory=lambda: frame(route_request()))
    streams: int = 1
    reset: bool = False


CASES: dict[str, Callable[[], Request]] = {
    "unparsable protobuf": lambda: Request(headers(), frame(b"\x0a\xff\xff\xff\xff\xff")),
    "content-type text/html": lambda: Request(headers(content_type="text/html")),
    "content-type missing": lambda: Request(headers(content_type=None)),
    "method GET": lambda: Request(headers(method="GET")),
    "te: gzip": lambda: Request(headers(te="gzip")),
    "te missing": lambda: Request(headers(te=None)),
    "grpc-encoding gzip, gzip body": lambda: Request(
        headers(extra=(("grpc-encoding", "gzip"),)), frame(gzip.compress(route_request()), compressed=True)
    ),
    "grpc-encoding snappy": lambda: Request(
        headers(extra=(("grpc-encoding", "snappy"),)), frame(route_request(), compressed=True)
    ),
    "compressed flag, no grpc-encoding": lambda: Request(headers(), frame(route_request(), compressed=True)),
    "gzip body that is not gzip": lambda: Request(
        headers(extra=(("grpc-encoding", "gzip"),)), frame(b"not gzip at all", compressed=True)
    ),
    f"{EXTRA_STREAMS} streams at once": lambda: Request(headers(), streams=EXTRA_STREAMS),
    "9 KiB of metadata": lambda: Request(headers(extra=(("x-hostile", "m" * 9216),))),
    "16 KiB of metadata": lambda: Request(headers(extra=(("x-hostile", "m" * 16384),))),
    "method GET, reset at once": lambda: Request(headers(method="GET"), reset=True),
    "call reset at once": lambda: Request(headers(), reset=True),
}


@dataclass
class Answer:
    """What came back for the last stream of a request."""

    http_status: str | None = None
    grpc_status: str | None = None
    grpc_message: str | None = None
    reset: int | None = None  # RST_STREAM error code
    goaway: int | None = None  # GOAWAY error code
    refused_streams: int = 0  # streams reset with REFUSED_STREAM
    connection_alive: bool = False  # a PING sent afterwards was acknowledged
    headers: dict[str, str] = field(default_factory=dict)

    def brief(self) -> str:
        parts = [f"HTTP {self.http_status}" if self.http_status else "no headers"]
        if self.grpc_status is not None:
            parts.append(f"grpc-status {self.grpc_status} {self.grpc_message or ''}".rstrip())
        if self.reset is not None:
            parts.append(f"RST_STREAM {self.reset}")
        if self.refused_streams:
            parts.append(f"{self.refused_streams} REFUSED_STREAM")
        if self.goaway is not None:
            parts.append(f"GOAWAY {self.goaway}")
        parts.append("connection kept" if self.connection_alive else "connection closed")
        return ", ".join(parts)


def send(address: str, request: Request, timeout: float = ANSWER_TIMEOUT_S) -> Answer:
    """Send ``request`` on a new connection and wait for the last stream's end, then PING.
    Never raises for what the server does (a connection closed at once is an answer too)."""
    host, port = split_address(address)
    conn = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=True, header_encoding="utf-8", validate_outbound_headers=False)
    )
    conn.initiate_connection()
    conn.local_settings.max_header_list_size = 1 << 20
    answer = Answer()
    with socket.create_connection((host, port), timeout=timeout) as sock, contextlib.suppress(OSError):
        sock.sendall(conn.data_to_send())
        last = 0
        for index in range(request.streams - 1):  # held open: the last one is one too many
            conn.send_headers(1 + 2 * index, request.headers)
        last = 2 * request.streams - 1
        conn.send_headers(last, request.headers, end_stream=not request.body)
        if request.body:
            conn.send_data(last, request.body, end_stream=True)
        if request.reset:
            conn.reset_stream(last)
        sock.sendall(conn.data_to_send())
        done = request.reset or _read(sock, conn, answer, last, time.monotonic() + timeout)
        if done and answer.goaway is None:
            conn.ping(b"hostile!")
            with contextlib.suppress(OSError):
                sock.sendall(conn.data_to_send())
            answer.connection_alive = _read(sock, conn, answer, None, time.monotonic() + timeout)
    return answer


def _read(sock: socket.socket, conn: h2.connection.H2Connection, answer: Answer, stream: int | None,
          deadline: float) -> bool:  # fmt: skip
    """Read until ``stream`` ends (or, with None, a PING is acknowledged); False if the connection
    ended first or the deadline passed."""
    while (remaining := deadline - time.monotonic()) > 0:
        sock.settimeout(remaining)
        try:
            data = sock.recv(1 << 16)
        except OSError:
            return False
        if not data:
            return False
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            return False
        finished = False
        for event in events:
            if isinstance(event, h2.events.ResponseReceived | h2.events.TrailersReceived):
                got = dict(event.headers or [])
                answer.headers.update({str(k): str(v) for k, v in got.items()})
                if event.stream_id == stream:
                    answer.http_status = answer.headers.get(":status")
                    answer.grpc_status = answer.headers.get("grpc-status")
                    answer.grpc_message = answer.headers.get("grpc-message")
            elif isinstance(event, h2.events.StreamReset):
                if event.error_code == h2.errors.ErrorCodes.REFUSED_STREAM:
                    answer.refused_streams += 1
                if event.stream_id == stream:
                    answer.reset = int(event.error_code)
                    finished = True
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                finished = True
            elif isinstance(event, h2.events.ConnectionTerminated):
                answer.goaway = int(event.error_code or 0)
                return False
            elif isinstance(event, h2.events.PingAckReceived) and stream is None:
                return True
        with contextlib.suppress(OSError):
            sock.sendall(conn.data_to_send())
        if finished:
            return True
    return False


def main(address: str) -> None:
    for name, build in CASES.items():
        print(f"{name}: {send(address, build()).brief()}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
