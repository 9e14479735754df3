"""CPU per message of single sync sends with ACL 2.0 off and on, without sockets.

The same path as ``python -m bench.broker``'s single case (SEND_MESSAGE_V2 frames with 1 KiB
bodies decoded, dispatched, stored under ASYNC_FLUSH, the response encoded) in three settings:

* ``off``: authentication and authorization off (the dispatcher has no guard);
* ``authn``: every request signed (``AclClientRPCHook``'s signature) and checked;
* ``authn+authz``: also authorized, as a NORMAL user whose ACL allows Pub on ``Topic:Bench*``
  among a few other entries (a SUPER user skips the ACL and would measure less).

Signing is done while building the frames, outside the measured loop (it is the client's cost).
The check alone (``AuthGuard`` on decoded requests) is measured too: on a shared machine the
difference between whole-path figures moves more than the check costs.
Prints the best and median of several rounds in CPU µs per message (``time.process_time``);
the modes take turns round by round, each on a fresh broker and store.

    python -m bench.auth [--sends 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import trio

from bench.broker.frames import BODY_SIZE, CLIENT_IDS, send_header
from broker.app import BrokerApp
from broker.auth.bodies import acl_info_from_obj
from broker.auth.config import LOCAL_AUTHN_METADATA, LOCAL_AUTHZ_METADATA
from broker.auth.guard import AuthGuard, AuthSettings
from broker.auth.metadata import AuthMetadata
from broker.auth.models import User
from broker.auth.signature import sign_request
from broker.config import BrokerConfig
from codec.codes import RequestCode
from codec.command import RemotingCommand
from codec.frame import FrameDecoder, encode_frame
from codec.properties import encode_properties
from gateway.transport.config import ServerConfig
from gateway.transport.dispatch import ConnectionInfo, RequestContext

USER, SECRET = "bench-user", "bench-secret-0123456789"
ROOT, ROOT_SECRET = "bench-root", "bench-root-secret"
ACL = {
    "subject": f"User:{USER}",
    "policies": [
        {
            "entries": [
                {"resource": "Group:benchGroup", "actions": ["Sub"], "decision": "Allow"},
                {"resource": "Topic:Other*", "actions": ["Pub"], "decision": "Deny"},
                {"resource": "Topic:Bench*", "actions": ["Pub", "Sub"], "decision": "Allow"},
                {"resource": "Topic:BenchSecret", "actions": ["Sub"], "decision": "Deny"},
            ]
        }
    ],
}


def send_frame(i: int, signer: tuple[str, str] | None) -> bytes:
    props = encode_properties(
        {"KEYS": f"key-{i}", "TAGS": "TagA", "WAIT": "true", "UNIQ_KEY": CLIENT_IDS.next_id()}
    )
    header = send_header(i, props, batch=False)
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header, body=b"x" * BODY_SIZE)
    if signer is not None:
        fields = dict(request.ext_fields or {})
        sign_request(fields, request.body, *signer)
        request.ext_fields = fields
    request.opaque = i
    return encode_frame(request)


def admin_request(code: int, fields: dict[str, str], body: object) -> RemotingCommand:
    request = RemotingCommand.request(code, dict(fields), body=json.dumps(body).encode())
    signed = dict(request.ext_fields or {})
    sign_request(signed, request.body, ROOT, ROOT_SECRET)
    request.ext_fields = signed
    return request


async def measure(root: Path, mode: str, sends: int, rounds: int) -> list[float]:
    props = {"storePathRootDir": str(root), "brokerName": "bench"}
    if mode != "off":
        props |= {
            "authenticationEnabled": "true",
            "authenticationMetadataProvider": LOCAL_AUTHN_METADATA,
            "authorizationMetadataProvider": LOCAL_AUTHZ_METADATA,
            "authorizationEnabled": "true" if mode == "authn+authz" else "false",
            "initAuthenticationUser": json.dumps({"username": ROOT, "password": ROOT_SECRET}),
        }
    config = BrokerConfig.from_properties(props)
    config.namesrv_addr = ""
    app = BrokerApp(config, ServerConfig(port=0))
    ctx = RequestContext(ConnectionInfo(1, "127.0.0.1:50000", "127.0.0.1:10911"))
    signer = None if mode == "off" else (USER, SECRET)
    results = []
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        if mode != "off":
            user = {"username": USER, "password": SECRET}
            for request in (
                admin_request(RequestCode.AUTH_CREATE_USER, {"username": USER}, user),
                admin_request(RequestCode.AUTH_CREATE_ACL, {"subject": f"User:{USER}"}, ACL),
            ):
                response = await app.dispatcher.dispatch(ctx, request)
                if response is None or response.code != 0:
                    raise RuntimeError(f"set-up failed: {response}")
        for _ in range(rounds):
            frames = [send_frame(i, signer) for i in range(sends)]
            decoder = FrameDecoder()
            start = time.process_time()
            for frame in frames:
                for request in decoder.feed(frame):
                    response = await app.dispatcher.dispatch(ctx, request)
                    if response is None or response.code != 0:
                        raise RuntimeError(f"send failed: {response.remark if response else None}")
                    encode_frame(response)
            results.append((time.process_time() - start) / sends * 1e6)
        app.shutdown()
    return results


def guard_alone(sends: int, rounds: int) -> dict[str, float]:
    """Best CPU µs per request of the check itself (``AuthGuard``), on decoded signed sends."""
    metadata = AuthMetadata()
    metadata.create_user(User(USER, SECRET))
    metadata.put_acl(USER, acl_info_from_obj(ACL)[1])
    ctx = RequestContext(ConnectionInfo(1, "127.0.0.1:50000", "127.0.0.1:10911"))
    requests = [r for i in range(sends) for r in FrameDecoder().feed(send_frame(i, (USER, SECRET)))]
    best = {}
    for name, authorize in (("authn", False), ("authn+authz", True)):
        guard = AuthGuard(AuthSettings(True, authorize, True, True), metadata)
        times = []
        for _ in range(rounds):
            start = time.process_time()
            for request in requests:
                guard(ctx, request)
            times.append((time.process_time() - start) / sends * 1e6)
        best[name] = min(times)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=3000, help="messages per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    modes = ("off", "authn", "authn+authz")
    results: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.rounds):  # modes interleaved, so a busier moment hits all of them
        for mode in modes:
            with tempfile.TemporaryDirectory() as tmp:
                results[mode] += trio.run(measure, Path(tmp), mode, args.sends, 1)
    for mode in modes:
        median = sorted(results[mode])[len(results[mode]) // 2]
        print(f"{mode:12s} best {min(results[mode]):.1f} µs, median {median:.1f} µs CPU per message")
    for mode, best in guard_alone(args.sends, args.rounds).items():
        print(f"{mode:12s} the check alone: best {best:.1f} µs CPU per request")


if __name__ == "__main__":
    main()
