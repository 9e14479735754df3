"""Ports for servers that a test starts and that bind a moment later, in another process.

A port the OS hands out for ``bind(0)`` comes from the ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768–60999 on Linux), the same range every
outgoing connection on the machine draws its local port from. Between the pick and the server's
own bind, a client's connect — a JVM's, on a machine running tests in parallel — can take it,
and the server dies with "Address already in use". Ports are therefore picked below that range,
at random in a slice of it that belongs to this pytest-xdist worker, and never handed out twice by
one process: a pick can still meet a port in use, and it is then probed and skipped.
"""

from __future__ import annotations

import os
import random
import re
import socket
from collections.abc import Iterable
from pathlib import Path

LOOPBACK = ("127.0.0.1",)
LOWEST = 20_000
WORKER_SLICES = 8  # pytest-xdist workers get disjoint slices (gw0..gw7; more share by modulo)

_handed_out: set[int] = set()


def _ephemeral_low(default: int = 32_768) -> int:
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
    except OSError:
        return default
    return int(text.split()[0])


def _worker_slice() -> range:
    """This process's slice of the ports from :data:`LOWEST` to just below the ephemeral range."""
    top = max(LOWEST + WORKER_SLICES * 256, _ephemeral_low())
    width = (top - LOWEST) // WORKER_SLICES
    found = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    index = int(found.group(1)) % WORKER_SLICES if found else random.randrange(WORKER_SLICES)
    start = LOWEST + index * width
    return range(start, start + width)


def _bindable(hosts: Iterable[str], ports: Iterable[int]) -> bool:
    try:
        for host in hosts:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            for port in ports:
                with socket.socket(family) as probe:
                    probe.bind((host, port))
    except OSError:
        return False
    return True


def free_port(
    hosts: tuple[str, ...] = LOOPBACK,
    offsets: tuple[int, ...] = (0,),
    *,
    spare_below: int = 0,
    spare_above: int = 0,
) -> int:
    """A port P such that P + each offset (and every port from P - ``spare_below`` to
    P + ``spare_above``) can be bound now on every host (IPv4 or IPv6 literals), outside the
    ephemeral range and not handed out before by this process."""
    wanted = sorted({*offsets, *range(-spare_below, spare_above + 1)})
    ports = _worker_slice()
    for _ in range(500):
        port = random.choice(ports)
        span = [port + off for off in wanted]
        if span[0] < 1024 or span[-1] > 65535 or _handed_out.intersection(span):
            continue
        if _bindable(hosts, span):
            _handed_out.update(span)
            return port
    raise RuntimeError(f"no free port in {ports.start}..{ports.stop - 1}")
