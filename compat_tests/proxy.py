"""A recording TCP proxy: forwards bytes unchanged both ways and records every remoting frame.

Used to capture golden vectors from real Java clients and to debug differences. Framing only
relies on the 4-byte length prefix, so the proxy does not depend on the codec it helps test.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass, field

import trio


@dataclass
class Frame:
    label: str  # which peer the proxy fronts, e.g. "namesrv" or "broker"
    conn_id: int
    direction: str  # "c2s" (client to server) or "s2c"
    data: bytes  # the whole frame, length prefix included


@dataclass
class RecordingProxy:
    label: str
    listen: tuple[str, int]
    upstream: tuple[str, int]
    frames: list[Frame] = field(default_factory=list)
    port: int = 0
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(self.listen[1], host=self.listen[0])
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, client: trio.SocketStream) -> None:
        conn_id = next(self._ids)
        try:
            server = await trio.open_tcp_stream(*self.upstream)
        except OSError:
            await client.aclose()
            return
        async with client, server, trio.open_nursery() as nursery:
            nursery.start_soon(self._pump, client, server, conn_id, "c2s", nursery.cancel_scope)
            nursery.start_soon(self._pump, server, client, conn_id, "s2c", nursery.cancel_scope)

    async def _pump(
        self,
        src: trio.SocketStream,
        dst: trio.SocketStream,
        conn_id: int,
        direction: str,
        scope: trio.CancelScope,
    ) -> None:
        buf = bytearray()
        try:
            while data := await src.receive_some(65536):
                await dst.send_all(data)
                buf += data
                while len(buf) >= 4:
                    (length,) = struct.unpack_from(">i", buf)
                    if length < 0 or len(buf) < 4 + length:
                        break
                    self.frames.append(Frame(self.label, conn_id, direction, bytes(buf[: 4 + length])))
                    del buf[: 4 + length]
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        scope.cancel()
