"""The NameServer's Trio wiring: server, processors, broker expiry, KV persistence."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import trio

from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection
from gateway.transport.dispatch import Dispatcher
from gateway.transport.faults import FaultPoint
from gateway.transport.server import RemotingServer
from namesrv.config import NamesrvConfig
from namesrv.kv_config import KVConfigManager
from namesrv.processors import NamesrvProcessor
from namesrv.route_info import RouteInfo

logger = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


class NamesrvApp:
    name = "namesrv"

    def __init__(
        self,
        config: NamesrvConfig,
        server_config: ServerConfig | None = None,
        faults: FaultPoint | None = None,
    ) -> None:
        """``faults``: rules that make the NameServer answer otherwise (:mod:`gateway.transport.faults`)."""
        self.config = config
        self.server_config = server_config or ServerConfig(port=9876)
        kv_path = config.kv_config_path or os.path.join(
            config.rocketmq_home or os.path.expanduser("~"), "namesrv", "kvConfig.json"
        )
        self.kv = KVConfigManager(Path(kv_path))
        self.routes = RouteInfo()
        self.dispatcher = Dispatcher("namesrv", faults=faults)
        NamesrvProcessor(config, self.routes, self.kv, _now_ms).register(self.dispatcher)
        self.server = RemotingServer(self.dispatcher, self.server_config, name="namesrv")
        self.server.on_disconnect.append(self._connection_closed)
        self._stop = trio.Event()
        self._stopped = trio.Event()

    def _connection_closed(self, conn: Connection) -> None:
        for addr in self.routes.drop_connection(conn.info.id):
            logger.info("broker %s dropped: its connection closed", addr)

    async def run(self, *, task_status: trio.TaskStatus[RemotingServer] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            self.kv.load()
            async with trio.open_nursery() as nursery:
                await nursery.start(self.server.run)
                nursery.start_soon(self._scan_not_active_brokers)
                task_status.started(self.server)
                await self._stop.wait()
                self.server.shutdown()
                await self.server.wait_closed()
                nursery.cancel_scope.cancel()
            self.kv.persist()
        finally:
            self._stopped.set()

    async def _scan_not_active_brokers(self) -> None:
        while True:
            await trio.sleep(self.config.scan_not_active_broker_interval / 1000)
            self.routes.expire(_now_ms())

    def shutdown(self) -> None:
        self._stop.set()

    async def wait_stopped(self) -> None:
        """Return once :meth:`run` has finished (KV config persisted)."""
        await self._stopped.wait()

    def statistics(self) -> dict[str, Any]:
        return {
            "server": self.server.statistics(),
            "brokers": len(self.routes.live),
            "topics": len(self.routes.topic_queues),
        }
