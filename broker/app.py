"""The broker's Trio wiring: server, processors, NameServer registration, housekeeping.

``BrokerApp(config, server_config)`` is what ``rmq-gateway broker`` and ``standalone`` run, and
what tests start in-process with ``await nursery.start(app.run)`` (port 0 allowed).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from broker.config import BrokerConfig
from broker.controller import BrokerController
from broker.processors.client_manage import ClientManageProcessor
from broker.processors.consumer_manage import ConsumerManageProcessor
from broker.registration import NamesrvRegistrar
from gateway.connection import Connection
from gateway.dispatch import Dispatcher
from gateway.server import RemotingServer, ServerConfig

logger = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL_S = 10.0  # ClientHousekeepingService scan period


class BrokerApp:
    name = "broker"

    def __init__(self, config: BrokerConfig, server_config: ServerConfig | None = None) -> None:
        self.config = config
        self.server_config = server_config or ServerConfig(port=config.listen_port)
        self.controller = BrokerController(config)
        self.dispatcher = Dispatcher("broker")
        ClientManageProcessor(self.controller).register(self.dispatcher)
        ConsumerManageProcessor(self.controller).register(self.dispatcher)
        self.server = RemotingServer(self.dispatcher, self.server_config, name="broker")
        self.server.on_disconnect.append(self._connection_closed)
        self.registrar = NamesrvRegistrar(self.controller)
        self.controller.on_topics_changed = self.registrar.topics_changed
        self._stop = trio.Event()

    def _connection_closed(self, conn: Connection) -> None:
        for group in self.controller.clients.remove_connection(conn.info.id):
            self.controller.notify_consumer_ids_changed(group)

    async def run(self, *, task_status: trio.TaskStatus[RemotingServer] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:

            def spawn(fn: Callable[[], Awaitable[None]]) -> None:
                nursery.start_soon(fn)

            self.controller.spawn = spawn
            await nursery.start(self.server.run)
            if self.server_config.port == 0:
                # Bound to an ephemeral port (tests): advertise the port actually bound.
                self.config.listen_port = self.server.port
            await nursery.start(self.registrar.run)
            nursery.start_soon(self._housekeeping)
            logger.info(
                "broker %s listening on %s", self.config.broker_name, ", ".join(self.server.addresses)
            )
            task_status.started(self.server)
            await self._stop.wait()
            with trio.move_on_after(5):
                await self.registrar.unregister_all()
            self.server.shutdown()
            await self.server.wait_closed()
            nursery.cancel_scope.cancel()

    async def _housekeeping(self) -> None:
        while True:
            await trio.sleep(HOUSEKEEPING_INTERVAL_S)
            connections, groups = self.controller.clients.expire(self.controller.now_ms())
            for info in connections:
                if info.peer is not None:
                    info.peer.close()
            for group in groups:
                self.controller.notify_consumer_ids_changed(group)

    def shutdown(self) -> None:
        self._stop.set()

    def statistics(self) -> dict[str, Any]:
        return {
            "server": self.server.statistics(),
            "clients": self.controller.clients.statistics(),
            "topics": self.controller.topics.statistics(),
            "registrations": self.registrar.registrations,
        }
