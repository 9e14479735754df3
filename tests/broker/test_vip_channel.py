"""The broker's VIP channel (``listenPort - 2``, ``BrokerController``'s fast remoting server):
the same processors as the main port, except the pull-type codes, which it answers as the Java
fast server answers any code it has no processor for."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.app import BrokerApp, bind_with_vip
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from gateway.transport.client import connect
from tests.broker.helpers import pull_request, running_broker, send_request


def vip_address(app: BrokerApp) -> str:
    return f"127.0.0.1:{app.server.port - 2}"


async def test_vip_port_is_listen_port_minus_two_and_shown_in_statistics(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (app, _conn):
        stats = app.statistics()
        assert stats["vip_server"]["addresses"] == [vip_address(app)]
        assert stats["server"]["addresses"] == [f"127.0.0.1:{app.server.port}"]


async def test_vip_port_answers_a_send_and_refuses_a_pull(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (app, conn), connect(vip_address(app)) as vip:
        sent = await vip.invoke(send_request("VipTopic", b"over the fast port"), 5)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        refused = await vip.invoke(pull_request("VipTopic", 0, suspend_ms=0), 5)
        assert refused.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert refused.remark == " request type 11 not supported"
        for code in (RequestCode.LITE_PULL_MESSAGE, RequestCode.POP_MESSAGE, RequestCode.PEEK_MESSAGE):
            answer = await vip.invoke(RemotingCommand.request(code, EmptyHeader()), 5)
            assert (answer.code, answer.remark) == (
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                f" request type {code} not supported",
            )
        pulled = await conn.invoke(pull_request("VipTopic", 0, suspend_ms=0), 5)
        assert pulled.code == ResponseCode.SUCCESS, pulled.remark
        assert app.statistics()["vip_server"]["dispatcher"] == {"requests": 5, "refused": 4}


async def test_a_fixed_port_whose_vip_port_is_taken_fails_to_bind() -> None:
    main, vip = await bind_with_vip("127.0.0.1", 0)
    port = int(main[0].socket.getsockname()[1])
    assert int(vip[0].socket.getsockname()[1]) == port - 2
    for listener in main:
        await listener.aclose()
    try:
        with pytest.raises(OSError, match="in use"):
            await bind_with_vip("127.0.0.1", port)
    finally:
        for listener in vip:
            await listener.aclose()
