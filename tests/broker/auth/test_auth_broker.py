"""A broker with authentication and authorization on, over real sockets: what clients see."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from broker.app import BrokerApp
from broker.auth.config import LOCAL_AUTHN_METADATA, LOCAL_AUTHZ_METADATA
from broker.auth.signature import sign_request
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from gateway.transport.client import connect
from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection
from tests.broker.helpers import send_request
from tests.broker.test_vip_channel import vip_address
from tests.helpers import broker_config

ROOT_SECRET = "r00t-s3cret-value"
ALICE_SECRET = "alice-s3cret-value"
AUTH_CONF = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "authenticationMetadataProvider": LOCAL_AUTHN_METADATA,
    "authorizationMetadataProvider": LOCAL_AUTHZ_METADATA,
    "initAuthenticationUser": json.dumps({"username": "root", "password": ROOT_SECRET}),
}


@asynccontextmanager
async def auth_broker(
    root: Path, conf: dict[str, str] | None = None
) -> AsyncIterator[tuple[BrokerApp, Connection]]:
    config = broker_config(root)
    config.extra.update(AUTH_CONF if conf is None else conf)
    app = BrokerApp(config, ServerConfig(port=0))
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        try:
            async with connect(f"127.0.0.1:{app.server.port}") as conn:
                yield app, conn
        finally:
            app.shutdown()
            with trio.fail_after(10):
                await app.server.wait_closed()


def signed(request: RemotingCommand, user: str, secret: str) -> RemotingCommand:
    fields = dict(request.ext_fields or {})
    sign_request(fields, request.body, user, secret)
    request.ext_fields = fields
    return request


def admin(code: int, fields: dict[str, str], body: object | None = None) -> RemotingCommand:
    raw = json.dumps(body).encode() if body is not None else b""
    return signed(RemotingCommand.request(code, dict(fields), body=raw), "root", ROOT_SECRET)


async def make_alice(conn: Connection, acl: list[dict[str, object]] | None = None) -> None:
    user = {"username": "alice", "password": ALICE_SECRET, "userType": "Normal"}
    response = await conn.invoke(admin(RequestCode.AUTH_CREATE_USER, {"username": "alice"}, user), 5)
    assert response.code == ResponseCode.SUCCESS, response.remark
    if acl is not None:
        body = {"subject": "User:alice", "policies": [{"entries": acl}]}
        response = await conn.invoke(admin(RequestCode.AUTH_CREATE_ACL, {"subject": "User:alice"}, body), 5)
        assert response.code == ResponseCode.SUCCESS, response.remark


async def test_signed_super_user_sends_and_bad_credentials_get_java_answers(tmp_path: Path) -> None:
    async with auth_broker(tmp_path) as (_app, conn):
        ok = await conn.invoke(signed(send_request("T1", b"hello"), "root", ROOT_SECRET), 5)
        assert ok.code == ResponseCode.SUCCESS, ok.remark
        cases = [
            (signed(send_request("T1", b"x"), "root", "wrong"), "check signature failed."),
            (signed(send_request("T1", b"x"), "nobody", "x"), "User:nobody is not found."),
            (send_request("T1", b"x"), "username cannot be null."),
        ]
        tampered = signed(send_request("T1", b"x"), "root", ROOT_SECRET)
        tampered.body = b"y"
        cases.append((tampered, "check signature failed."))
        for request, remark in cases:
            response = await conn.invoke(request, 5)
            assert (response.code, response.remark) == (ResponseCode.NO_PERMISSION, remark)


async def test_normal_user_needs_an_acl_and_deny_refuses(tmp_path: Path) -> None:
    async with auth_broker(tmp_path) as (_app, conn):
        await make_alice(conn)
        response = await conn.invoke(signed(send_request("T1", b"x"), "alice", ALICE_SECRET), 5)
        assert response.code == ResponseCode.NO_PERMISSION
        assert (
            response.remark
            == "User:alice has no permission to access Topic:T1 from 127.0.0.1, no matched policies."
        )
        acl = [
            {"resource": "Topic:T*", "actions": ["Pub"], "decision": "Allow"},
            {"resource": "Topic:T2", "actions": ["Pub"], "decision": "Deny"},
        ]
        body = {"subject": "User:alice", "policies": [{"entries": acl}]}
        created = await conn.invoke(admin(RequestCode.AUTH_CREATE_ACL, {"subject": "User:alice"}, body), 5)
        assert created.code == ResponseCode.SUCCESS
        ok = await conn.invoke(signed(send_request("T1", b"x"), "alice", ALICE_SECRET), 5)
        assert ok.code == ResponseCode.SUCCESS, ok.remark
        denied = await conn.invoke(signed(send_request("T2", b"x"), "alice", ALICE_SECRET), 5)
        assert denied.code == ResponseCode.NO_PERMISSION
        assert denied.remark.endswith("Topic:T2 from 127.0.0.1, the decision is deny.")
        # A normal user may not administer users (Cluster Update).
        made = await conn.invoke(
            signed(RemotingCommand.request(RequestCode.AUTH_LIST_USER, {}), "alice", ALICE_SECRET),
            5,
        )
        assert made.code == ResponseCode.NO_PERMISSION
        assert "Cluster:DefaultCluster" in made.remark


async def test_disabled_user_is_refused_and_changes_survive_a_restart(tmp_path: Path) -> None:
    async with auth_broker(tmp_path) as (_app, conn):
        await make_alice(conn, [{"resource": "*", "actions": ["All"], "decision": "Allow"}])
        ok = await conn.invoke(signed(send_request("T1", b"x"), "alice", ALICE_SECRET), 5)
        assert ok.code == ResponseCode.SUCCESS
        disable = admin(RequestCode.AUTH_UPDATE_USER, {"username": "alice"}, {"userStatus": "disable"})
        assert (await conn.invoke(disable, 5)).code == ResponseCode.SUCCESS
        refused = await conn.invoke(signed(send_request("T1", b"x"), "alice", ALICE_SECRET), 5)
        assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, "User:alice is disabled.")
    async with auth_broker(tmp_path) as (_app, conn):
        got = await conn.invoke(admin(RequestCode.AUTH_GET_USER, {"username": "alice"}), 5)
        assert json.loads(got.body) == {
            "password": ALICE_SECRET,
            "userStatus": "disable",
            "userType": "Normal",
            "username": "alice",
        }
        acl = await conn.invoke(admin(RequestCode.AUTH_GET_ACL, {"subject": "User:alice"}), 5)
        assert json.loads(acl.body) == {
            "policies": [
                {
                    "entries": [{"actions": ["All"], "decision": "Allow", "resource": "*"}],
                    "policyType": "Custom",
                }
            ],
            "subject": "User:alice",
        }
        gone = await conn.invoke(admin(RequestCode.AUTH_DELETE_USER, {"username": "alice"}), 5)
        assert gone.code == ResponseCode.SUCCESS
        listed = await conn.invoke(admin(RequestCode.AUTH_LIST_ACL, {}), 5)
        assert (listed.code, listed.body) == (ResponseCode.SUCCESS, b"")


async def test_admin_refusals_carry_java_codes_and_messages(tmp_path: Path) -> None:
    async with auth_broker(tmp_path) as (_app, conn):
        await make_alice(conn)
        answers = [
            (
                admin(RequestCode.AUTH_CREATE_USER, {"username": "alice"}, {"password": "p"}),
                16,
                "The user is existed",
            ),
            (admin(RequestCode.AUTH_GET_USER, {}), 29, "The username is blank"),
            (
                admin(RequestCode.AUTH_UPDATE_USER, {"username": "bob"}, {"password": "p"}),
                16,
                "The user is not exist",
            ),
            (
                admin(
                    RequestCode.AUTH_CREATE_ACL,
                    {"subject": "User:bob"},
                    {
                        "policies": [
                            {"entries": [{"resource": "Topic:T", "actions": ["Pub"], "decision": "Allow"}]}
                        ]
                    },
                ),
                16,
                "The subject of User:bob is not exist.",
            ),
            (
                admin(
                    RequestCode.AUTH_CREATE_ACL,
                    {"subject": "User:alice"},
                    {
                        "policies": [
                            {"entries": [{"resource": "Topic:T", "actions": ["Pub"], "decision": "Maybe"}]}
                        ]
                    },
                ),
                16,
                "The decision is null or illegal.",
            ),
            (admin(RequestCode.AUTH_DELETE_ACL, {"subject": "User:alice"}), 16, "The acl is not exist."),
        ]
        for request, code, remark in answers:
            response = await conn.invoke(request, 5)
            assert (response.code, response.remark) == (code, remark)


async def test_a_flood_of_bad_signatures_costs_bounded_time_and_logs_no_secret(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with auth_broker(tmp_path) as (_app, conn):
        await make_alice(conn, [{"resource": "*", "actions": ["All"], "decision": "Allow"}])
        body = b"x" * 65536
        count = 400
        start = time.process_time()
        for i in range(count):
            request = signed(send_request("T1", body), "alice", f"guess-{i}")
            response = await conn.invoke(request, 5)
            assert response.code == ResponseCode.NO_PERMISSION
        cpu_per_request = (time.process_time() - start) / count
        ok = await conn.invoke(signed(send_request("T1", b"x"), "alice", ALICE_SECRET), 5)
        assert ok.code == ResponseCode.SUCCESS
    # Client and broker share this process; 5 ms each is far above the cost of one HMAC over
    # 64 KiB (~0.1 ms) and well below a per-request cost that grew with the flood.
    assert cpu_per_request < 0.005
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert ROOT_SECRET not in text
    assert ALICE_SECRET not in text
    refusals = [r for r in caplog.records if "refused" in r.getMessage() and r.levelno >= logging.INFO]
    assert len(refusals) <= 3


async def test_whitelisted_codes_skip_their_check(tmp_path: Path) -> None:
    conf = {**AUTH_CONF, "authenticationWhitelist": " 310, 34"}
    async with auth_broker(tmp_path / "authn", conf) as (_app, conn):
        response = await conn.invoke(send_request("T1", b"x"), 5)
        assert (response.code, response.remark) == (
            ResponseCode.NO_PERMISSION,
            "Authorization failed. Please verify your access rights and try again.",
        )
    conf = {**conf, "authorizationWhitelist": "310"}
    async with auth_broker(tmp_path / "both", conf) as (_app, conn):
        response = await conn.invoke(send_request("T1", b"x"), 5)
        assert response.code == ResponseCode.SUCCESS, response.remark


async def test_no_metadata_provider_refuses_as_java_does(tmp_path: Path) -> None:
    conf = {"authenticationEnabled": "true"}
    async with auth_broker(tmp_path, conf) as (_app, conn):
        response = await conn.invoke(signed(send_request("T1", b"x"), "root", ROOT_SECRET), 5)
        assert (response.code, response.remark) == (
            ResponseCode.NO_PERMISSION,
            "The authenticationMetadataProvider is not configured",
        )


async def test_the_check_runs_before_the_header_is_read(tmp_path: Path) -> None:
    # Java's request pipeline runs before the processor decodes its header: an unsigned request
    # with a malformed header is refused for its credentials, not for its header.
    async with auth_broker(tmp_path) as (_app, conn):
        response = await conn.invoke(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"b": "T1"}), 5)
        assert (response.code, response.remark) == (ResponseCode.NO_PERMISSION, "username cannot be null.")
        signed_bad = signed(
            RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"b": "T1"}), "root", ROOT_SECRET
        )
        response = await conn.invoke(signed_bad, 5)
        assert response.code == ResponseCode.SYSTEM_ERROR


async def test_an_unknown_code_is_checked_before_it_is_found_unsupported(tmp_path: Path) -> None:
    # The Java broker's default processor (AdminBrokerProcessor) makes every code pass through the
    # request pipeline: an unsigned or badly signed request is refused whatever its code, on the
    # main and the VIP port alike; only a signed one learns that the code is not supported.
    async with auth_broker(tmp_path) as (app, conn), connect(vip_address(app)) as vip:
        for channel, code in ((conn, 902), (conn, 9999), (vip, 902), (vip, RequestCode.PULL_MESSAGE)):
            unsigned = await channel.invoke(RemotingCommand(code=code, ext_fields={"x": "1"}), 5)
            assert (unsigned.code, unsigned.remark) == (
                ResponseCode.NO_PERMISSION,
                "username cannot be null.",
            )
            bad = signed(RemotingCommand(code=code, ext_fields={"x": "1"}), "root", "not-the-secret")
            refused = await channel.invoke(bad, 5)
            assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, "check signature failed.")
            good = signed(RemotingCommand(code=code, ext_fields={"x": "1"}), "root", ROOT_SECRET)
            answer = await channel.invoke(good, 5)
            assert (answer.code, answer.remark) == (
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                f" request type {code} not supported",
            )
