"""``ServerConfig``: the settings of a remoting server and of each connection it serves.

One module of its own so that :mod:`gateway.transport.connection` (which reads it per connection) and
:mod:`gateway.transport.server` (which builds connections) need not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.transport.tls import ServerTls


@dataclass(slots=True)
class ServerConfig:
    """Mirrors the parts of ``NettyServerConfig`` that matter here."""

    host: str = "127.0.0.1"
    port: int = 0
    max_frame_size: int = 16 * 1024 * 1024  # com.rocketmq.remoting.frameMaxLength
    idle_timeout_s: float = 120.0  # serverChannelMaxIdleTimeSeconds
    write_timeout_s: float = 30.0  # close a connection whose peer stops reading for this long
    # Answers queued per connection (being written count too) before handlers and the reader wait.
    # Room for an answer to each async send a Java producer may keep in flight
    # (the official benchmark producer allows 65,535); busy answers are ~100 bytes.
    send_queue_size: int = 65536  # frames
    send_queue_bytes: int = 8 * 1024 * 1024  # bytes of encoded frames
    # Concurrent requests per connection; beyond it SYSTEM_BUSY at once. As many as the Java broker
    # queues for its send pool (sendThreadPoolQueueCapacity) before it answers [OVERLOAD]: a
    # producer's 2,000 async sends on one connection are all taken, as by the real broker.
    max_in_flight: int = 10_000
    max_connections: int = 20000  # refuse (close at once) beyond this
    shutdown_grace_s: float = 5.0  # how long in-flight requests may take after a shutdown starts
    # The MQVersion ordinal written into every command sent (RemotingCommand's configVersion: the
    # server's own release); None: each command keeps its own (codec.versions.CURRENT_VERSION).
    command_version: int | None = None
    # tls.server.mode and the certificate (gateway.transport.tls); None: plaintext only, no sniffing.
    tls: ServerTls | None = None
