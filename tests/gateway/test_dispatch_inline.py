"""Requests answered inline (a task per request costs more than most handlers):
``Dispatcher.dispatch_nowait`` completes what need not wait, hands back a coroutine for what must,
maps errors on both paths; the connection answers a burst of such requests without tasks and in
few writes."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import trio
import trio.lowlevel

from codec.codes import ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.frame import FrameDecoder, encode_frame
from gateway.transport.config import ServerConfig
from gateway.transport.dispatch import ConnectionInfo, Dispatcher, RequestContext
from gateway.transport.server import RemotingServer
from tests.helpers import wait_until

ECHO = 9201
WAITS = 9202  # a plain function that returns an awaitable, as a send under SYNC_FLUSH
WAITS_THEN_FAILS = 9203
REFUSES = 9204
CORO = 9205

CTX = RequestContext(ConnectionInfo(1, "127.0.0.1:1", "127.0.0.1:2"))


class _Refused(RocketMQError):
    response_code = ResponseCode.NO_PERMISSION


def _echo(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    return req.make_response(ResponseCode.SUCCESS, body=req.body)


def _waits(
    ctx: RequestContext, req: RemotingCommand, header: Any
) -> RemotingCommand | Awaitable[RemotingCommand]:
    async def later() -> RemotingCommand:
        await trio.sleep(0.01)
        return req.make_response(ResponseCode.SUCCESS, remark="waited")

    return later()


def _waits_then_fails(ctx: RequestContext, req: RemotingCommand, header: Any) -> Awaitable[RemotingCommand]:
    async def later() -> RemotingCommand:
        await trio.lowlevel.checkpoint()
        raise _Refused("no")

    return later()


def _refuses(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    raise _Refused("not here")


async def _coro(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    return req.make_response(ResponseCode.SUCCESS, remark="coroutine")


def _dispatcher() -> Dispatcher:
    d = Dispatcher("inline")
    d.register(ECHO, _echo)
    d.register(WAITS, _waits)
    d.register(WAITS_THEN_FAILS, _waits_then_fails)
    d.register(REFUSES, _refuses)
    d.register(CORO, _coro)
    return d


async def test_dispatch_nowait_completes_what_need_not_wait_and_defers_the_rest() -> None:
    d = _dispatcher()
    seen: list[tuple[int, int | None]] = []
    d.observers.append(lambda _c, req, resp, _t: seen.append((req.code, None if resp is None else resp.code)))
    done = d.dispatch_nowait(CTX, RemotingCommand.request(ECHO, body=b"hi"))
    assert isinstance(done, RemotingCommand)
    assert done.body == b"hi"
    refused = d.dispatch_nowait(CTX, RemotingCommand.request(REFUSES))
    assert isinstance(refused, RemotingCommand)
    assert refused.code == ResponseCode.NO_PERMISSION
    assert d.dispatch_nowait(CTX, RemotingCommand.request(ECHO, oneway=True)) is None
    for code, expected in (
        (WAITS, ResponseCode.SUCCESS),
        (WAITS_THEN_FAILS, ResponseCode.NO_PERMISSION),
        (CORO, ResponseCode.SUCCESS),
    ):
        waiting = d.dispatch_nowait(CTX, RemotingCommand.request(code))
        assert waiting is not None
        assert not isinstance(waiting, RemotingCommand)
        response = await waiting
        assert response is not None
        assert response.code == expected
    # Every request was observed once, when it was answered (the oneway one without an answer).
    assert seen == [
        (ECHO, ResponseCode.SUCCESS),
        (REFUSES, ResponseCode.NO_PERMISSION),
        (ECHO, None),
        (WAITS, ResponseCode.SUCCESS),
        (WAITS_THEN_FAILS, ResponseCode.NO_PERMISSION),
        (CORO, ResponseCode.SUCCESS),
    ]
    assert (d.requests, d.errors) == (6, 2)


async def test_a_pipelined_burst_is_answered_inline_in_few_writes() -> None:
    """200 requests in one write: each answered, none ever counted in flight (no task), and the
    answers leave in far fewer writes than frames; a waiting handler still gets its task."""
    server = RemotingServer(_dispatcher(), ServerConfig(), name="inline")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        stream = await trio.open_tcp_stream("127.0.0.1", server.port)
        burst = [RemotingCommand.request(ECHO, opaque=i, body=b"%d" % i) for i in range(1, 201)]
        burst.append(RemotingCommand.request(WAITS, opaque=201))
        await stream.send_all(b"".join(encode_frame(cmd) for cmd in burst))
        decoder = FrameDecoder()
        answers: list[RemotingCommand] = []
        peak_in_flight = 0
        with trio.fail_after(10):
            while len(answers) < len(burst):
                data = await stream.receive_some(256 * 1024)
                assert data, "connection closed"
                answers += decoder.feed(data)
                for conn in server.connections.values():
                    peak_in_flight = max(peak_in_flight, int(conn.statistics()["in_flight"]))  # type: ignore[call-overload]
        by_opaque = {a.opaque: a for a in answers}
        assert sorted(by_opaque) == list(range(1, 202))
        assert all(by_opaque[i].body == b"%d" % i for i in range(1, 201))
        assert by_opaque[201].remark == "waited"
        (conn,) = server.connections.values()
        # The writer counts a write once send_all returns, which may be after the client read it.
        await wait_until(lambda: conn.statistics()["frames_out"] == 201, 5)
        stats = conn.statistics()
        assert int(stats["writes"]) <= 201 // 4, stats  # type: ignore[call-overload]
        assert peak_in_flight <= 1  # only the waiting handler ever had a task
        await stream.aclose()
        nursery.cancel_scope.cancel()


def test_a_refusal_with_a_null_remark_has_no_remark_key_on_the_wire() -> None:
    """Where Java answers an error with a null remark (``null_remark``), the JSON header has no
    ``remark`` key at all; any other refusal carries its message."""
    d = Dispatcher("remarks")

    def silent(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
        raise RocketMQError("why", response_code=ResponseCode.ILLEGAL_OPERATION, null_remark=True)

    d.register(ECHO, silent)
    d.register(REFUSES, _refuses)
    silent_answer = d.dispatch_nowait(CTX, RemotingCommand.request(ECHO))
    said = d.dispatch_nowait(CTX, RemotingCommand.request(REFUSES))
    assert isinstance(silent_answer, RemotingCommand)
    assert isinstance(said, RemotingCommand)
    assert (silent_answer.code, silent_answer.remark) == (ResponseCode.ILLEGAL_OPERATION, None)
    assert b'"remark"' not in encode_frame(silent_answer)
    assert (said.code, said.remark) == (ResponseCode.NO_PERMISSION, "not here")
    assert b'"remark":"not here"' in encode_frame(said)
    assert d.errors == 2
