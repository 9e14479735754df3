"""Notices the broker pushes without waiting (``Connection.try_invoke_oneway``), over loopback.

The defect: ``try_invoke_oneway`` queued a frame without counting its bytes, while the writer
subtracted the bytes of every frame it wrote, so the byte bound of the outbox drifted below zero
with every NOTIFY_CONSUMER_IDS_CHANGED (``BrokerController.notify_consumer_ids_changed``); and its
queue had no bound, so it never returned ``False`` for a full outbox as promised. Now every frame
goes through ``ConnectionState.admit``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.lowlevel
import trio.testing

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.frame import encode_frame
from codec.headers.client import NotifyConsumerIdsChangedRequestHeader
from gateway.transport.client import connect
from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection
from gateway.transport.dispatch import Dispatcher, RequestContext
from gateway.transport.server import RemotingServer
from tests.helpers import wait_until

SLOW = 9301


def notice() -> RemotingCommand:
    return RemotingCommand.request(
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, NotifyConsumerIdsChangedRequestHeader("group-a")
    )


async def _slow(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    await trio.sleep(0.5)
    return req.make_response(ResponseCode.SUCCESS, remark="slept")


@asynccontextmanager
async def client_and_server_side(**overrides: Any) -> AsyncIterator[tuple[Connection, Connection, list[int]]]:
    """A client connected to a server: (client side, server side, opaques of the notices the
    client received)."""
    dispatcher = Dispatcher("broker")
    dispatcher.register(SLOW, _slow)
    server = RemotingServer(dispatcher, ServerConfig(**overrides), name="broker")
    received: list[int] = []
    client_dispatcher = Dispatcher("consumer")

    def on_notice(ctx: RequestContext, req: RemotingCommand, header: Any) -> None:
        received.append(req.opaque)

    client_dispatcher.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notice)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        try:
            async with connect(f"127.0.0.1:{server.port}", client_dispatcher) as client:
                await wait_until(lambda: server.connections, 5)
                (server_side,) = server.connections.values()
                yield client, server_side, received
        finally:
            nursery.cancel_scope.cancel()


async def test_notices_leave_the_outbox_empty_once_written() -> None:
    count = 200
    async with client_and_server_side() as (_client, server_side, received):
        sent = 0
        for _ in range(count // 10):
            sent += sum(server_side.try_invoke_oneway(notice()) for _ in range(10))
            await trio.lowlevel.checkpoint()  # let the writer run between bursts
        assert sent == count
        await wait_until(lambda: len(received) == count, 5)
        await wait_until(lambda: server_side.statistics()["frames_out"] == count, 5)
        stats = server_side.statistics()
        # Before the fix: queued_bytes was minus the bytes of every notice written.
        assert (stats["queued_frames"], stats["queued_bytes"]) == (0, 0)


async def test_a_full_outbox_refuses_notices_until_written() -> None:
    async with client_and_server_side(send_queue_size=4) as (_client, server_side, received):
        # No checkpoint between the calls: the writer cannot empty the outbox meanwhile.
        assert [server_side.try_invoke_oneway(notice()) for _ in range(6)] == [True] * 4 + [False] * 2
        await wait_until(lambda: len(received) == 4, 5)
        await wait_until(lambda: server_side.statistics()["queued_frames"] == 0, 5)
        assert server_side.try_invoke_oneway(notice())
        await wait_until(lambda: len(received) == 5, 5)


async def test_the_byte_bound_refuses_notices_too() -> None:
    size = len(encode_frame(notice()))  # opaques add a digit or two as they grow
    bound = 2 * size + size // 2
    async with client_and_server_side(send_queue_bytes=bound) as (_client, server_side, received):
        assert [server_side.try_invoke_oneway(notice()) for _ in range(3)] == [True, True, False]
        assert 0 < int(server_side.statistics()["queued_bytes"]) <= bound  # type: ignore[call-overload]
        await wait_until(lambda: len(received) == 2, 5)


async def test_no_notice_once_the_connection_stops_reading_or_closes() -> None:
    async with client_and_server_side(shutdown_grace_s=5) as (client, server_side, received):
        answers: list[RemotingCommand] = []

        async def call_slow() -> None:
            answers.append(await client.invoke(RemotingCommand.request(SLOW), timeout_s=5))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call_slow)
            await wait_until(lambda: server_side.statistics()["in_flight"] == 1, 5)
            server_side.stop_reading()
            await trio.testing.wait_all_tasks_blocked()  # the reader has returned
            # Draining: the handler in flight still answers, but nothing new goes to the peer.
            assert not server_side.try_invoke_oneway(notice())
            assert server_side.statistics()["phase"] == "draining"
        assert answers[0].remark == "slept"
        with trio.fail_after(5):
            await server_side.wait_closed()
        assert not server_side.try_invoke_oneway(notice())
        assert received == []
