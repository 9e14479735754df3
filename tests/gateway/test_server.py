"""The Trio server and connections: dispatch rules, peer calls, bad input, limits and shutdown."""

from __future__ import annotations

import math
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from codec.codes import RequestCode, ResponseCode, SerializeType
from codec.command import RemotingCommand
from codec.frame import FrameDecoder, encode_frame
from codec.headers.client import GetConsumerListByGroupRequestHeader
from gateway.transport.client import connect
from gateway.transport.config import ServerConfig
from gateway.transport.connection import PeerClosedError, PeerTimeoutError
from gateway.transport.dispatch import Dispatcher, RequestContext
from gateway.transport.server import RemotingServer
from tests.helpers import wait_until

ECHO = 9001
SLOW = 9002
BOOM = 9003
CALL_BACK = 9004


def _echo(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    return req.make_response(ResponseCode.SUCCESS, header={"conn": str(ctx.connection.id)}, body=req.body)


async def _slow(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    await trio.sleep(float((req.ext_fields or {}).get("seconds", "0.5")))
    return req.make_response(ResponseCode.SUCCESS, remark="slept")


def _boom(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    raise ZeroDivisionError("kaboom")


async def _call_back(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    assert ctx.connection.peer is not None
    answer = await ctx.connection.peer.invoke(RemotingCommand.request(ECHO, body=b"ping"), timeout_s=2)
    return req.make_response(ResponseCode.SUCCESS, body=answer.body + b"/pong")


def _group(
    ctx: RequestContext, req: RemotingCommand, header: GetConsumerListByGroupRequestHeader
) -> RemotingCommand:
    return req.make_response(ResponseCode.SUCCESS, remark=header.consumer_group)


def make_dispatcher() -> Dispatcher:
    d = Dispatcher("test")
    d.register(ECHO, _echo)
    d.register(SLOW, _slow)
    d.register(BOOM, _boom)
    d.register(CALL_BACK, _call_back)
    d.register(RequestCode.GET_CONSUMER_LIST_BY_GROUP, _group, GetConsumerListByGroupRequestHeader)
    return d


@asynccontextmanager
async def running_server(**overrides: Any) -> AsyncIterator[RemotingServer]:
    server = RemotingServer(make_dispatcher(), ServerConfig(**overrides), name="test")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()


def addr(server: RemotingServer) -> str:
    return f"127.0.0.1:{server.port}"


@pytest.mark.parametrize("serialize", list(SerializeType))
async def test_request_response(serialize: SerializeType) -> None:
    async with running_server() as server, connect(addr(server)) as conn:
        req = RemotingCommand.request(ECHO, {"k": "v"}, body=b"hello", serialize_type=serialize)
        resp = await conn.invoke(req, timeout_s=2)
        assert (resp.code, resp.body, resp.serialize_type) == (ResponseCode.SUCCESS, b"hello", serialize)
        assert resp.is_response


async def test_unknown_code_error_and_header_error_keep_the_connection() -> None:
    async with running_server() as server, connect(addr(server)) as conn:
        resp = await conn.invoke(RemotingCommand.request(4242), timeout_s=2)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert resp.remark == " request type 4242 not supported"
        resp = await conn.invoke(RemotingCommand.request(BOOM), timeout_s=2)
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert "kaboom" in (resp.remark or "")
        resp = await conn.invoke(RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP), timeout_s=2)
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert "consumerGroup" in (resp.remark or "")
        req = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "g1"})
        assert (await conn.invoke(req, timeout_s=2)).remark == "g1"
        assert server.dispatcher.statistics()["errors"] == 2


async def _raw(server: RemotingServer) -> trio.SocketStream:
    return await trio.open_tcp_stream("127.0.0.1", server.port)


async def _read_frames(stream: trio.SocketStream, count: int, seconds: float = 2) -> list[RemotingCommand]:
    decoder = FrameDecoder()
    got: list[RemotingCommand] = []
    with trio.fail_after(seconds):
        while len(got) < count:
            data = await stream.receive_some(65536)
            assert data, "connection closed early"
            got += decoder.feed(data)
    return got


async def test_oneway_gets_no_response_even_on_error() -> None:
    async with running_server() as server:
        stream = await _raw(server)
        oneway = RemotingCommand.request(BOOM, opaque=1, oneway=True)
        unknown = RemotingCommand.request(4242, opaque=2, oneway=True)
        normal = RemotingCommand.request(ECHO, opaque=3)
        await stream.send_all(encode_frame(oneway) + encode_frame(unknown) + encode_frame(normal))
        (resp,) = await _read_frames(stream, 1)
        assert resp.opaque == 3
        with trio.move_on_after(0.3):
            assert await stream.receive_some(100) == b"", "no further frames expected"
        await stream.aclose()


async def test_server_calls_the_client_back() -> None:
    client_side = Dispatcher("client")
    client_side.register(ECHO, _echo)
    async with running_server() as server, connect(addr(server), client_side) as conn:
        resp = await conn.invoke(RemotingCommand.request(CALL_BACK), timeout_s=3)
        assert resp.body == b"ping/pong"


async def test_peer_call_timeout_and_disconnect() -> None:
    async with running_server() as server, connect(addr(server)) as conn:
        with pytest.raises(PeerTimeoutError):
            # The server handles SLOW in 1 s; we only wait 0.2 s.
            await conn.invoke(RemotingCommand.request(SLOW, {"seconds": "1"}), timeout_s=0.2)

        async def close_soon() -> None:
            await trio.sleep(0.2)
            for c in list(server.connections.values()):
                c.close()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(close_soon)
            with pytest.raises(PeerClosedError):
                await conn.invoke(RemotingCommand.request(SLOW, {"seconds": "5"}), timeout_s=3)


async def test_no_call_to_the_peer_once_the_connection_stops_reading() -> None:
    """Its answer could no longer be read: the call fails at once, the handler in flight still
    answers."""
    async with running_server(shutdown_grace_s=5) as server, connect(addr(server)) as conn:
        answers: list[RemotingCommand] = []

        async def call_slow() -> None:
            answers.append(await conn.invoke(RemotingCommand.request(SLOW, {"seconds": "1"}), timeout_s=5))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call_slow)
            await wait_until(lambda: server.connections, 5)
            (server_side,) = server.connections.values()
            await wait_until(lambda: server_side.statistics()["in_flight"] == 1, 5)
            server_side.stop_reading()
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(PeerClosedError, match="draining"):
                await server_side.invoke(RemotingCommand.request(ECHO), timeout_s=5)
            with pytest.raises(PeerClosedError):
                await server_side.invoke_oneway(RemotingCommand.request(ECHO))
            assert answers == []  # failed before the drain ended
        assert answers[0].remark == "slept"


async def test_a_caller_waiting_for_room_fails_when_the_connection_closes() -> None:
    """A peer that reads nothing: one large frame fills the outbox (``send_queue_size=1``), a
    second caller waits for room and gets PeerClosedError when the connection closes."""
    async with running_server(send_queue_size=1) as server:
        stream = await _raw(server)
        await wait_until(lambda: server.connections, 5)
        (server_side,) = server.connections.values()
        large = RemotingCommand.request(ECHO, body=b"x" * (16 * 1024 * 1024))  # beyond socket buffers
        assert server_side.try_invoke_oneway(large)
        failures: list[Exception] = []

        async def notify() -> None:
            try:
                await server_side.invoke_oneway(RemotingCommand.request(ECHO))
            except PeerClosedError as err:
                failures.append(err)

        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(notify)
                await trio.testing.wait_all_tasks_blocked()
                assert server_side.statistics()["queued_frames"] == 1  # the large one, unwritten
                server_side.close()
        assert len(failures) == 1
        await trio.aclose_forcefully(stream)


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(b"GET / HTTP/1.1\r\n\r\n", id="http"),
        pytest.param(struct.pack(">i", 64 * 1024 * 1024) + b"xxxx", id="over-limit"),
        pytest.param(struct.pack(">i", -5), id="negative-length"),
        pytest.param(struct.pack(">iI", 10, 0x07000002) + b"{}xxxx", id="bad-serialize-type"),
    ],
)
async def test_garbage_closes_only_that_connection(garbage: bytes, caplog: pytest.LogCaptureFixture) -> None:
    async with running_server() as server, connect(addr(server)) as good:
        stream = await _raw(server)
        await stream.send_all(garbage)
        with trio.fail_after(2):
            assert await stream.receive_some(100) == b""
        assert "bad frame" in caplog.text
        assert (await good.invoke(RemotingCommand.request(ECHO), timeout_s=2)).code == ResponseCode.SUCCESS


async def test_truncated_frame_then_silence_is_closed() -> None:
    async with running_server(idle_timeout_s=0.3) as server:
        stream = await _raw(server)
        await stream.send_all(encode_frame(RemotingCommand.request(ECHO, body=b"x" * 100))[:20])
        with trio.fail_after(2):
            assert await stream.receive_some(100) == b""


async def test_one_byte_a_while_is_closed_when_the_frame_never_completes() -> None:
    async with running_server(idle_timeout_s=0.5) as server:
        stream = await _raw(server)
        frame = encode_frame(RemotingCommand.request(ECHO, body=b"x" * 50))
        closed = False
        with trio.fail_after(3):
            for byte in frame:
                # Closed shows as EOF, or as a reset when the server closed with our last byte
                # unread (on the send or on the receive that follows).
                try:
                    await stream.send_all(bytes([byte]))
                    with trio.move_on_after(0.1):
                        if await stream.receive_some(10) == b"":
                            closed = True
                            break
                except trio.BrokenResourceError:
                    closed = True
                    break
        assert closed
        async with connect(addr(server)) as good:
            assert (
                await good.invoke(RemotingCommand.request(ECHO), timeout_s=2)
            ).code == ResponseCode.SUCCESS


async def test_many_idle_connections_are_served_and_expire() -> None:
    # Counted by accepts, not by connections open at once: on a loaded machine the first idle
    # ones may already have expired when the last is accepted.
    async with running_server(idle_timeout_s=1.0) as server:
        streams = [await _raw(server) for _ in range(500)]
        await wait_until(lambda: server.accepted >= 500, 10)
        async with connect(addr(server)) as good:
            assert (
                await good.invoke(RemotingCommand.request(ECHO), timeout_s=2)
            ).code == ResponseCode.SUCCESS
        await wait_until(lambda: not (server.connections), 10)
        assert server.refused == 0
        for s in streams:
            await s.aclose()


async def test_max_connections_refuses_extra() -> None:
    async with running_server(max_connections=2) as server:
        a, b = await _raw(server), await _raw(server)
        await wait_until(lambda: not (len(server.connections) < 2), 2)
        c = await _raw(server)
        with trio.fail_after(2):
            assert await c.receive_some(10) == b""
        assert server.refused == 1
        for s in (a, b, c):
            await s.aclose()


async def test_slow_reader_is_bounded_and_closed() -> None:
    async with running_server(send_queue_size=2, max_in_flight=4, write_timeout_s=0.5) as server:
        stream = await _raw(server)
        big = encode_frame(RemotingCommand.request(ECHO, body=b"x" * 1_000_000))
        sent = 0
        with trio.move_on_after(3):
            for _ in range(100):  # never reads: the server must stop reading, then close us
                try:
                    await stream.send_all(big)
                except trio.BrokenResourceError:
                    break  # the server closed us: what we want
                sent += 1
        assert sent < 100, "server kept reading from a client that does not read"
        await wait_until(lambda: not (server.connections), 5)
        await trio.aclose_forcefully(stream)


async def test_graceful_shutdown_answers_in_flight_requests() -> None:
    server = RemotingServer(make_dispatcher(), ServerConfig(shutdown_grace_s=3), name="test")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        port = server.port
        async with connect(addr(server)) as conn:
            result: list[RemotingCommand] = []

            async def call() -> None:
                result.append(
                    await conn.invoke(RemotingCommand.request(SLOW, {"seconds": "0.5"}), timeout_s=5)
                )

            async with trio.open_nursery() as inner:
                inner.start_soon(call)
                await trio.sleep(0.1)
                server.shutdown()
            assert result[0].remark == "slept"
        with trio.fail_after(5):
            await server.wait_closed()
    with pytest.raises(OSError, match=r"(?i)connect|refused"):
        await trio.open_tcp_stream("127.0.0.1", port)


async def test_statistics() -> None:
    async with running_server() as server, connect(addr(server)) as conn:
        await conn.invoke(RemotingCommand.request(ECHO), timeout_s=2)
        stats = server.statistics()
        assert stats["connections"] == 1
        assert stats["dispatcher"]["requests"] == 1
        (conn_stats,) = [c.statistics() for c in server.connections.values()]
        assert conn_stats["frames_in"] == 1
        assert not math.isnan(float(conn_stats["in_flight"]))  # type: ignore[arg-type]
