"""The gRPC server on Trio, driven by a real gRPC client (grpcio) over plaintext and TLS.

The client runs in a worker thread (grpcio's blocking API) while the server runs in the test's
Trio loop; the h2-level checks (content-type, ALPN) use a hand-driven h2 client connection.
"""

from __future__ import annotations

import queue
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import h2.config
import h2.connection
import h2.events
import pytest
import trio

from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.connection import ServerCall, unary
from gateway.transport.grpc.server import GrpcServer
from gateway.transport.grpc.status import GrpcError, StatusCode
from gateway.transport.tls_config import ServerCertificate, make_self_signed, server_context
from tests.helpers import wait_until

ECHO = "/test.Echo/Unary"
STREAM = "/test.Echo/Stream"
REFUSE = "/test.Echo/Refuse"
BOOM = "/test.Echo/Boom"
SLOW = "/test.Echo/Slow"


async def _echo(request: bytes, call: ServerCall) -> bytes:
    return request + call.metadata.get("x-mq-client-id", "").encode()


async def _stream(call: ServerCall) -> None:
    """Answers each message at once: the client sees an answer before it half-closes."""
    while (message := await call.receive()) is not None:
        await call.send(message.upper())


async def _refuse(request: bytes, call: ServerCall) -> bytes:
    raise GrpcError(StatusCode.FAILED_PRECONDITION, "not now: 100% busy")


async def _boom(request: bytes, call: ServerCall) -> bytes:
    raise ZeroDivisionError("kaboom")


async def _slow(request: bytes, call: ServerCall) -> bytes:
    await trio.sleep(30)
    return request


METHODS = {
    ECHO: unary(_echo),
    STREAM: _stream,
    REFUSE: unary(_refuse),
    BOOM: unary(_boom),
    SLOW: unary(_slow),
}


@asynccontextmanager
async def serving(
    config: GrpcServerConfig | None = None, context: ssl.SSLContext | None = None
) -> AsyncIterator[GrpcServer]:
    server = GrpcServer(METHODS, config or GrpcServerConfig(grpc_server_port=0), context)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        yield server
        await server.shutdown()
        nursery.cancel_scope.cancel()


def _identity(data: bytes) -> bytes:
    return data


def _unary(channel: grpc.Channel, path: str, payload: bytes, **kwargs: Any) -> bytes:
    method = channel.unary_unary(path, request_serializer=_identity, response_deserializer=_identity)
    return method(payload, timeout=10, **kwargs)  # type: ignore[no-any-return]


async def _in_thread(fn: Callable[[], Any]) -> Any:
    return await trio.to_thread.run_sync(fn)


def _rpc_error(fn: Callable[[], Any]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        fn()
    return info.value


async def test_unary_plaintext_with_metadata() -> None:
    async with serving() as server:

        def call() -> bytes:
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                return _unary(channel, ECHO, b"hello-", metadata=[("x-mq-client-id", "c1")])

        assert await _in_thread(call) == b"hello-c1"
        assert server.statistics()["calls_started"] == 1


async def test_unary_over_tls_on_the_same_port(tmp_path: Path) -> None:
    cert, key = make_self_signed("localhost")
    (tmp_path / "c.pem").write_bytes(cert)
    (tmp_path / "k.pem").write_bytes(key)
    context = server_context(
        ServerCertificate(str(tmp_path / "c.pem"), str(tmp_path / "k.pem"), test_mode=False, alpn=("h2",))
    )
    async with serving(context=context) as server:

        def call() -> tuple[bytes, bytes]:
            credentials = grpc.ssl_channel_credentials(root_certificates=cert)
            options = [("grpc.ssl_target_name_override", "localhost")]
            with grpc.secure_channel(f"127.0.0.1:{server.port}", credentials, options) as tls:
                over_tls = _unary(tls, ECHO, b"tls")
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as plain:
                return over_tls, _unary(plain, ECHO, b"plain")

        assert await _in_thread(call) == (b"tls", b"plain")
        assert server.statistics()["tls_accepted"] == 1


def test_no_tls_without_certificate_unless_test_mode(tmp_path: Path) -> None:
    missing = ServerCertificate(str(tmp_path / "none.pem"), str(tmp_path / "none.key"), test_mode=False)
    assert server_context(missing) is None
    context = server_context(ServerCertificate(None, None, test_mode=True))
    assert context is not None


async def test_self_signed_certificate_negotiates_h2() -> None:
    """A TLS client that trusts anything (as the Java client does by default) gets ALPN h2."""
    self_signed = server_context(ServerCertificate(None, None, test_mode=True, alpn=("h2",)))
    async with serving(context=self_signed) as server:
        client_context = ssl.create_default_context()
        client_context.check_hostname = False
        client_context.verify_mode = ssl.CERT_NONE
        client_context.set_alpn_protocols(["h2"])
        tcp = await trio.open_tcp_stream("127.0.0.1", server.port)
        tls = trio.SSLStream(tcp, client_context, server_hostname="localhost")
        await tls.do_handshake()
        assert tls.selected_alpn_protocol() == "h2"
        status = await _raw_request(tls, ECHO, "application/grpc", b"\x00\x00\x00\x00\x02hi")
        assert status[":status"] == "200"
        assert status["grpc-status"] == "0"
        await tls.aclose()


async def _raw_request(stream: trio.abc.Stream, path: str, content_type: str, body: bytes) -> dict[str, str]:
    """One request on a hand-driven h2 client; returns the response headers and trailers merged."""
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "x"),
        ("content-type", content_type),
        ("te", "trailers"),
    ]
    conn.send_headers(1, headers)
    conn.send_data(1, body, end_stream=True)
    await stream.send_all(conn.data_to_send())
    seen: dict[str, str] = {}
    with trio.fail_after(10):
        while True:
            data = await stream.receive_some(65536)
            assert data, "server closed before answering"
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived | h2.events.TrailersReceived):
                    seen.update({str(k): str(v) for k, v in event.headers})
                if isinstance(event, h2.events.StreamEnded | h2.events.StreamReset):
                    return seen
            await stream.send_all(conn.data_to_send())


async def test_non_grpc_content_type_gets_415() -> None:
    async with serving() as server:
        stream = await trio.open_tcp_stream("127.0.0.1", server.port)
        seen = await _raw_request(stream, ECHO, "application/json", b"{}")
        assert seen[":status"] == "415"
        assert seen["grpc-status"] == str(int(StatusCode.INTERNAL))
        await stream.aclose()


async def test_header_value_not_utf8_closes_only_that_connection() -> None:
    async with serving() as server:
        stream = await trio.open_tcp_stream("127.0.0.1", server.port)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        conn.initiate_connection()
        headers = [
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", ECHO.encode()),
            (b":authority", b"x"),
            (b"content-type", b"application/grpc"),
            (b"x-mq-client-id", b"\xff\xfe\xfd"),
        ]
        conn.send_headers(1, headers, end_stream=True)
        await stream.send_all(conn.data_to_send())
        ended = False
        with trio.fail_after(10):
            while not ended:
                data = await stream.receive_some(65536)
                ended = not data or any(
                    isinstance(e, h2.events.ConnectionTerminated) for e in conn.receive_data(data)
                )
        await stream.aclose()

        def call() -> bytes:
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                return _unary(channel, ECHO, b"still up")

        assert await _in_thread(call) == b"still up"


async def test_an_unexpected_error_in_one_connection_leaves_the_server_up(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from gateway.transport.grpc.connection import Connection

    original = Connection.on_request
    # Every request fails while the first channel calls: grpcio may retry a call transparently on
    # a new connection when the first one goes away before answering, and that retry must fail too.
    failing = [True]

    def fail_while_asked(self: Connection, stream_id: int, headers: list[tuple[str, str]]) -> None:
        if failing[0]:
            raise RuntimeError("a fault of this connection")
        original(self, stream_id, headers)

    monkeypatch.setattr(Connection, "on_request", fail_while_asked)
    async with serving() as server:

        def call() -> tuple[grpc.RpcError, bytes]:
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as first:
                err = _rpc_error(lambda: _unary(first, ECHO, b"x"))
            failing[0] = False
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as second:
                return err, _unary(second, ECHO, b"still up")

        err, after = await _in_thread(call)
        assert err.code() == grpc.StatusCode.UNAVAILABLE
        assert after == b"still up"
    assert "closed on an unexpected error: RuntimeError('a fault of this connection')" in caplog.text


async def test_unknown_method_unimplemented_and_connection_stays_usable() -> None:
    async with serving() as server:

        def call() -> tuple[grpc.RpcError, bytes]:
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                err = _rpc_error(lambda: _unary(channel, "/test.Echo/Nope", b"x"))
                return err, _unary(channel, ECHO, b"after")

        err, after = await _in_thread(call)
        assert err.code() == grpc.StatusCode.UNIMPLEMENTED
        assert "test.Echo/Nope" in err.details()
        assert after == b"after"


async def test_oversized_message_resource_exhausted() -> None:
    async with serving(GrpcServerConfig(grpc_server_port=0, grpc_max_inbound_message_size=1024)) as server:

        def call() -> tuple[grpc.RpcError, bytes]:
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                err = _rpc_error(lambda: _unary(channel, ECHO, b"x" * 200_000))
                return err, _unary(channel, ECHO, b"x" * 1000)

        err, small = await _in_thread(call)
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "1024" in err.details()
        assert small == b"x" * 1000


async def test_handler_errors_become_statuses() -> None:
    async with serving() as server:

        def call() -> list[grpc.RpcError]:
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                return [_rpc_error(lambda p=p: _unary(channel, p, b"x")) for p in (REFUSE, BOOM)]  # type: ignore[misc]

        refused, boom = await _in_thread(call)
        assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert refused.details() == "not now: 100% busy"
        assert boom.code() == grpc.StatusCode.INTERNAL
        assert "kaboom" not in boom.details()


async def test_deadline_ends_a_slow_call() -> None:
    async with serving() as server:

        def call() -> grpc.RpcError:
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                method = channel.unary_unary(
                    SLOW, request_serializer=_identity, response_deserializer=_identity
                )
                return _rpc_error(lambda: method(b"x", timeout=0.5))

        err = await _in_thread(call)
        assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        await wait_until(lambda: not any(c.calls for c in server.connections.values()), 10)


async def test_bidirectional_stream_answers_before_half_close() -> None:
    async with serving() as server:

        def call() -> list[bytes]:
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                method = channel.stream_stream(
                    STREAM, request_serializer=_identity, response_deserializer=_identity
                )
                answers: list[bytes] = []
                outbox: queue.Queue[bytes | None] = queue.Queue()

                def requests() -> Iterator[bytes]:
                    while (item := outbox.get()) is not None:
                        yield item

                responses = method(requests(), timeout=10)
                for word in (b"one", b"two", b"x" * 300_000):
                    outbox.put(word)
                    answers.append(next(responses))
                outbox.put(None)
                assert list(responses) == []
                return answers

        answers = await _in_thread(call)
        assert answers == [b"ONE", b"TWO", b"X" * 300_000]
