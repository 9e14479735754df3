"""The master's side of classic HA: the HA port, one connection per slave, and SYNC_MASTER waits.

Mirrors ``org.apache.rocketmq.store.ha.DefaultHAService`` (accept, ``push2SlaveMaxOffset``,
``getRuntimeInfo``), ``DefaultHAConnection`` (its ``ReadSocketService`` and
``WriteSocketService`` are the two tasks of :meth:`HAService._serve_slave`) and
``GroupTransferService`` (:meth:`HAService.wait_replicated`). The bytes on the wire and what the
store does with them are in :mod:`store.ha`.

Per slave connection:

* reader: every read that completes an 8-byte report makes the last whole report in the buffer
  the slave's ack offset (the first one is also where the transfer starts); a connection with
  nothing to read for ``haHousekeepingInterval`` is closed;
* writer: waits for the first report, then sends ``[offset, size] + bytes`` of at most
  ``haTransferBatchSize`` from the start offset on, one file at a time, and a ``[offset, 0]``
  heartbeat when it sent nothing for ``haSendHeartbeatInterval``. With nothing new it sleeps until
  a put wakes it (:meth:`HAService.wakeup`) or 100 ms pass (``allWaitForRunning(100)``).

SYNC_MASTER (``CommitLog.handleHA``): a put needs ``inSyncReplicas`` copies, the master's
included; with the default of 1 it is acknowledged at once, as in Java. Otherwise it waits until
enough slaves ack an offset at or past the put's end, for ``slaveTimeout`` ms, and becomes
``FLUSH_SLAVE_TIMEOUT`` (a send answers code 12, which the client counts as sent).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from broker.ha.runtime_info import master_runtime_info
from gateway.transport.accept import Acceptor
from store.config import StoreConfig
from store.errors import StoreError
from store.ha import REPORT, TRANSFER_HEADER, transfer_data, transfer_start
from store.message_store import MessageStore
from store.results import PutMessageResult, PutMessageStatus

logger = logging.getLogger(__name__)

IDLE_WAIT_S = 0.1  # WriteSocketService: allWaitForRunning(100) when there is nothing to send
READ_CHUNK = 64 * 1024
MAX_SLAVES = 64


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class ByteRate:
    """``FlowMonitor``: bytes moved in the last whole second."""

    __slots__ = ("_count", "_second", "last_second")

    def __init__(self) -> None:
        self._second = int(time.monotonic())
        self._count = 0
        self.last_second = 0

    def add(self, n: int) -> None:
        self._roll()
        self._count += n

    def per_second(self) -> int:
        self._roll()
        return self.last_second

    def _roll(self) -> None:
        second = int(time.monotonic())
        if second != self._second:
            self.last_second = self._count if second == self._second + 1 else 0
            self._count = 0
            self._second = second


WaitPut = Callable[[PutMessageResult], Awaitable[None]]


def with_replication(wait_flushed: WaitPut | None, ha: HAService) -> WaitPut:
    """The wait of a SYNC_MASTER send: its fsync under SYNC_FLUSH, then its slave copies
    (``handleDiskFlushAndHA``: a replica status other than PUT_OK overrides the flush status)."""

    async def wait(result: PutMessageResult) -> None:
        if wait_flushed is not None:
            await wait_flushed(result)
        await ha.wait_replicated(result)

    return wait


class HAConnection:
    """One slave as the master sees it (``DefaultHAConnection``)."""

    __slots__ = ("addr", "next_transfer_from", "rate", "slave_ack_offset", "slave_request_offset", "wake")

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        self.next_transfer_from = -1
        self.rate = ByteRate()
        self.wake = trio.Event()  # set by a put (or the first report): there may be bytes to send


class HAService:
    """The master's HA port and its slaves; see the module docstring."""

    def __init__(self, store: MessageStore) -> None:
        self.store = store
        self.config: StoreConfig = store.config
        self.connections: list[HAConnection] = []
        self.push2slave_max_offset = 0
        self.acceptor = Acceptor("ha", MAX_SLAVES, logger)
        self.listeners: list[trio.SocketListener] = []
        self._acked = trio.Event()

    # -- store side ----------------------------------------------------------------------------

    def wakeup(self) -> None:
        """New bytes in the commit log: wake the writers."""
        for conn in self.connections:
            conn.wake.set()

    async def wait_replicated(self, result: PutMessageResult) -> None:
        """``handleHA``: under SYNC_MASTER with ``inSyncReplicas`` > 1, wait until that many
        copies (the master's included) hold the put; else it becomes ``FLUSH_SLAVE_TIMEOUT``."""
        need = self.config.in_sync_replicas
        if need <= 1 or result.append_result is None:
            return
        end = result.append_result.end_offset
        self.wakeup()
        with trio.move_on_after(self.config.slave_timeout / 1000):
            while 1 + sum(1 for c in self.connections if c.slave_ack_offset >= end) < need:
                await self._acked.wait()
            return
        logger.warning("transfer message to slave timeout, offset : %d, request acks: %d", end, need)
        result.status = PutMessageStatus.FLUSH_SLAVE_TIMEOUT

    def _notify_transfer_some(self, offset: int) -> None:
        if offset > self.push2slave_max_offset:
            self.push2slave_max_offset = offset
        self._acked.set()
        self._acked = trio.Event()

    def is_in_sync(self, master_put_where: int, conn: HAConnection) -> bool:
        return master_put_where - conn.slave_ack_offset < self.config.ha_max_gap_not_in_sync

    def runtime_info(self) -> dict[str, Any]:
        """``getRuntimeInfo`` of a master (``HARuntimeInfo``, the body of GET_BROKER_HA_STATUS)."""
        where = self.store.max_phy_offset
        conns = [
            {
                "addr": c.addr,
                "diff": where - c.slave_ack_offset,
                "inSync": self.is_in_sync(where, c),
                "slaveAckOffset": c.slave_ack_offset,
                "transferFromWhere": c.next_transfer_from,
                "transferredByteInSecond": c.rate.per_second(),
            }
            for c in self.connections
        ]
        return master_runtime_info(where, conns)

    # -- network side --------------------------------------------------------------------------

    async def run(
        self,
        listeners: list[trio.SocketListener],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept slaves on ``listeners`` until cancelled (``AcceptSocketService``)."""
        self.listeners = listeners
        async with trio.open_nursery() as nursery:
            for listener in listeners:
                nursery.start_soon(self.acceptor.run, listener, self._serve_slave, nursery)
            task_status.started()

    @property
    def port(self) -> int:
        return int(self.listeners[0].socket.getsockname()[1]) if self.listeners else 0

    async def _serve_slave(self, stream: trio.SocketStream) -> None:
        try:
            host, port = stream.socket.getpeername()[:2]
            addr = f"{host}:{port}"
        except OSError:
            addr = "?"
        conn = HAConnection(addr)
        self.connections.append(conn)
        logger.info("HA: slave %s connected", addr)
        try:
            async with stream, trio.open_nursery() as nursery:
                nursery.start_soon(self._read_reports, stream, conn, nursery.cancel_scope)
                nursery.start_soon(self._write_transfers, stream, conn, nursery.cancel_scope)
        except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as group:
            logger.info("HA: connection of slave %s broke: %s", addr, group.exceptions[0])
        except* StoreError as group:
            logger.error("HA: stopped sending to slave %s: %s", addr, group.exceptions[0])
        finally:
            self.connections.remove(conn)
            logger.info("HA: slave %s gone (acked %d)", addr, conn.slave_ack_offset)

    async def _read_reports(
        self, stream: trio.SocketStream, conn: HAConnection, scope: trio.CancelScope
    ) -> None:
        pending = b""
        housekeeping_s = self.config.ha_housekeeping_interval / 1000
        while True:
            with trio.move_on_after(housekeeping_s) as idle:
                data = await stream.receive_some(READ_CHUNK)
            if idle.cancelled_caught:
                logger.warning("ha housekeeping, found this connection[%s] expired", conn.addr)
                break
            if not data:
                break
            pending += data
            whole = len(pending) - len(pending) % REPORT.size
            if whole:
                (offset,) = REPORT.unpack_from(pending, whole - REPORT.size)
                pending = pending[whole:]
                conn.slave_ack_offset = offset
                if conn.slave_request_offset < 0:
                    conn.slave_request_offset = offset
                    logger.info("HA: slave[%s] request offset %d", conn.addr, offset)
                    conn.wake.set()
                self._notify_transfer_some(offset)
        scope.cancel()

    async def _write_transfers(
        self, stream: trio.SocketStream, conn: HAConnection, scope: trio.CancelScope
    ) -> None:
        config = self.config
        heartbeat_ms = config.ha_send_heartbeat_interval
        while conn.slave_request_offset < 0:
            await self._wait(conn)
        conn.next_transfer_from = transfer_start(self.store, conn.slave_request_offset)
        logger.info(
            "master transfer data from %d to slave[%s], and slave request %d",
            conn.next_transfer_from,
            conn.addr,
            conn.slave_request_offset,
        )
        last_write = now_ms()
        while True:
            conn.wake = trio.Event()
            data = transfer_data(self.store, conn.next_transfer_from, config.ha_transfer_batch_size)
            if data is not None:
                header = TRANSFER_HEADER.pack(conn.next_transfer_from, len(data))
                conn.next_transfer_from += len(data)
                await stream.send_all(header + data)
                conn.rate.add(len(data))
                last_write = now_ms()
                continue
            if now_ms() - last_write > heartbeat_ms:
                await stream.send_all(TRANSFER_HEADER.pack(conn.next_transfer_from, 0))
                last_write = now_ms()
            await self._wait(conn)

    @staticmethod
    async def _wait(conn: HAConnection) -> None:
        with trio.move_on_after(IDLE_WAIT_S):
            await conn.wake.wait()
