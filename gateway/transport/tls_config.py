"""TLS settings and contexts: the system properties of Java's ``TlsSystemConfig`` and ``TlsHelper``.

Mirrors org.apache.rocketmq.remoting.netty.TlsSystemConfig (the keys, read from JVM system
properties, here from ``-D`` flags), TlsHelper (the file ``tls.config.file`` whose keys override
them, and how the server and client contexts are built) and org.apache.rocketmq.remoting.common.TlsMode.
No Trio and no I/O besides loading the certificate files a context names: the CLI reads the files
of settings and hands their properties here.

Where Python's ``ssl`` module cannot do what Netty does, the difference is deliberate and said
once here (README, docs/security.md):

* Java in test mode (``tls.test.mode.enable``, true by default) serves a self-signed certificate
  even when ``tls.server.certPath`` is set; here configured certificate files win, and the
  self-signed one is made only when none is configured.
* Java's server with ``tls.server.authClient=false`` accepts any client certificate (Netty's
  ``InsecureTrustManagerFactory``); Python's server side cannot ask for a certificate without
  verifying it, so ``optional``/``require`` need ``tls.server.trustCertPath`` and a client
  certificate is always verified against it. Test mode requests no client certificate (Java: OPTIONAL).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

DEFAULT_TLS_CONFIG_FILE = "/etc/rocketmq/tls.properties"  # TlsSystemConfig.tlsConfigFile


class TlsMode(enum.Enum):
    """``tls.server.mode``: what a server port does with TLS and plaintext clients."""

    DISABLED = "disabled"  # a TLS ClientHello closes the connection; plaintext is served
    PERMISSIVE = "permissive"  # TLS when the first byte is 0x16, plaintext otherwise (Java's default)
    ENFORCING = "enforcing"  # plaintext connections are closed

    @classmethod
    def parse(cls, text: str) -> TlsMode:
        """Exact lower-case names as ``TlsMode.parse``; anything else is ``permissive``."""
        for mode in cls:
            if mode.value == text:
                return mode
        return cls.PERMISSIVE


class ClientAuth(enum.Enum):
    """``tls.server.need.client.auth`` (Netty's ``ClientAuth``)."""

    NONE = ssl.CERT_NONE
    OPTIONAL = ssl.CERT_OPTIONAL
    REQUIRE = ssl.CERT_REQUIRED

    @classmethod
    def parse(cls, text: str | None) -> ClientAuth:
        """Case-insensitive as ``TlsHelper.parseClientAuthMode``; blank or unknown is ``none``."""
        return cls.__members__.get((text or "").strip().upper(), cls.NONE)


#: Java key → field of :class:`TlsSystemConfig`. ``FILE_KEYS``: those ``tls.config.file`` may set
#: (TlsHelper.extractTlsConfigFromFile): the mode, ``tls.enable`` and the file's own path are
#: system properties only.
SYSTEM_KEYS = {
    "tls.server.mode": "server_mode",
    "tls.enable": "enable",
    "tls.config.file": "config_file",
}
FILE_KEYS = {
    "tls.test.mode.enable": "test_mode_enable",
    "tls.server.need.client.auth": "server_need_client_auth",
    "tls.server.keyPath": "server_key_path",
    "tls.server.keyPassword": "server_key_password",
    "tls.server.certPath": "server_cert_path",
    "tls.server.authClient": "server_auth_client",
    "tls.server.trustCertPath": "server_trust_cert_path",
    "tls.client.keyPath": "client_key_path",
    "tls.client.keyPassword": "client_key_password",
    "tls.client.certPath": "client_cert_path",
    "tls.client.authServer": "client_auth_server",
    "tls.client.trustCertPath": "client_trust_cert_path",
}
ALL_KEYS = {**SYSTEM_KEYS, **FILE_KEYS}


@dataclass(slots=True)
class TlsSystemConfig:
    """The TLS settings of one process; field names are the Java keys in snake_case."""

    server_mode: TlsMode = TlsMode.PERMISSIVE
    #: ``tls.enable``: outgoing remoting connections use TLS. ``None`` (unset): as Java's
    #: ``NettyClientConfig.useTLS``, which defaults to ``tls.server.mode == enforcing``.
    enable: bool | None = None
    config_file: str = DEFAULT_TLS_CONFIG_FILE
    test_mode_enable: bool = True
    server_need_client_auth: ClientAuth = ClientAuth.NONE
    server_key_path: str | None = None
    server_key_password: str | None = None
    server_cert_path: str | None = None
    server_auth_client: bool = False
    server_trust_cert_path: str | None = None
    client_key_path: str | None = None
    client_key_password: str | None = None
    client_cert_path: str | None = None
    client_auth_server: bool = False
    client_trust_cert_path: str | None = None

    @property
    def client_enabled(self) -> bool:
        """Whether outgoing remoting connections use TLS (``NettyClientConfig.useTLS``)."""
        return self.server_mode is TlsMode.ENFORCING if self.enable is None else self.enable

    def with_properties(
        self, props: Mapping[str, str], keys: Mapping[str, str] = ALL_KEYS
    ) -> TlsSystemConfig:
        """A copy with the Java ``keys`` found in ``props`` applied (others are left alone)."""
        changes: dict[str, object] = {}
        for key, name in keys.items():
            if key not in props:
                continue
            text = props[key].strip()
            if name == "server_mode":
                changes[name] = TlsMode.parse(text)
            elif name == "server_need_client_auth":
                changes[name] = ClientAuth.parse(text)
            elif name in ("enable", "test_mode_enable", "server_auth_client", "client_auth_server"):
                changes[name] = text.lower() == "true"  # Boolean.parseBoolean
            elif name == "config_file":
                changes[name] = text
            else:
                changes[name] = text or None
        config = dataclasses.replace(self)
        for name, value in changes.items():
            setattr(config, name, value)
        return config


def tls_system_config_of(
    system: Mapping[str, str], file_props: Mapping[str, str] | None = None
) -> TlsSystemConfig:
    """The settings from ``-D`` system properties, then the keys of ``tls.config.file`` (already
    read by the caller), which override them as ``TlsHelper.extractTlsConfigFromFile`` does."""
    config = TlsSystemConfig().with_properties(system)
    return config.with_properties(file_props or {}, FILE_KEYS)


def make_self_signed(common_name: str = "localhost") -> tuple[bytes, bytes]:
    """A PEM certificate and PEM private key (EC P-256: a few milliseconds to make, where the
    RSA key of Netty's ``SelfSignedCertificate`` takes tens to hundreds)."""
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


def _load_self_signed(context: ssl.SSLContext) -> None:
    cert_pem, key_pem = make_self_signed()
    # load_cert_chain takes only paths: the files live for the call, readable by us alone.
    with tempfile.TemporaryDirectory(prefix="rmq-tls-") as tmp:
        cert_file, key_file = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        for path, pem in ((cert_file, cert_pem), (key_file, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(pem)
        context.load_cert_chain(cert_file, key_file)


def _files_exist(*paths: str | None) -> bool:
    return all(path and Path(path).is_file() for path in paths)


@dataclass(frozen=True, slots=True)
class ServerCertificate:
    """What a server context is built from: the remoting ports use ``tls.server.*``, the gRPC port
    the Proxy's ``tlsCertPath``/``tlsKeyPath`` with ALPN ``h2`` and no client authentication."""

    cert_path: str | None
    key_path: str | None
    key_password: str | None = None
    test_mode: bool = True
    client_auth: ClientAuth = ClientAuth.NONE
    trust_cert_path: str | None = None
    alpn: tuple[str, ...] = ()

    @classmethod
    def remoting(cls, config: TlsSystemConfig) -> ServerCertificate:
        """The remoting ports' certificate (``TlsHelper.buildSslContext(false)``)."""
        return cls(
            config.server_cert_path,
            config.server_key_path,
            config.server_key_password,
            config.test_mode_enable,
            ClientAuth.NONE if config.test_mode_enable else config.server_need_client_auth,
            config.server_trust_cert_path,
        )

    @property
    def offered(self) -> bool:
        """Whether a context can be built at all (configured files, or test mode)."""
        return self.test_mode or _files_exist(self.cert_path, self.key_path)

    def check(self) -> None:
        """Refuse, before anything listens, what can never work; raises ValueError."""
        if self.client_auth is not ClientAuth.NONE and not self.test_mode and not self.trust_cert_path:
            mode = self.client_auth.name.lower()
            raise ValueError(
                f"tls.server.need.client.auth={mode} needs tls.server.trustCertPath"
                " (the CA of the client certificates)"
            )
        if self.test_mode:
            return
        for key, path in (("certPath", self.cert_path), ("keyPath", self.key_path)):
            if path and not Path(path).is_file():
                raise ValueError(f"tls.server.{key} {path!r} is not a readable file")


def server_context(cert: ServerCertificate) -> ssl.SSLContext | None:
    """The server's context, or None when TLS cannot be offered (no files and no test mode).

    Configured files win; else a self-signed certificate in test mode. Raises OSError or
    ssl.SSLError for unreadable or mismatched files or a wrong ``keyPassword``.
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    if cert.alpn:
        context.set_alpn_protocols(list(cert.alpn))
    if _files_exist(cert.cert_path, cert.key_path):
        context.load_cert_chain(cert.cert_path or "", cert.key_path, password=cert.key_password)
    elif cert.test_mode:
        _load_self_signed(context)
    else:
        return None
    if cert.client_auth is not ClientAuth.NONE:
        context.load_verify_locations(cafile=cert.trust_cert_path)
        context.verify_mode = cert.client_auth.value
    return context


def client_context(config: TlsSystemConfig) -> ssl.SSLContext:
    """The context of outgoing remoting connections (``TlsHelper.buildSslContext(true)``).

    Test mode, or ``tls.client.authServer=false``, trusts any server, as Netty's insecure trust
    manager; with ``authServer`` the server is checked against ``tls.client.trustCertPath``.
    Outside test mode the client certificate ``tls.client.certPath``/``keyPath`` is offered.
    Netty checks no host name, so neither do we. Raises OSError or ssl.SSLError for bad files.
    """
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.check_hostname = False
    if config.test_mode_enable:
        context.verify_mode = ssl.CERT_NONE
        return context
    if not config.client_auth_server:
        context.verify_mode = ssl.CERT_NONE
    elif config.client_trust_cert_path:
        context.load_verify_locations(cafile=config.client_trust_cert_path)
    if config.client_cert_path and config.client_key_path:
        context.load_cert_chain(
            config.client_cert_path, config.client_key_path, password=config.client_key_password
        )
    return context
