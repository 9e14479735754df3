"""The broker's Trio wiring: store, server, processors, NameServer registration, housekeeping.

``BrokerApp(config, server_config)`` is what ``rmq-gateway broker`` and ``standalone`` run, and
what tests start in-process with ``await nursery.start(app.run)`` (port 0 allowed).

Start: open the store (recovering it if the last run crashed), load ``config/topics.json``,
``subscriptionGroup.json``, ``consumerOffset.json`` and ``delayOffset.json``, listen, register.
Topic and group changes are persisted at once; offsets every ``flushConsumerOffsetInterval``
(5 s) and delay offsets every 10 s. Stop (SIGTERM/SIGINT through the CLI): unregister, stop
accepting, let in-flight requests finish, persist everything, close the store.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from broker.config import BrokerConfig
from broker.controller import BrokerController
from broker.processors.admin import AdminBrokerProcessor
from broker.processors.client_manage import ClientManageProcessor
from broker.processors.consumer_manage import ConsumerManageProcessor
from broker.processors.pull import PullMessageProcessor
from broker.processors.query import QueryMessageProcessor
from broker.processors.send import SendMessageProcessor
from broker.registration import NamesrvRegistrar
from broker.schedule import DELAY_OFFSET_JSON, PERSIST_INTERVAL_S
from codec.bodies.register import TopicConfig
from codec.errors import RocketMQError
from gateway.config import ServerConfig
from gateway.connection import Connection
from gateway.dispatch import Dispatcher
from gateway.server import RemotingServer
from store.errors import StoreError

logger = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL_S = 10.0  # ClientHousekeepingService scan period
TOPICS_JSON = "topics.json"
GROUPS_JSON = "subscriptionGroup.json"
OFFSETS_JSON = "consumerOffset.json"


class BrokerApp:
    name = "broker"

    def __init__(self, config: BrokerConfig, server_config: ServerConfig | None = None) -> None:
        self.config = config
        self.server_config = server_config or ServerConfig(port=config.listen_port)
        self.controller = BrokerController(config)
        self.dispatcher = Dispatcher("broker")
        ClientManageProcessor(self.controller).register(self.dispatcher)
        ConsumerManageProcessor(self.controller).register(self.dispatcher)
        SendMessageProcessor(self.controller).register(self.dispatcher)
        self.pull_processor = PullMessageProcessor(self.controller)
        self.pull_processor.register(self.dispatcher)
        AdminBrokerProcessor(self.controller).register(self.dispatcher)
        QueryMessageProcessor(self.controller).register(self.dispatcher)
        self.server = RemotingServer(self.dispatcher, self.server_config, name="broker")
        self.server.on_disconnect.append(self._connection_closed)
        self.registrar = NamesrvRegistrar(self.controller)
        self.controller.on_topics_changed = self._topics_changed
        self.controller.on_groups_changed = self._groups_changed
        self._stop = trio.Event()

    # -- persistence -----------------------------------------------------------------------------

    def _load_config_files(self) -> None:
        c = self.controller
        files = c.store.config_files
        for name, load in (
            (TOPICS_JSON, c.topics.load_obj),
            (GROUPS_JSON, c.groups.load_obj),
            (OFFSETS_JSON, c.offsets.load_obj),
            (DELAY_OFFSET_JSON, c.schedule.load_obj),
        ):
            doc = files.load(name)
            if doc is None:
                continue
            try:
                load(doc)
            except (RocketMQError, ValueError, TypeError, AttributeError) as err:
                raise StoreError(f"config/{name} is malformed: {err}") from err

    def _persist(self, name: str, obj: Any) -> None:
        try:
            self.controller.store.config_files.persist(name, obj)
        except StoreError as err:
            logger.error("could not persist %s: %s", name, err)

    def _topics_changed(self, topics: list[TopicConfig]) -> None:
        self._persist(TOPICS_JSON, self.controller.topics.to_obj())
        self.registrar.topics_changed(topics)

    def _groups_changed(self) -> None:
        self._persist(GROUPS_JSON, self.controller.groups.to_obj())

    def persist_offsets(self, *, force: bool = False) -> None:
        c = self.controller
        if c.offsets.dirty or force:
            c.offsets.dirty = False
            self._persist(OFFSETS_JSON, c.offsets.to_obj())
        if c.schedule.dirty or force:
            c.schedule.dirty = False
            self._persist(DELAY_OFFSET_JSON, c.schedule.to_obj())

    async def _persist_loop(self) -> None:
        interval = min(self.config.flush_consumer_offset_interval / 1000, PERSIST_INTERVAL_S)
        while True:
            await trio.sleep(interval)
            self.persist_offsets()

    def _connection_closed(self, conn: Connection) -> None:
        for group in self.controller.clients.remove_connection(conn.info.id):
            self.controller.notify_consumer_ids_changed(group)

    async def run(self, *, task_status: trio.TaskStatus[RemotingServer] = trio.TASK_STATUS_IGNORED) -> None:
        store = self.controller.store
        store.open()
        try:
            self._load_config_files()
            await self._serve(task_status)
        finally:
            self.persist_offsets(force=True)
            store.close()
            logger.info("broker %s stopped; store closed", self.config.broker_name)

    async def _serve(self, task_status: trio.TaskStatus[RemotingServer]) -> None:
        async with trio.open_nursery() as nursery:

            def spawn(fn: Callable[[], Awaitable[None]]) -> None:
                nursery.start_soon(fn)

            self.controller.spawn = spawn
            messages = self.controller.messages
            await nursery.start(messages.run_group_commit)
            await nursery.start(messages.run_ticker)
            await nursery.start(self.server.run)
            if self.server_config.port == 0:
                # Bound to an ephemeral port (tests): advertise the port actually bound.
                self.config.listen_port = self.server.port
            await nursery.start(self.controller.schedule.run)
            nursery.start_soon(self._persist_loop)
            await nursery.start(self.registrar.run)
            nursery.start_soon(self._housekeeping)
            logger.info(
                "broker %s listening on %s", self.config.broker_name, ", ".join(self.server.addresses)
            )
            task_status.started(self.server)
            await self._stop.wait()
            with trio.move_on_after(5):
                await self.registrar.unregister_all()
            self.controller.stopping = True
            self.server.shutdown()
            self.controller.hold.wake_all()
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
            "store": self.controller.messages.statistics(),
            "held_pulls": self.controller.hold.held_count,
            "delayed_delivered": self.controller.schedule.delivered,
        }
