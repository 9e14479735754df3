"""TLS and plaintext on one port, and the certificate the server uses when none is configured.

Mirrors the Proxy's ``ProxyAndTlsProtocolNegotiator``: it peeks at the first bytes of a connection
and starts a TLS handshake (ALPN ``h2``) when they are a TLS record header (content type 0x16,
handshake), plaintext HTTP/2 otherwise. With ``tlsTestModeEnable`` (the Proxy's default) and no
certificate at ``tlsCertPath``/``tlsKeyPath``, the Proxy makes a self-signed one (Netty's
``SelfSignedCertificate``); so do we, with ``cryptography``, but when the first TLS client
connects rather than at start (:class:`LazyServerContext`): loading ``cryptography`` adds about
10 MiB to the process, which a broker no TLS client talks to need not carry.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import trio

TLS_HANDSHAKE = 0x16  # TLS record content type "handshake": a ClientHello starts with it


class PrefixedStream(trio.abc.Stream):
    """A stream whose first bytes, already read to sniff the protocol, are given back first."""

    def __init__(self, stream: trio.abc.Stream, prefix: bytes) -> None:
        self._stream = stream
        self._prefix = prefix

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._prefix:
            size = len(self._prefix) if max_bytes is None else max_bytes
            data, self._prefix = self._prefix[:size], self._prefix[size:]
            return bytes(data)
        return bytes(await self._stream.receive_some(max_bytes))

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        if isinstance(self._stream, trio.abc.HalfCloseableStream):
            await self._stream.send_eof()

    async def aclose(self) -> None:
        await self._stream.aclose()


def make_self_signed(common_name: str = "localhost") -> tuple[bytes, bytes]:
    """A PEM certificate and PEM private key (EC P-256, a few milliseconds to make, unlike RSA)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(common_name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


class LazyServerContext:
    """The server's TLS context, made on first use (in a worker thread: making the certificate
    takes tens of milliseconds), then kept. ``enabled`` says whether TLS is offered at all."""

    def __init__(self, cert_path: str | None, key_path: str | None, test_mode: bool) -> None:
        self._args = (cert_path, key_path, test_mode)
        self.enabled = test_mode or bool(
            cert_path and key_path and Path(cert_path).is_file() and Path(key_path).is_file()
        )
        self._context: ssl.SSLContext | None = None
        self._lock = trio.Lock()

    async def get(self) -> ssl.SSLContext | None:
        """Raises OSError/ssl.SSLError for unreadable or mismatched configured files."""
        if not self.enabled:
            return None
        async with self._lock:
            if self._context is None:
                self._context = await trio.to_thread.run_sync(server_context, *self._args)
        return self._context


def server_context(cert_path: str | None, key_path: str | None, test_mode: bool) -> ssl.SSLContext | None:
    """The server's TLS context offering ALPN h2, or None when TLS is off.

    The configured files are used when both exist; else a self-signed certificate when
    ``test_mode`` (``tlsTestModeEnable``); else no TLS (plaintext only).
    Raises OSError/ssl.SSLError for unreadable or mismatched configured files.
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.set_alpn_protocols(["h2"])
    if cert_path and key_path and Path(cert_path).is_file() and Path(key_path).is_file():
        context.load_cert_chain(cert_path, key_path)
        return context
    if not test_mode:
        return None
    import tempfile

    cert_pem, key_pem = make_self_signed()
    # load_cert_chain takes only paths: the files live for the call, readable by us alone.
    with tempfile.TemporaryDirectory(prefix="rmq-grpc-tls-") as tmp:
        cert_file, key_file = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        for path, pem in ((cert_file, cert_pem), (key_file, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(pem)
        context.load_cert_chain(cert_file, key_file)
    return context
