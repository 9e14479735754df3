"""``innerClientAuthenticationCredentials``: the broker signs what it sends to the NameServer, as
``BrokerOuterAPI`` registers an ``AclClientRPCHook`` with them; a NameServer that records the
requests checks the signature with the broker's own rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from broker.app import BrokerApp
from broker.auth.signature import (
    ACCESS_KEY,
    SIGNATURE,
    fields_content,
    inner_client_signer,
    signature_matches,
)
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from gateway.transport.config import ServerConfig
from gateway.transport.dispatch import Dispatcher, RequestContext
from gateway.transport.server import RemotingServer
from tests.helpers import broker_config

INNER = {"accessKey": "broker-inner", "secretKey": "inner-s3cret"}


def _verified(request: RemotingCommand, secret: str) -> bool:
    fields = request.ext_fields or {}
    content = fields_content(fields, request.version)
    return signature_matches(content, secret, fields.get(SIGNATURE), request.body or None)


@pytest.mark.parametrize("text", ["", "  ", '{"accessKey":"","secretKey":"x"}', '{"accessKey":"a"}'])
def test_blank_credentials_sign_nothing(text: str) -> None:
    assert inner_client_signer(text) is None


@pytest.mark.parametrize("text", ["not json", "[1, 2]"])
def test_malformed_credentials_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"."):
        inner_client_signer(text)


def test_signer_adds_access_key_and_a_signature_over_fields_and_body() -> None:
    sign = inner_client_signer(json.dumps(INNER))
    assert sign is not None
    request = RemotingCommand.request(
        RequestCode.REGISTER_BROKER, {"brokerName": "b", "clusterName": "c"}, body=b"xyz"
    )
    sign(request)
    assert (request.ext_fields or {})[ACCESS_KEY] == "broker-inner"
    assert _verified(request, "inner-s3cret")
    assert not _verified(request, "other")


async def test_broker_registers_and_unregisters_signed(tmp_path: Path) -> None:
    seen: list[RemotingCommand] = []
    registered = trio.Event()

    def record(_ctx: RequestContext, request: RemotingCommand, _header: Any) -> RemotingCommand:
        seen.append(request)
        registered.set()
        return request.make_response(ResponseCode.SUCCESS)

    dispatcher = Dispatcher("recording-namesrv")
    dispatcher.register(RequestCode.REGISTER_BROKER, record)
    dispatcher.register(RequestCode.UNREGISTER_BROKER, record)
    namesrv = RemotingServer(dispatcher, ServerConfig(port=0), name="namesrv")
    async with trio.open_nursery() as nursery:
        await nursery.start(namesrv.run)
        config = broker_config(tmp_path, namesrv_addr=f"127.0.0.1:{namesrv.port}")
        config.extra["innerClientAuthenticationCredentials"] = json.dumps(INNER)
        app = BrokerApp(config, ServerConfig(port=0))
        async with trio.open_nursery() as broker_nursery:
            await broker_nursery.start(app.run)
            with trio.fail_after(20):
                await registered.wait()
            app.shutdown()
            with trio.fail_after(10):
                await app.wait_stopped()
        nursery.cancel_scope.cancel()
    codes = [r.code for r in seen]
    assert codes[0] == RequestCode.REGISTER_BROKER
    assert RequestCode.UNREGISTER_BROKER in codes
    assert all((r.ext_fields or {}).get(ACCESS_KEY) == "broker-inner" for r in seen), seen
    assert all(_verified(r, "inner-s3cret") for r in seen)
