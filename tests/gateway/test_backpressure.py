"""Backpressure of one connection against clients that flood it.

The defect: at ``max_in_flight`` the reader used to stop reading; a client that writes thousands of
requests before it reads an answer (as RocketMQ's async benchmark producer does) then blocked on
writing, neither side read, and both sat idle until the client's timeouts. Now every request beyond
the bound is answered at once with SYSTEM_BUSY, oneway ones are dropped, and memory stays bounded by
the in-flight handlers and the queued frames.
"""

from __future__ import annotations

import resource
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from codec.codes import ResponseCode
from codec.command import RemotingCommand
from codec.frame import FrameDecoder, encode_frame
from gateway.transport.config import ServerConfig
from gateway.transport.connection import BUSY_REMARK, Connection
from gateway.transport.dispatch import Dispatcher, RequestContext
from gateway.transport.server import RemotingServer
from tests.helpers import wait_until

SLOW = 9102  # answers after ext field "seconds"
ECHO = 9101
FLOOD = 3000  # requests written before the client reads anything
BODY = b"m" * 1024  # 1 KiB, the benchmark's message size: 3 MiB of requests, more than loopback buffers


async def _slow(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    await trio.sleep(float((req.ext_fields or {}).get("seconds", "0.2")))
    return req.make_response(ResponseCode.SUCCESS, remark="slept")


def _echo(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    return req.make_response(ResponseCode.SUCCESS, body=req.body[:8])


@asynccontextmanager
async def running_server(**overrides: Any) -> AsyncIterator[RemotingServer]:
    dispatcher = Dispatcher("flood")
    dispatcher.register(SLOW, _slow)
    dispatcher.register(ECHO, _echo)
    server = RemotingServer(dispatcher, ServerConfig(**overrides), name="flood")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()


def _only_connection(server: RemotingServer) -> Connection:
    (conn,) = server.connections.values()
    return conn


async def _read_all(stream: trio.SocketStream, count: int, seconds: float) -> list[RemotingCommand]:
    decoder = FrameDecoder()
    got: list[RemotingCommand] = []
    with trio.fail_after(seconds):
        while len(got) < count:
            data = await stream.receive_some(256 * 1024)
            assert data, f"connection closed after {len(got)} answers"
            got += decoder.feed(data)
    return got


async def test_flood_without_reading_gets_every_answer_and_busy_beyond_the_bound() -> None:
    """3,000 requests of 1 KiB written before reading one answer: the write completes (the server
    keeps reading), every request is answered within seconds, the excess with SYSTEM_BUSY."""
    async with running_server(max_in_flight=16) as server:
        stream = await trio.open_tcp_stream("127.0.0.1", server.port)
        flood = b"".join(
            encode_frame(RemotingCommand.request(SLOW, {"seconds": "0.2"}, opaque=i, body=BODY))
            for i in range(1, FLOOD + 1)
        )
        started = trio.current_time()
        with trio.fail_after(5):  # before the fix: blocked here once both directions' buffers filled
            await stream.send_all(flood)
        answers = await _read_all(stream, FLOOD, seconds=5)
        elapsed = trio.current_time() - started
        assert sorted(a.opaque for a in answers) == list(range(1, FLOOD + 1))
        codes = Counter(a.code for a in answers)
        assert set(codes) == {ResponseCode.SUCCESS, ResponseCode.SYSTEM_BUSY}
        assert codes[ResponseCode.SUCCESS] >= 16  # at least the first in-flight window was served
        assert {a.remark for a in answers if a.code == ResponseCode.SYSTEM_BUSY} == {BUSY_REMARK}
        stats = _only_connection(server).statistics()
        assert stats["busy_answers"] == codes[ResponseCode.SYSTEM_BUSY]
        # Serving 3,000 requests 16 at a time at 0.2 s each would take 37 s: busy answers come at once.
        assert elapsed < 5
        # The connection is still usable once the flood is over.
        await stream.send_all(encode_frame(RemotingCommand.request(ECHO, opaque=FLOOD + 1, body=b"again")))
        (last,) = await _read_all(stream, 1, seconds=2)
        assert (last.opaque, last.code, last.body) == (FLOOD + 1, ResponseCode.SUCCESS, b"again")
        await stream.aclose()


async def test_peer_that_never_reads_is_bounded_and_closed() -> None:
    """A client that writes forever and reads nothing: the server's queue and in-flight count stay
    at their bounds, its RSS barely moves, and the connection is closed after write_timeout_s."""
    bounds = {"max_in_flight": 8, "send_queue_size": 4, "write_timeout_s": 0.5}
    async with running_server(**bounds) as server:
        rss_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        stream = await trio.open_tcp_stream("127.0.0.1", server.port)
        # Echo answers carry 8 bytes: without a bound the queued answers would grow with the flood.
        frame = encode_frame(RemotingCommand.request(ECHO, body=BODY))
        chunk = frame * 256
        peaks: Counter[str] = Counter()
        closed = False
        with trio.move_on_after(10):
            while not closed:
                with trio.move_on_after(0.05):
                    try:
                        await stream.send_all(chunk)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        closed = True
                for conn in server.connections.values():
                    stats = conn.statistics()
                    for key in ("in_flight", "queued_frames"):
                        peaks[key] = max(peaks[key], int(stats[key]))  # type: ignore[call-overload]
                if not server.connections and peaks:
                    closed = True
        await wait_until(lambda: not server.connections, 5)
        assert peaks["in_flight"] <= bounds["max_in_flight"]
        assert peaks["queued_frames"] <= bounds["send_queue_size"]
        grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before_kib) / 1024
        assert grown_mib < 64, f"peak RSS grew {grown_mib:.0f} MiB"
        await trio.aclose_forcefully(stream)


async def test_oneway_beyond_the_bound_is_dropped_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    async with running_server(max_in_flight=1) as server:
        stream = await trio.open_tcp_stream("127.0.0.1", server.port)
        frames = [encode_frame(RemotingCommand.request(SLOW, {"seconds": "0.5"}, opaque=1))]
        oneways = [RemotingCommand.request(ECHO, opaque=100 + i, oneway=True) for i in range(10)]
        frames += [encode_frame(cmd) for cmd in oneways]
        frames.append(encode_frame(RemotingCommand.request(ECHO, opaque=2)))
        await stream.send_all(b"".join(frames))
        busy, slow = await _read_all(stream, 2, seconds=3)
        assert (busy.opaque, busy.code) == (2, ResponseCode.SYSTEM_BUSY)
        assert (slow.opaque, slow.code) == (1, ResponseCode.SUCCESS)
        assert _only_connection(server).statistics()["oneway_dropped"] == 10
        drops = [r for r in caplog.records if "oneway request(s) dropped" in r.getMessage()]
        assert len(drops) == 1  # rate-limited: one line for the ten
        await stream.aclose()
