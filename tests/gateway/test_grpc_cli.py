"""``rmq-gateway`` with its gRPC endpoint as a user runs it: the flag, the config keys, the ready
line, and a real gRPC client over TLS (the Java 5.x client's default) and plaintext."""

from __future__ import annotations

import os
import re
import signal
import ssl
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
import trio

from gateway.cli import build_gateway, build_parser
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.helpers import read_ready_line

ROUTE = "/apache.rocketmq.v2.MessagingService/QueryRoute"


def _args(*argv: str) -> object:
    return build_parser().parse_args(list(argv))


def test_port_defaults_flag_and_config_key(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("grpcServerPort=18081\ntlsTestModeEnable=false\n")
    store = ["--store", str(tmp_path / "s")]
    default = build_gateway(_args("standalone", *store))
    from_file = build_gateway(_args("standalone", "-c", str(conf), *store))
    flag = build_gateway(_args("standalone", "-c", str(conf), "--grpc-port", "0", *store))
    any_port = build_gateway(_args("standalone", "--broker-port", "0", *store))
    off = build_gateway(_args("standalone", "--no-grpc", *store))
    ports = [g.broker_spec.grpc.grpc_server_port for g in (default, from_file, flag, any_port)]  # type: ignore[union-attr]
    assert ports == [8081, 18081, 0, 0]
    assert from_file.broker_spec.grpc.tls_test_mode_enable is False  # type: ignore[union-attr]
    assert off.broker_spec.grpc is None  # type: ignore[union-attr]


def test_malformed_grpc_key_refused(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("grpcServerPort=eighty\n")
    with pytest.raises(ValueError, match="grpcServerPort"):
        build_gateway(_args("standalone", "-c", str(conf), "--store", str(tmp_path / "s")))


def _route(
    target: str, credentials: grpc.ChannelCredentials | None, options: list[tuple[str, str]]
) -> pb.QueryRouteResponse:
    channel = (
        grpc.secure_channel(target, credentials, options) if credentials else grpc.insecure_channel(target)
    )
    with channel:
        rpc = channel.unary_unary(
            ROUTE,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.QueryRouteResponse.FromString,
        )
        host, port = target.rsplit(":", 1)
        request = pb.QueryRouteRequest(
            topic=pb.Resource(name="TBW102-not-here"),
            endpoints=pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host=host, port=int(port))]),
        )
        return rpc(request, metadata=[("x-mq-client-id", "cli-test")], timeout=10)  # type: ignore[no-any-return]


async def test_standalone_serves_grpc_over_tls_and_plaintext(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    command = [sys.executable, "-m", "gateway.cli", "standalone", "--namesrv-port", "0", "--broker-port", "0"]
    command += ["--grpc-port", "0", "--store", str(tmp_path / "data")]
    proc = await trio.to_thread.run_sync(
        lambda: subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    )
    try:
        line = await read_ready_line(proc, 30)
        match = re.search(r"grpc=(\S+)", line)
        assert match, line
        target = match.group(1)
        host, port = target.rsplit(":", 1)
        # The self-signed certificate, as a client that trusts it would fetch it.
        cert = await trio.to_thread.run_sync(lambda: ssl.get_server_certificate((host, int(port))))
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.encode())
        options = [("grpc.ssl_target_name_override", "localhost")]
        over_tls = await trio.to_thread.run_sync(lambda: _route(target, credentials, options))
        plain = await trio.to_thread.run_sync(lambda: _route(target, None, []))
        for answer in (over_tls, plain):
            assert answer.status.code == pb.TOPIC_NOT_FOUND
    finally:
        proc.send_signal(signal.SIGTERM)
        await trio.to_thread.run_sync(lambda: proc.wait(timeout=30))
    assert proc.returncode == 0


_LAZY = """
import sys, trio
from gateway.launcher import standalone_gateway

async def main(store):
    gateway = standalone_gateway(store, grpc_port=0)
    async with trio.open_nursery() as nursery:
        endpoints = await nursery.start(gateway.run)
        assert endpoints.grpc_addr, endpoints
        heavy = ("h2", "google.protobuf", "cryptography", "broker.grpc")
        loaded = sorted(m for m in heavy if m in sys.modules)
        print(" ".join(loaded) or "nothing")
        gateway.shutdown()

trio.run(main, sys.argv[1])
"""


def test_idle_endpoint_loads_neither_http2_nor_protobuf(tmp_path: Path) -> None:
    """The endpoint binds at start; HTTP/2, protobuf, the handlers and the certificate come with
    the first client (docs/grpc.md: an idle broker keeps its footprint)."""
    result = subprocess.run(
        [sys.executable, "-c", _LAZY, str(tmp_path / "store")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "nothing"
