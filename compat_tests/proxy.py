"""A recording TCP proxy: forwards bytes unchanged both ways and records every remoting frame.

Put in front of a NameServer or a broker, it accepts a connection on a loopback address, opens one
to the upstream address (IPv4 or IPv6), and pumps bytes in each direction. Every chunk is written
on before it is looked at, so the proxy adds no delay beyond one read; a copy is then split into
frames by the 4-byte length prefix alone (nothing else of the protocol is decoded here) and each
whole frame is recorded with its direction, connection id, peer label and arrival time.

A direction whose length prefix is not plausible (negative, or above the 16 MiB Java frame limit)
stops being split but is still forwarded unchanged, and the connection is flagged ``unframed``.

Use :meth:`RecordingProxy.run` inside a Trio nursery, or :func:`running_proxies` from synchronous
code (it runs the proxies on a Trio loop in a background thread).
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

import trio

log = logging.getLogger(__name__)

MAX_FRAME_LENGTH = 16 * 1024 * 1024  # RocketMQ remoting default frame limit (NettyDecoder)
READ_SIZE = 65536  # bytes per receive_some
CLOSE_GRACE_S = 5.0  # after one direction ends, how long the other may still drain
CONNECT_TIMEOUT_S = 10.0  # upstream connect limit


@dataclass(frozen=True)
class Frame:
    """One whole remoting frame seen by the proxy."""

    label: str  # which server the proxy fronts, e.g. "namesrv" or "broker"
    conn_id: int  # per proxy, from 1
    direction: str  # "c2s" (client to server) or "s2c"
    data: bytes  # the whole frame, length prefix included
    timestamp: float  # time.time() when its last byte arrived
    seq: int  # arrival order across every connection of every proxy sharing the counter


@dataclass
class Connection:
    """What the proxy knows about one accepted connection."""

    label: str
    conn_id: int
    client: tuple[str, int]  # the peer that connected to the proxy
    upstream_local: tuple[str, int] | None = None  # the proxy's side of the upstream socket
    opened: float = 0.0
    closed: float | None = None
    bytes_c2s: int = 0
    bytes_s2c: int = 0
    unframed: bool = False  # a direction stopped being split (implausible length prefix)
    leftover: dict[str, int] = field(default_factory=dict)  # bytes of an incomplete final frame


_global_seq = itertools.count(1)


@dataclass
class RecordingProxy:
    """Forward ``listen`` to ``upstream`` and record frames; ``label`` names the server."""

    label: str
    listen: tuple[str, int]
    upstream: tuple[str, int]
    frames: list[Frame] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    port: int = 0
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; ``task_status.started`` gets the bound port."""
        listeners = await trio.open_tcp_listeners(self.listen[1], host=self.listen[0])
        self.port = int(listeners[0].socket.getsockname()[1])
        task_status.started(self.port)
        await trio.serve_listeners(self._handle, listeners)

    @property
    def address(self) -> str:
        """``host:port`` of the listening side, as a RocketMQ client spells it."""
        host = self.listen[0]
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    async def _handle(self, client: trio.SocketStream) -> None:
        conn = Connection(
            self.label,
            next(self._ids),
            _sockaddr(client.socket.getpeername()),
            opened=time.time(),
        )
        self.connections.append(conn)
        try:
            with trio.fail_after(CONNECT_TIMEOUT_S):
                server = await trio.open_tcp_stream(*self.upstream)
        except (OSError, trio.TooSlowError) as err:
            log.warning("%s#%d: upstream %s unreachable: %s", self.label, conn.conn_id, self.upstream, err)
            conn.closed = time.time()
            await client.aclose()
            return
        conn.upstream_local = _sockaddr(server.socket.getsockname())
        try:
            async with client, server, trio.open_nursery() as nursery:
                done = trio.Event()
                nursery.start_soon(self._pump, client, server, conn, "c2s", done)
                nursery.start_soon(self._pump, server, client, conn, "s2c", done)
                await done.wait()
                nursery.cancel_scope.deadline = trio.current_time() + CLOSE_GRACE_S
        finally:
            conn.closed = time.time()

    async def _pump(
        self,
        src: trio.SocketStream,
        dst: trio.SocketStream,
        conn: Connection,
        direction: str,
        done: trio.Event,
    ) -> None:
        buf = bytearray()
        framing = True
        try:
            while data := await src.receive_some(READ_SIZE):
                await dst.send_all(data)  # forward first: recording never delays the peer
                if direction == "c2s":
                    conn.bytes_c2s += len(data)
                else:
                    conn.bytes_s2c += len(data)
                if framing:
                    buf += data
                    framing = self._split(buf, conn, direction)
            await dst.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            conn.leftover[direction] = len(buf)
            done.set()

    def _split(self, buf: bytearray, conn: Connection, direction: str) -> bool:
        """Record the whole frames at the start of ``buf`` and drop them; False when unframeable."""
        while len(buf) >= 4:
            length = int.from_bytes(buf[:4], "big", signed=True)
            if length < 4 or length > MAX_FRAME_LENGTH:
                log.warning(
                    "%s#%d %s: length prefix %d, recording stops", self.label, conn.conn_id, direction, length
                )
                conn.unframed = True
                buf.clear()
                return False
            if len(buf) < 4 + length:
                break
            frame = Frame(
                self.label, conn.conn_id, direction, bytes(buf[: 4 + length]), time.time(), next(_global_seq)
            )
            self.frames.append(frame)
            del buf[: 4 + length]
        return True


def _sockaddr(addr: tuple[str, int] | tuple[str, int, int, int]) -> tuple[str, int]:
    return str(addr[0]), int(addr[1])


@contextmanager
def running_proxies(proxies: list[RecordingProxy], timeout: float = 10.0) -> Iterator[list[RecordingProxy]]:
    """Run ``proxies`` on a Trio loop in a daemon thread for the duration of the ``with`` block.

    Yields once every proxy listens (their ``port`` is set); stops them all on exit. Raises
    RuntimeError if they do not start within ``timeout`` seconds or a proxy fails to bind.
    """
    started = threading.Event()
    token: list[trio.lowlevel.TrioToken] = []
    scope = trio.CancelScope()
    errors: list[BaseException] = []

    async def main() -> None:
        token.append(trio.lowlevel.current_trio_token())
        with scope:
            async with trio.open_nursery() as nursery:
                for proxy in proxies:
                    await nursery.start(proxy.run)
                started.set()

    def target() -> None:
        try:
            trio.run(main)
        except BaseException as err:  # reported to the caller's thread below
            errors.append(err)
        finally:
            started.set()

    thread = threading.Thread(target=target, name="recording-proxies", daemon=True)
    thread.start()
    if not started.wait(timeout) or errors:
        _stop(thread, token, scope)
        raise RuntimeError(f"proxies did not start: {errors}")
    try:
        yield proxies
    finally:
        _stop(thread, token, scope)


def _stop(thread: threading.Thread, token: list[trio.lowlevel.TrioToken], scope: trio.CancelScope) -> None:
    if token and thread.is_alive():
        with suppress(trio.RunFinishedError):
            trio.from_thread.run_sync(scope.cancel, trio_token=token[0])
    thread.join(timeout=CLOSE_GRACE_S + 5)


def loopback_ipv6_available() -> bool:
    """Whether ``::1`` can be bound here (some containers have IPv6 disabled)."""
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True
