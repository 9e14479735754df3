"""TLS on the remoting ports: the mode table, the settings, and real TLS clients on a real server.

The server is :class:`RemotingServer` with an echo handler; clients are our own remoting client
(:func:`gateway.transport.client.connect`, plaintext or TLS) and raw sockets where what matters
is the bytes the server sends back (nothing, under ``disabled``, to a ClientHello).
"""

from __future__ import annotations

import datetime
import logging
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from gateway.launcher import standalone_gateway
from gateway.transport.client import connect
from gateway.transport.config import ServerConfig
from gateway.transport.connection import PeerClosedError
from gateway.transport.dispatch import Dispatcher, RequestContext
from gateway.transport.server import RemotingServer
from gateway.transport.tls import Decision, LazyServerContext, ServerTls, decide
from gateway.transport.tls_config import (
    ClientAuth,
    ServerCertificate,
    TlsMode,
    TlsSystemConfig,
    client_context,
    make_self_signed,
    tls_system_config_of,
)
from tests.helpers import small_store, wait_until

ECHO = 9001
TLS_LOGGER = "gateway.transport.tls"


ECHOED: list[bytes] = []  # bodies the handler saw, to show a refused connection reaches no handler


def _echo(ctx: RequestContext, req: RemotingCommand, header: Any) -> RemotingCommand:
    ECHOED.append(req.body)
    return req.make_response(ResponseCode.SUCCESS, body=req.body)


@asynccontextmanager
async def tls_server(mode: TlsMode, certificate: ServerCertificate | None = None) -> AsyncIterator[str]:
    dispatcher = Dispatcher("tls-test")
    dispatcher.register(ECHO, _echo)
    context = LazyServerContext(certificate or ServerCertificate(None, None, test_mode=True))
    server = RemotingServer(dispatcher, ServerConfig(tls=ServerTls(mode, context)), name="tls-test")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        try:
            yield f"127.0.0.1:{server.port}"
        finally:
            nursery.cancel_scope.cancel()


async def _echo_over(address: str, tls: ssl.SSLContext | None) -> bytes | None:
    """The echo of a request, or None when the server closed the connection instead."""
    async with connect(address, tls=tls) as conn:
        try:
            response = await conn.invoke(RemotingCommand.request(ECHO, body=b"ping"), timeout_s=5)
        except PeerClosedError:
            return None
    return response.body


TEST_MODE_CLIENT = client_context(TlsSystemConfig())  # trusts any server, as Java's test mode


@pytest.mark.parametrize(
    ("mode", "grpc", "hello", "plain"),
    [
        (TlsMode.PERMISSIVE, False, Decision.TLS, Decision.PLAINTEXT),
        (TlsMode.ENFORCING, False, Decision.TLS, Decision.CLOSE_PLAINTEXT_REFUSED),
        (TlsMode.DISABLED, False, Decision.CLOSE_TLS_REFUSED, Decision.PLAINTEXT),
        (TlsMode.PERMISSIVE, True, Decision.TLS, Decision.PLAINTEXT),
        (TlsMode.ENFORCING, True, Decision.TLS, Decision.TLS),
        (TlsMode.DISABLED, True, Decision.PLAINTEXT, Decision.PLAINTEXT),
    ],
)
def test_decision_table(mode: TlsMode, grpc: bool, hello: Decision, plain: Decision) -> None:
    assert decide(0x16, mode, grpc=grpc) is hello
    assert decide(0x00, mode, grpc=grpc) is plain  # a remoting frame starts with its length


def test_settings_parse_as_java_and_the_file_overrides_only_its_keys() -> None:
    assert TlsMode.parse("enforcing") is TlsMode.ENFORCING
    assert TlsMode.parse("ENFORCING") is TlsMode.PERMISSIVE  # TlsMode.parse: exact names only
    assert ClientAuth.parse("Require") is ClientAuth.REQUIRE
    assert ClientAuth.parse("bogus") is ClientAuth.NONE
    config = tls_system_config_of(
        {"tls.server.mode": "enforcing", "tls.test.mode.enable": "false", "tls.server.certPath": "/a"},
        {
            "tls.server.certPath": "/b",
            "tls.server.mode": "disabled",
            "tls.server.need.client.auth": "optional",
        },
    )
    assert config.server_mode is TlsMode.ENFORCING  # a system property only
    assert (config.test_mode_enable, config.server_cert_path) == (False, "/b")
    assert config.server_need_client_auth is ClientAuth.OPTIONAL
    assert config.client_enabled  # NettyClientConfig.useTLS defaults to enforcing mode
    assert not tls_system_config_of({}).client_enabled
    assert not tls_system_config_of({"tls.server.mode": "enforcing", "tls.enable": "false"}).client_enabled


async def test_permissive_serves_tls_and_plaintext_on_one_port() -> None:
    async with tls_server(TlsMode.PERMISSIVE) as address:
        assert await _echo_over(address, TEST_MODE_CLIENT) == b"ping"
        assert await _echo_over(address, None) == b"ping"


async def test_enforcing_closes_plaintext_with_one_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, TLS_LOGGER)
    async with tls_server(TlsMode.ENFORCING) as address:
        assert await _echo_over(address, TEST_MODE_CLIENT) == b"ping"
        ECHOED.clear()
        assert await _echo_over(address, None) is None
        # Java's TlsModeHandler still passes the refused first read down the pipeline, so that
        # request runs; here nothing of a refused connection reaches a handler.
        assert ECHOED == []
    lines = [r for r in caplog.records if r.name == TLS_LOGGER]
    assert [r.getMessage().split(": ", 1)[1] for r in lines] == [
        "closing, a plaintext client while tls.server.mode is enforcing"
    ]
    assert lines[0].exc_info is None


async def test_disabled_answers_a_client_hello_with_no_tls(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, TLS_LOGGER)
    async with tls_server(TlsMode.DISABLED) as address:
        assert await _echo_over(address, None) == b"ping"
        host, port = address.rsplit(":", 1)
        raw = await trio.open_tcp_stream(host, int(port))
        client = TEST_MODE_CLIENT.wrap_bio(ssl.MemoryBIO(), outgoing := ssl.MemoryBIO())
        with pytest.raises(ssl.SSLWantReadError):
            client.do_handshake()
        await raw.send_all(outgoing.read())  # a ClientHello
        with trio.fail_after(5):
            answer = await raw.receive_some(4096)
        assert answer == b""  # closed, not a ServerHello
        await raw.aclose()
    assert any("while tls.server.mode is disabled" in r.getMessage() for r in caplog.records)


async def test_garbage_after_0x16_costs_one_line_and_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with tls_server(TlsMode.PERMISSIVE) as address:
        host, port = address.rsplit(":", 1)
        for _ in range(3):
            raw = await trio.open_tcp_stream(host, int(port))
            await raw.send_all(b"\x16\x03\x01\x00\x05garbage-garbage")
            with trio.fail_after(5):
                while await raw.receive_some(4096):
                    pass  # a TLS alert may come first, then the close
            await raw.aclose()
        assert await _echo_over(address, None) == b"ping"  # the server still serves
    failures = [r for r in caplog.records if "TLS handshake failed" in r.getMessage()]
    assert len(failures) == 3
    assert all(r.exc_info is None and r.levelno == logging.INFO for r in failures)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def _ca_and_client(tmp: Path) -> tuple[Path, Path, Path]:
    """A CA certificate file and a client certificate and key it signed."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(ca_key, hashes.SHA256())
    )
    paths = tmp / "ca.pem", tmp / "client.pem", tmp / "client.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths


async def test_require_client_auth_refuses_a_foreign_certificate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, TLS_LOGGER)
    ca, client_cert, client_key = _ca_and_client(tmp_path)
    server_cert, server_key = make_self_signed()
    (tmp_path / "server.pem").write_bytes(server_cert)
    (tmp_path / "server.key").write_bytes(server_key)
    foreign_cert, foreign_key = make_self_signed("intruder")
    (tmp_path / "foreign.pem").write_bytes(foreign_cert)
    (tmp_path / "foreign.key").write_bytes(foreign_key)
    certificate = ServerCertificate(
        str(tmp_path / "server.pem"),
        str(tmp_path / "server.key"),
        test_mode=False,
        client_auth=ClientAuth.REQUIRE,
        trust_cert_path=str(ca),
    )

    def client(cert: Path, key: Path) -> ssl.SSLContext:
        return client_context(
            TlsSystemConfig(test_mode_enable=False, client_cert_path=str(cert), client_key_path=str(key))
        )

    async with tls_server(TlsMode.ENFORCING, certificate) as address:
        assert await _echo_over(address, client(client_cert, client_key)) == b"ping"
        foreign = client(tmp_path / "foreign.pem", tmp_path / "foreign.key")
        try:  # TLS 1.3: the client's handshake ends before the server checks its certificate
            refused = await _echo_over(address, foreign) is None
        except OSError:  # TLS 1.2: the handshake itself fails
            refused = True
        assert refused
    failures = [r for r in caplog.records if "TLS handshake failed" in r.getMessage()]
    assert len(failures) == 1
    assert failures[0].exc_info is None


def test_client_auth_without_a_trusted_ca_is_refused_before_start() -> None:
    certificate = ServerCertificate.remoting(
        TlsSystemConfig(test_mode_enable=False, server_need_client_auth=ClientAuth.REQUIRE)
    )
    with pytest.raises(ValueError, match=r"tls.server.trustCertPath"):
        certificate.check()


async def test_broker_registers_with_an_enforcing_namesrv(tmp_path: Path) -> None:
    """Under enforcing the broker's own client uses TLS (NettyClientConfig.useTLS's default)."""
    tls = TlsSystemConfig(server_mode=TlsMode.ENFORCING)
    gateway = standalone_gateway(str(tmp_path / "store"), properties=small_store(tmp_path), tls=tls)
    async with trio.open_nursery() as nursery:
        endpoints = await nursery.start(gateway.run)
        assert gateway.broker is not None

        await wait_until(
            lambda: gateway.broker is not None and gateway.broker.broker.registrar.registrations, 10
        )
        assert endpoints.namesrv_addr is not None
        async with connect(endpoints.namesrv_addr, tls=TEST_MODE_CLIENT) as conn:
            request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
            response = await conn.invoke(request, timeout_s=5)
        assert response.code == ResponseCode.SUCCESS
        assert endpoints.broker_addr is not None
        assert endpoints.broker_addr.encode() in response.body
        gateway.shutdown()


async def test_an_encrypted_key_with_its_password_and_an_unusable_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``tls.server.keyPassword`` opens a PKCS#8 key encrypted with a modern cipher; a wrong
    password costs each TLS client one ERROR line and its connection, never the server."""
    caplog.set_level(logging.INFO, TLS_LOGGER)
    cert_pem, key_pem = make_self_signed()
    key = serialization.load_pem_private_key(key_pem, password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"123456"),
    )
    (tmp_path / "c.pem").write_bytes(cert_pem)
    (tmp_path / "k.pem").write_bytes(encrypted)

    def certificate(password: str) -> ServerCertificate:
        return ServerCertificate(str(tmp_path / "c.pem"), str(tmp_path / "k.pem"), password, test_mode=False)

    async with tls_server(TlsMode.PERMISSIVE, certificate("123456")) as address:
        assert await _echo_over(address, TEST_MODE_CLIENT) == b"ping"
    async with tls_server(TlsMode.PERMISSIVE, certificate("wrong")) as address:
        for _ in range(2):
            with pytest.raises(OSError, match="TLS handshake"):
                await _echo_over(address, TEST_MODE_CLIENT)
        assert await _echo_over(address, None) == b"ping"
    unusable = [r for r in caplog.records if "certificate is unusable" in r.getMessage()]
    assert len(unusable) == 2
    assert all(r.exc_info is None for r in unusable)


@asynccontextmanager
async def grpc_server(mode: TlsMode) -> AsyncIterator[tuple[str, int]]:
    from gateway.transport.grpc.config import GrpcServerConfig
    from gateway.transport.grpc.server import GrpcServer

    context = LazyServerContext(ServerCertificate(None, None, test_mode=True, alpn=("h2",)))
    server = GrpcServer({}, GrpcServerConfig(grpc_server_port=0), context, tls_mode=mode)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        try:
            yield "127.0.0.1", server.port
        finally:
            nursery.cancel_scope.cancel()


async def _tls_handshake(host: str, port: int) -> bool:
    tcp = await trio.open_tcp_stream(host, port)
    tls = trio.SSLStream(tcp, TEST_MODE_CLIENT, server_hostname="localhost")
    try:
        with trio.fail_after(10):
            await tls.do_handshake()
    except trio.BrokenResourceError:
        return False
    finally:
        await trio.aclose_forcefully(tls)
    return True


async def test_grpc_port_follows_the_mode_as_the_proxy() -> None:
    """ProxyAndTlsProtocolNegotiator: enforcing makes a plaintext client's bytes a failed TLS
    handshake (the connection closes); disabled never answers TLS."""
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    async with grpc_server(TlsMode.ENFORCING) as (host, port):
        assert await _tls_handshake(host, port)
        raw = await trio.open_tcp_stream(host, port)
        await raw.send_all(preface)
        with trio.fail_after(10):
            while answer := await raw.receive_some(4096):
                assert answer[0] == 0x15  # at most a TLS alert record, never HTTP/2 frames
        await raw.aclose()
    async with grpc_server(TlsMode.DISABLED) as (host, port):
        assert not await _tls_handshake(host, port)


async def test_shutdown_does_not_wait_for_a_client_that_never_speaks() -> None:
    dispatcher = Dispatcher("tls-test")
    tls = ServerTls(TlsMode.PERMISSIVE, None)
    server = RemotingServer(dispatcher, ServerConfig(tls=tls, idle_timeout_s=60), name="tls-test")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        silent = await trio.open_tcp_stream("127.0.0.1", server.port)
        await wait_until(lambda: server.statistics()["negotiating"] == 1, 5)
        server.shutdown()
        with trio.fail_after(5):
            await server.wait_closed()
        await silent.aclose()


def test_cli_takes_system_properties_and_the_tls_config_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``-Dkey=value`` as the JVM takes it; ``tls.config.file`` overrides the certificate keys;
    ``useTLS`` in ``-c`` (NettyClientConfig) sets the broker's client side; unknown keys are logged."""
    from gateway.cli import build_gateway, build_parser

    tls_file = tmp_path / "tls.properties"
    tls_file.write_text("tls.test.mode.enable=false\ntls.server.need.client.auth=require\n")
    conf = tmp_path / "broker.conf"
    conf.write_text("useTLS=false\n")
    argv = [
        "standalone",
        "--store",
        str(tmp_path / "store"),
        "-Dtls.server.mode=enforcing",
        f"-Dtls.config.file={tls_file}",
        "-Dtls.server.trustCertPath=/ca.pem",
        "-Dno.such.key=1",
        "-c",
        str(conf),
    ]
    caplog.set_level(logging.WARNING)
    gateway = build_gateway(build_parser().parse_args(argv))
    assert gateway.tls.server_mode is TlsMode.ENFORCING
    assert gateway.tls.test_mode_enable is False
    assert gateway.tls.server_need_client_auth is ClientAuth.REQUIRE
    assert gateway.tls.server_trust_cert_path == "/ca.pem"
    assert gateway.tls.client_enabled is False  # useTLS=false wins over enforcing's default
    warnings = [r.getMessage() for r in caplog.records]
    assert "system property no.such.key is not used by this gateway (ignored)" in warnings
    assert not [w for w in warnings if "useTLS" in w]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["standalone", "-D", "=value"])
