"""``GrpcServerConfig``: the settings of the gRPC endpoint, named after the Proxy's keys.

A module of its own, importing nothing heavy, so the CLI can build it without loading HTTP/2.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_GRPC_PORT = 8081  # ProxyConfig.grpcServerPort
MAX_INBOUND_MESSAGE_SIZE = 130 * 1024 * 1024  # ProxyConfig.grpcMaxInboundMessageSize: a batch of 4 MiB


@dataclass(slots=True)
class GrpcServerConfig:
    """Mirrors the gRPC parts of org.apache.rocketmq.proxy.config.ProxyConfig."""

    host: str = "127.0.0.1"
    grpc_server_port: int = DEFAULT_GRPC_PORT  # 0: any free port
    grpc_max_inbound_message_size: int = MAX_INBOUND_MESSAGE_SIZE  # bytes
    # TLS on the same port as plaintext (ProxyAndTlsProtocolNegotiator); a self-signed
    # certificate when the files below are missing and test mode is on (the Proxy's default).
    tls_test_mode_enable: bool = True
    tls_cert_path: str | None = None
    tls_key_path: str | None = None
    handshake_timeout_s: float = 10.0  # first bytes and TLS handshake of a new connection
    shutdown_grace_s: float = 2.0  # calls in flight may finish for this long after shutdown
