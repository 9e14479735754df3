"""Errors from ``accept``: out of resources pauses and retries, anything else stops the server.

As trio's ``serve_listeners``: before, every ``OSError`` was logged and retried every 100 ms
forever, so a listener that could never accept again left a server that looked alive.
"""

from __future__ import annotations

import errno
import logging
import os
from typing import Any, cast

import pytest
import trio
import trio.lowlevel

from codec.codes import ResponseCode
from codec.command import RemotingCommand
from gateway.transport.client import connect
from gateway.transport.config import ServerConfig
from gateway.transport.dispatch import Dispatcher, RequestContext
from gateway.transport.server import ACCEPT_PAUSE_S, RemotingServer

ECHO = 9401


class FlakyListener:
    """Stands in for a ``trio.SocketListener``: its first accepts fail with ``errnos``, then it
    accepts from the real listener it wraps."""

    def __init__(self, real: trio.SocketListener, errnos: list[int]) -> None:
        self.real = real
        self.socket = real.socket
        self.errnos = list(errnos)
        self.calls: list[float] = []  # trio.current_time() of each accept
        self.closed = False

    async def accept(self) -> trio.SocketStream:
        self.calls.append(trio.current_time())
        if self.errnos:
            await trio.lowlevel.checkpoint()
            code = self.errnos.pop(0)
            raise OSError(code, os.strerror(code))
        return await self.real.accept()

    async def aclose(self) -> None:
        self.closed = True
        await self.real.aclose()


def _echo(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    return req.make_response(ResponseCode.SUCCESS, body=req.body)


async def flaky_server(errnos: list[int]) -> tuple[RemotingServer, FlakyListener]:
    (real,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
    flaky = FlakyListener(real, errnos)
    dispatcher = Dispatcher("test")
    dispatcher.register(ECHO, _echo)
    listeners = [cast(trio.SocketListener, flaky)]
    return RemotingServer(dispatcher, ServerConfig(), name="flaky", listeners=listeners), flaky


async def test_out_of_resources_pauses_then_serves(caplog: pytest.LogCaptureFixture) -> None:
    capacity = [errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS]
    server, flaky = await flaky_server(capacity)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        # The kernel completes the handshake on the backlog; the server accepts once it recovers.
        async with connect(f"127.0.0.1:{server.port}") as conn:
            answer = await conn.invoke(RemotingCommand.request(ECHO, body=b"still here"), timeout_s=5)
        assert answer.body == b"still here"
        nursery.cancel_scope.cancel()
    assert server.accept_pauses == len(capacity)
    assert server.statistics()["accept_pauses"] == len(capacity)
    assert len(flaky.calls) >= len(capacity) + 1
    gaps = [later - earlier for earlier, later in zip(flaky.calls, flaky.calls[1:], strict=False)]
    assert all(gap >= ACCEPT_PAUSE_S - 1e-6 for gap in gaps[: len(capacity)]), gaps
    lines = [r for r in caplog.records if "accept failed" in r.getMessage()]
    assert [r.levelno for r in lines] == [logging.ERROR] * len(capacity)  # one line per pause
    for line, code in zip(lines, capacity, strict=True):
        assert errno.errorcode[code] in line.getMessage()
    assert flaky.closed


@pytest.mark.parametrize("code", [errno.EINVAL, errno.EBADF, errno.EACCES])
async def test_any_other_accept_error_stops_the_server(code: int, caplog: pytest.LogCaptureFixture) -> None:
    server, flaky = await flaky_server([code])
    failure = pytest.RaisesExc(OSError, check=lambda e: e.errno == code)
    with trio.fail_after(5), pytest.RaisesGroup(failure, flatten_subgroups=True):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
    assert len(flaky.calls) == 1  # raised at once, never retried
    assert server.accept_pauses == 0
    assert not [r for r in caplog.records if "accept failed" in r.getMessage()]
    assert flaky.closed
    with trio.fail_after(1):
        await server.wait_closed()
