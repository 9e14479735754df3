"""``host:port`` strings as RocketMQ writes them (``RemotingHelper.parseChannelRemoteAddr``).

Trio-free, so broker and NameServer state may parse the addresses connections report.
"""

from __future__ import annotations


def split_address(address: str) -> tuple[str, int]:
    """``"host:port"`` or ``"[v6]:port"`` into its parts; raises ``ValueError``."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"not a host:port address: {address!r}")
    return host.strip("[]"), int(port)


def join_address(host: str, port: int) -> str:
    """The inverse of :func:`split_address` (IPv6 hosts in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def loopback_if_wildcard(address: str) -> str:
    """A listener's address as a local client reaches it: ``0.0.0.0`` / ``[::]`` become 127.0.0.1."""
    host, port = split_address(address)
    return join_address("127.0.0.1", port) if host in ("0.0.0.0", "::") else address
