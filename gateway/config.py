"""``ServerConfig``: the settings of a remoting server and of each connection it serves.

One module of its own so that :mod:`gateway.connection` (which reads it per connection) and
:mod:`gateway.server` (which builds connections) need not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ServerConfig:
    """Mirrors the parts of ``NettyServerConfig`` that matter here."""

    host: str = "127.0.0.1"
    port: int = 0
    max_frame_size: int = 16 * 1024 * 1024  # com.rocketmq.remoting.frameMaxLength
    idle_timeout_s: float = 120.0  # serverChannelMaxIdleTimeSeconds
    write_timeout_s: float = 30.0  # close a connection whose peer stops reading for this long
    send_queue_size: int = 64  # frames queued per connection before handlers block
    max_in_flight: int = 256  # concurrent requests per connection before the reader pauses
    max_connections: int = 20000  # refuse (close at once) beyond this
    shutdown_grace_s: float = 5.0  # how long in-flight requests may take after a shutdown starts
