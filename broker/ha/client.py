"""The slave's side of classic HA: connect to the master's HA port, report, append what comes.

Mirrors ``org.apache.rocketmq.store.ha.DefaultHAClient``. The master's HA address is
``haMasterAddress`` when configured, else the ``haServerAddr`` the NameServer answers a slave's
registration with (:meth:`HAClient.update_ha_master_address`, called by the registrar). Once
connected the slave reports its max commit-log offset (8 bytes, big-endian) at once, then again
after every transfer that moved it and, when nothing moved it, every
``haSendHeartbeatInterval``; the master's transfers are appended by
:class:`store.ha.ReplicaAppender`, which also dispatches them. A transfer whose offset is not the
slave's own max offset, a master silent for ``haHousekeepingInterval``, or a broken connection
closes it; the client connects again after 5 s (``closeMasterAndWait``) and its first report
makes the master resume from the slave's offset.

One deviation, harmless on the wire: Java's first report of a connection waits for the heartbeat
interval to pass since the last one; this client reports on connecting.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from broker.ha.runtime_info import client_runtime_info, slave_runtime_info
from broker.ha.service import ByteRate, now_ms
from gateway.transport.address import split_address
from store.errors import StoreError
from store.ha import REPORT, TRANSFER_HEADER, ReplicaAppender
from store.message_store import MessageStore

logger = logging.getLogger(__name__)

RECONNECT_WAIT_S = 5.0  # DefaultHAClient.closeMasterAndWait / a failed connect: waitForRunning(5000)
READ_CHUNK = 256 * 1024
#: DefaultHAClient.READ_MAX_BUFFER_SIZE: a transfer never holds more (haTransferBatchSize's limit).
MAX_TRANSFER_BODY = 4 * 1024 * 1024
READY, TRANSFER = "READY", "TRANSFER"  # HAConnectionState


class HAClient:
    """A slave's connection to its master; see the module docstring."""

    def __init__(self, store: MessageStore) -> None:
        self.store = store
        self.config = store.config
        self.appender = ReplicaAppender(store)
        self.master_ha_address = self.config.ha_master_address
        self.master_address = ""
        self.state = READY
        self.last_read_timestamp = 0
        self.last_write_timestamp = 0
        self.current_reported_offset = 0
        self.rate = ByteRate()
        self.connects = 0
        self._address_known = trio.Event()
        if self.master_ha_address:
            self._address_known.set()

    def update_ha_master_address(self, ha_addr: str | None, master_addr: str | None) -> None:
        """What a registration answered (``BrokerController.registerBrokerAll``'s result):
        used unless ``haMasterAddress`` is configured."""
        if master_addr:
            self.master_address = master_addr
        if ha_addr and not self.config.ha_master_address and ha_addr != self.master_ha_address:
            logger.info("HA: master HA address learnt from the NameServer: %s", ha_addr)
            self.master_ha_address = ha_addr
            self._address_known.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._address_known.wait()
            address = self.master_ha_address
            try:
                host, port = split_address(address)
                stream = await trio.open_tcp_stream(host, port)
            except (OSError, ValueError) as err:
                logger.warning("HAClient connect to master %s failed: %s", address, err)
                await trio.sleep(RECONNECT_WAIT_S)
                continue
            self.connects += 1
            try:
                async with stream:
                    await self._transfer(stream, address)
            except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as group:
                logger.warning("HAClient: connection to master %s broke: %s", address, group.exceptions[0])
            except* StoreError as group:
                logger.error(
                    "HAClient, dispatchReadRequest error from master %s: %s", address, group.exceptions[0]
                )
            self.state = READY
            await trio.sleep(RECONNECT_WAIT_S)

    async def _transfer(self, stream: trio.SocketStream, address: str) -> None:
        self.state = TRANSFER
        self.current_reported_offset = self.appender.max_offset
        self.last_read_timestamp = now_ms()
        logger.info(
            "HAClient: connected to master %s, reporting offset %d", address, self.current_reported_offset
        )
        lock = trio.Lock()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._heartbeats, stream, lock)
            await self._report(stream, lock, self.current_reported_offset)
            await self._read_transfers(stream, lock, address)
            nursery.cancel_scope.cancel()

    async def _report(self, stream: trio.SocketStream, lock: trio.Lock, offset: int) -> None:
        async with lock:
            await stream.send_all(REPORT.pack(offset))
        self.last_write_timestamp = now_ms()

    async def _heartbeats(self, stream: trio.SocketStream, lock: trio.Lock) -> None:
        interval_ms = self.config.ha_send_heartbeat_interval
        while True:
            due = self.last_write_timestamp + interval_ms - now_ms()
            if due > 0:
                await trio.sleep(due / 1000)
                continue
            await self._report(stream, lock, self.current_reported_offset)

    async def _read_transfers(self, stream: trio.SocketStream, lock: trio.Lock, address: str) -> None:
        housekeeping_s = self.config.ha_housekeeping_interval / 1000
        buf = bytearray()
        appender = self.appender
        while True:
            with trio.move_on_after(housekeeping_s) as idle:
                data = await stream.receive_some(READ_CHUNK)
            if idle.cancelled_caught:
                logger.warning(
                    "AutoRecoverHAClient, housekeeping, found this connection[%s] expired", address
                )
                return
            if not data:
                logger.warning("HAClient: master %s closed the connection", address)
                return
            self.last_read_timestamp = now_ms()
            self.rate.add(len(data))
            buf += data
            pos = 0
            while len(buf) - pos >= TRANSFER_HEADER.size:
                offset, size = TRANSFER_HEADER.unpack_from(buf, pos)
                appender.check_offset(offset)
                if not 0 <= size <= MAX_TRANSFER_BODY:
                    raise StoreError(f"transfer header with a body size of {size} bytes")
                if len(buf) - pos < TRANSFER_HEADER.size + size:
                    break
                start = pos + TRANSFER_HEADER.size
                with memoryview(buf) as view:
                    appender.append(offset, view[start : start + size])
                pos = start + size
            del buf[:pos]
            mine = appender.max_offset
            if mine > self.current_reported_offset:
                self.current_reported_offset = mine
                await self._report(stream, lock, mine)

    def runtime_info(self) -> dict[str, Any]:
        """``getRuntimeInfo`` of a slave (``HARuntimeInfo``, the body of GET_BROKER_HA_STATUS)."""
        client = client_runtime_info(
            last_read_ms=self.last_read_timestamp,
            last_write_ms=self.last_write_timestamp,
            max_offset=self.store.max_phy_offset,
            transferred_per_s=self.rate.per_second(),
        )
        if self.master_ha_address:  # fastjson leaves a null field out
            client["masterAddr"] = self.master_ha_address
        return slave_runtime_info(client)
