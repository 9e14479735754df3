"""Deliver again (:mod:`broker.service.rewind`): the group's offsets go back, its live remoting consumers
are told the new offsets with RESET_CONSUMER_CLIENT_OFFSET; bad requests are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from broker.processors.client_ops import reset_notifier
from broker.service.rewind import RewindError, rewind
from codec.codes import RequestCode
from codec.command import RemotingCommand
from gateway.transport.client import connect
from gateway.transport.dispatch import Dispatcher, RequestContext
from tests.broker.helpers import running_broker, send_request
from tests.broker.test_admin_ops import consumer_heartbeat


async def test_rewind_moves_the_offsets_back_and_tells_the_live_consumer(tmp_path: Path) -> None:
    pushed: list[RemotingCommand] = []
    client_side = Dispatcher("client")

    def on_reset(_ctx: RequestContext, req: RemotingCommand, _header: Any) -> None:
        pushed.append(req)

    client_side.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, on_reset)
    async with running_broker(tmp_path) as (app, conn):
        for i in range(4):
            await conn.invoke(send_request("RwT", f"m{i}".encode()), 3)
        controller = app.controller
        controller.offsets.commit("rwG", "RwT", 0, 4)
        async with connect(f"127.0.0.1:{app.server.port}", client_side) as consumer:
            await consumer.invoke(consumer_heartbeat("c1", "rwG", "RwT"), 3)
            offsets = rewind(
                controller, app.broker.services.consume, "rwG", "RwT", 3, reset_notifier(controller)
            )
            with trio.fail_after(3):
                while not pushed:  # noqa: ASYNC110 - polling what the client side received
                    await trio.sleep(0.01)
        with pytest.raises(RewindError, match="no offset"):
            rewind(controller, None, "nobody", "RwT", 1)
        with pytest.raises(RewindError, match="no topic"):
            rewind(controller, None, "rwG", "NoSuchTopic", 1)
        with pytest.raises(ValueError, match="below 1"):
            rewind(controller, None, "rwG", "RwT", 0)
        far = rewind(controller, None, "rwG", "RwT", 100)
    assert offsets == {0: 1}
    assert controller.offsets.query("rwG", "RwT", 0) == 0
    assert far == {0: 0}
    assert pushed[0].ext_fields is not None
    assert pushed[0].ext_fields["group"] == "rwG"
    assert b'"queueId":0,"topic":"RwT"}:1' in (pushed[0].body or b"")
