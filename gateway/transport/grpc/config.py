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
    max_connections: int = 20000  # closed at once beyond this (the remoting servers' limit)
    handshake_timeout_s: float = 10.0  # first bytes and TLS handshake of a new connection
    shutdown_grace_s: float = 2.0  # calls in flight may finish for this long after shutdown
    # The renewal of push consumers' receipt handles (DefaultReceiptHandleManager).
    enable_proxy_auto_renew: bool = True
    default_invisible_time_mills: int = 60_000  # a receive with auto_renew takes this
    renew_ahead_time_millis: int = 10_000  # renewed when visible again within this
    renew_schedule_period_millis: int = 5_000  # how often the handles are scanned
    renew_max_time_millis: int = 3 * 3600 * 1000  # then the message goes back with the group's delay
    max_renew_retry_times: int = 3  # failed renewals in a row before one is given up
    invisible_time_millis_when_clear: int = 1_000  # a gone client's messages come back after this
    # The request checks (broker.grpc.validation); a limit <= 0 turns its check off, as in Java.
    max_message_size: int = 4 * 1024 * 1024  # bytes of a message body
    enable_message_body_empty_check: bool = True
    max_user_property_size: int = 16 * 1024  # bytes of user properties + tag + keys per message
    user_property_max_num: int = 128  # user properties per message
    max_message_group_size: int = 64  # bytes; a group of this size or more is refused
    min_invisible_time_mills_for_recv: int = 10_000  # a receive's invisible duration
    max_invisible_time_mills: int = 12 * 3600 * 1000  # a receive's or a change's
    max_delay_time_mills: int = 24 * 3600 * 1000  # how far ahead a delivery time may be
    max_transaction_recovery_second: int = 3600  # a transactional message's orphaned recovery
    # The long polling of a receive: the client's wish clamped to these, then to the call deadline.
    grpc_client_consumer_min_long_polling_timeout_millis: int = 5_000
    grpc_client_consumer_max_long_polling_timeout_millis: int = 20_000  # also what consumers are told
    grpc_client_consumer_long_polling_batch_size: int = 32  # the receive batch consumers are told
    long_polling_reserve_time_in_millis: int = 100  # kept free before the deadline for the answer
