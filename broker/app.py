"""The broker's Trio wiring: store, server, processors, NameServer registration, housekeeping.

``BrokerApp(config, server_config)`` is what ``rmq-gateway broker`` and ``standalone`` run, and
what tests start in-process with ``await nursery.start(app.run)`` (port 0 allowed). It binds its
port first, so that the port it advertises (registration, the store host of every record) is the
one bound, then assembles a :class:`Broker` with that configuration and serves it.

Start: open the store (recovering it if the last run crashed), load ``config/topics.json``,
``subscriptionGroup.json``, ``consumerOffset.json`` and ``delayOffset.json``, listen (on the HA
port too: :mod:`broker.ha.replication` runs what ``brokerRole`` asks for), register.
Every table is read and written through the controller's one owner, :mod:`broker.config_tables`:
topic and group changes are persisted at once; changed offsets, delay offsets and orderly POP
state every ``flushConsumerOffsetInterval`` (5 s, at most 10 s). Stop (SIGTERM/SIGINT through the
CLI): unregister, stop accepting, let in-flight requests finish, persist the changed tables and
both offset tables, close the store.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import ssl
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

import trio

from broker.auth.service import BrokerAuth
from broker.cold_data import ColdDataFlowControl
from broker.config import BrokerConfig
from broker.config_tables import ConfigTable
from broker.controller import BrokerController, store_config_of
from broker.ha.replication import Replication, bind_ha
from broker.ha.roles import apply_broker_role
from broker.lite_notify import LiteUnsubscribeNotifier
from broker.long_polling import PullHoldService
from broker.message_service import MessageService
from broker.metrics import create_metrics
from broker.pop.assignment import QueryAssignmentProcessor
from broker.pop.notification import NotificationProcessor
from broker.pop.records import PopConfig
from broker.pop.service import PopService
from broker.processors.admin import AdminBrokerProcessor
from broker.processors.admin_ops import AdminOpsProcessor
from broker.processors.auth import AuthAdminProcessor
from broker.processors.broker_status import BrokerStatusProcessor
from broker.processors.client_manage import ClientManageProcessor
from broker.processors.client_ops import ClientOpsProcessor
from broker.processors.consumer_manage import ConsumerManageProcessor
from broker.processors.end_transaction import EndTransactionProcessor
from broker.processors.lite_admin import LiteManagerProcessor
from broker.processors.lite_subscription import LiteSubscriptionCtlProcessor
from broker.processors.pop import PopProcessor
from broker.processors.pop_lite import PopLiteMessageProcessor
from broker.processors.pull import PullMessageProcessor
from broker.processors.query import QueryMessageProcessor
from broker.processors.recall import RecallMessageProcessor
from broker.processors.reply import ReplyMessageProcessor
from broker.processors.send import SendMessageProcessor
from broker.processors.send_back import SendMessageBackProcessor
from broker.registration import NamesrvRegistrar
from broker.schedule import FIRST_DELAY_S, PERSIST_INTERVAL_S, POLL_INTERVAL_S
from broker.service.services import BrokerServices
from broker.stats import BrokerStats
from broker.timer.service import TIMER_PROGRESS_JSON, TimerMessageService
from broker.transaction.service import TransactionalMessageService
from broker.vip import VipDispatcher, vip_port_of
from codec.bodies.register import TopicConfig
from codec.errors import RocketMQError
from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection
from gateway.transport.dispatch import Dispatcher
from gateway.transport.faults import FaultPoint
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.server import RemotingServer
from store.errors import StoreError
from store.message_store import MessageStore
from store.metadata import CONSUMER_OFFSET_JSON, DELAY_OFFSET_JSON, SUBSCRIPTION_GROUP_JSON, TOPICS_JSON

if TYPE_CHECKING:
    from broker.grpc.common import Handler

logger = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL_S = 10.0  # ClientHousekeepingService scan period
VIP_BIND_ATTEMPTS = 20  # ephemeral ports tried for a free pair (p, p - 2) when the port is 0


def build_dispatcher(
    controller: BrokerController,
    stats: BrokerStats,
    auth: BrokerAuth | None = None,
    services: BrokerServices | None = None,
    pop: PopConfig | None = None,
    faults: FaultPoint | None = None,
) -> Dispatcher:
    """Every request code the broker answers, with its processor (``registerProcessor``): the one
    list of them. The processors that record or read statistics get ``stats``; ``auth`` checks
    each request first and its admin processor answers the user and ACL codes; the processors
    that are a front door of a typed service get the broker's one ``services`` (built here
    when not given), the POP ones with ``pop`` (default: from the broker's config); ``faults``:
    the fault rules of the broker (test tool)."""
    pop = pop or PopConfig.of(controller.config)
    services = services or BrokerServices(controller, pop)
    consume = services.consume
    notifier = LiteUnsubscribeNotifier()  # NOTIFY_UNSUBSCRIBE_LITE to the clients' connections
    services.lite.unsubscribe_listeners.append(notifier)
    send = SendMessageProcessor(controller, services.send)
    processors: list[Any] = [
        ClientManageProcessor(controller),
        ConsumerManageProcessor(controller),
        send,
        SendMessageBackProcessor(controller, services.send_back),
        PullMessageProcessor(controller, stats),
        AdminBrokerProcessor(controller, stats, services.lite_lifecycle.clean_by_parent_topic),
        QueryMessageProcessor(controller),
        EndTransactionProcessor(controller, services.end_transaction),
        RecallMessageProcessor(controller, services.recall),
        ReplyMessageProcessor(controller, send),
        AdminOpsProcessor(controller, ColdDataFlowControl()),
        BrokerStatusProcessor(controller, stats),
        ClientOpsProcessor(controller),
        PopProcessor(controller, pop, service=consume),
        QueryAssignmentProcessor(controller, pop),
        NotificationProcessor(controller, pop, consume.state, consume.polling, consume.orders),
        LiteManagerProcessor(controller, services),
        LiteSubscriptionCtlProcessor(controller, services, notifier),
        PopLiteMessageProcessor(controller, services.lite_pop),
    ]
    if auth is not None:
        settings = auth.settings
        processors.insert(
            0,
            AuthAdminProcessor(
                auth.metadata,
                users_configured=settings.authentication_metadata_configured,
                acls_configured=settings.authorization_metadata_configured,
            ),
        )
    dispatcher = Dispatcher("broker", guard=auth.guard if auth else None, faults=faults)
    for processor in processors:
        processor.register(dispatcher)
    return dispatcher


class Broker:
    """One broker assembled from its configuration (whose ``listen_port`` is the advertised port)
    and the listeners it serves on.

    Its statistics (:attr:`stats`) are built here once and handed to the put service and the
    processors that record or read them; :attr:`metrics` is the Prometheus exporter
    (``metricsExporterType=PROM``, else ``None``), served while :meth:`run` runs.
    """

    def __init__(
        self,
        config: BrokerConfig,
        server_config: ServerConfig,
        listeners: list[trio.SocketListener],
        stop: trio.Event,
        vip_listeners: list[trio.SocketListener] | None = None,
        client_tls: ssl.SSLContext | None = None,
        faults: FaultPoint | None = None,
        ha_listeners: list[trio.SocketListener] | None = None,
        connection_ids: Iterator[int] | None = None,
    ) -> None:
        """``client_tls``: the context of the connections to the NameServers when ``tls.enable``
        (``NettyClientConfig.useTLS``); None: plaintext. ``faults``: rules that make the broker
        answer otherwise (:mod:`gateway.transport.faults`); None: none. ``ha_listeners``: the
        bound HA port (:mod:`broker.ha`); None: no slave can connect. ``connection_ids``: the
        numbers of its client connections, shared with its gRPC endpoint (default: its own)."""
        self.config = config
        self.stats = BrokerStats(config.broker_cluster_name)
        self.hold = PullHoldService()
        store_config = store_config_of(config)
        apply_broker_role(config, store_config)
        self.store = MessageStore(store_config)
        self.replication = Replication(self.store, ha_listeners)
        self.store.on_arrival = self.replication.arrival_listener(self.hold.notify_message_arriving)
        self.messages = MessageService(self.store, self.stats)
        self.controller = BrokerController(
            config,
            self.store,
            self.hold,
            self.messages.put,
            put_nowait=self.messages.put_nowait,
            wait_flushed=self.replication.wait_put(
                self.messages.wait_flushed if self.messages.sync_flush else None
            ),
            on_topics_changed=self._topics_changed,
            on_groups_changed=self._groups_changed,
        )
        self.auth = BrokerAuth(config, self.store.config_files, self.controller.tables)
        self.registrar = NamesrvRegistrar(
            config, self.controller.topics, self.auth.inner_client_signer, tls=client_tls
        )
        self.timers = TimerMessageService(self.store, self.controller.put_messages, config.timer_precision_ms)
        timers = self.timers
        self.controller.tables.register(
            ConfigTable(TIMER_PROGRESS_JSON, timers.to_obj, timers.load_obj, strict=False, source=timers)
        )
        pop = PopConfig.of(config)
        #: The typed operations both front doors adapt onto (remoting here, gRPC in grpc_methods).
        self.services = BrokerServices(self.controller, pop)
        self.dispatcher = build_dispatcher(self.controller, self.stats, self.auth, self.services, pop, faults)
        self.replication.attach(
            self.controller, self.dispatcher, self.registrar, self.auth.inner_client_signer
        )
        self.metrics = create_metrics(self.controller, self.stats, self.dispatcher)
        consume = self.services.consume
        self.pop = PopService(
            self.controller, pop, consume.writer, consume.state, consume.orders, self.timers.caught_up
        )
        self.pop.revive.ensure_topic()
        self.server = RemotingServer(
            self.dispatcher, server_config, name="broker", listeners=listeners, ids=connection_ids
        )
        self.server.on_disconnect.append(self._connection_closed)
        vip = dataclasses.replace(server_config, port=vip_port_of(config.listen_port))
        # One connection id sequence for both ports (and the gRPC endpoint): an id in a log line
        # names one connection.
        self.vip_server = RemotingServer(
            VipDispatcher(self.dispatcher), vip, "broker-vip", vip_listeners, ids=self.server.ids
        )
        self.vip_server.on_disconnect.append(self._connection_closed)
        self._stop = stop

    # -- persistence -----------------------------------------------------------------------------

    def _load_tables(self) -> None:
        """Users and ACLs, then the tables the controller holds (``BrokerController.initialize``)."""
        self.auth.load()
        self.controller.tables.load_all(
            [TOPICS_JSON, SUBSCRIPTION_GROUP_JSON, CONSUMER_OFFSET_JSON, DELAY_OFFSET_JSON]
        )

    def _topics_changed(self, topics: list[TopicConfig]) -> None:
        self.controller.tables.changed(TOPICS_JSON)
        self.registrar.topics_changed(topics)

    def _groups_changed(self) -> None:
        self.controller.tables.changed(SUBSCRIPTION_GROUP_JSON)

    # -- running ---------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[RemotingServer] = trio.TASK_STATUS_IGNORED) -> None:
        self.store.open()
        try:
            self._load_tables()
            if self.metrics is not None:  # BrokerMetricsManager starts with the broker
                config = self.config
                self.metrics.serve(config.metrics_prom_exporter_host, config.metrics_prom_exporter_port)
            await self._serve(task_status)
        finally:
            if self.metrics is not None:
                self.metrics.close()  # the Prometheus endpoint's port is free again
            self.controller.tables.persist_all()
            self.store.close()
            logger.info("broker %s stopped; store closed", self.config.broker_name)

    async def _serve(self, task_status: trio.TaskStatus[RemotingServer]) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.messages.run_group_commit)
            await nursery.start(self.messages.run_ticker)
            await nursery.start(self.server.run)
            await nursery.start(self.vip_server.run)
            await nursery.start(self.replication.run)
            if not self.replication.is_slave:  # a slave writes nothing of its own
                nursery.start_soon(self._deliver_delayed)
                nursery.start_soon(self._deliver_timers)
                nursery.start_soon(self._check_transactions)
                nursery.start_soon(self.pop.run)
                nursery.start_soon(self._expire_lite_topics)
            nursery.start_soon(self._persist_loop)
            await nursery.start(self.registrar.run)
            nursery.start_soon(self._housekeeping)
            logger.info(
                "broker %s listening on %s, VIP channel on %s",
                self.config.broker_name,
                ", ".join(self.server.addresses),
                ", ".join(self.vip_server.addresses),
            )
            task_status.started(self.server)
            await self._stop.wait()
            with trio.move_on_after(5):
                await self.registrar.unregister_all()
            self.controller.stopping = True
            self.server.shutdown()
            self.vip_server.shutdown()
            self.hold.wake_all()
            await self.server.wait_closed()
            await self.vip_server.wait_closed()
            nursery.cancel_scope.cancel()

    async def _deliver_delayed(self) -> None:
        """The delay-level timer (``ScheduleMessageService``'s per-level tasks)."""
        schedule = self.controller.schedule
        await trio.sleep(FIRST_DELAY_S)
        while True:
            await schedule.deliver_all_due(self.controller.now_ms())
            await trio.sleep(POLL_INTERVAL_S)

    async def _deliver_timers(self) -> None:
        """The 5.x timer messages (``TimerMessageStore``'s dequeue); progress in timerProgress.json."""
        timers, tables = self.timers, self.controller.tables
        tables.load(TIMER_PROGRESS_JSON)
        while True:
            timers.scan()
            await timers.deliver_due(self.controller.now_ms())
            tables.persist_if_dirty(TIMER_PROGRESS_JSON)
            await trio.sleep(POLL_INTERVAL_S)

    async def _check_transactions(self) -> None:
        """``TransactionalMessageCheckService``: a check round every ``transactionCheckInterval``."""
        service = TransactionalMessageService(self.controller)
        while True:
            await trio.sleep(self.config.transaction_check_interval / 1000)
            try:
                await service.check()
            except (RocketMQError, StoreError) as err:
                logger.error("transaction check round failed: %s", err)

    async def _expire_lite_topics(self) -> None:
        """``LiteLifecycleManager``'s service thread: a round of lite topic expiry, then its wait."""
        lifecycle = self.services.lite_lifecycle
        while True:
            try:
                wait_ms = lifecycle.run_once()
            except (RocketMQError, StoreError, OSError) as err:
                logger.error("lite topic expiry round failed: %s", err)
                wait_ms = self.config.lite_ttl_check_interval
            await trio.sleep(max(wait_ms, 1) / 1000)

    async def _persist_loop(self) -> None:
        interval = min(self.config.flush_consumer_offset_interval / 1000, PERSIST_INTERVAL_S)
        while True:
            await trio.sleep(interval)
            self.controller.tables.persist_dirty()

    def _connection_closed(self, conn: Connection) -> None:
        for group in self.controller.clients.remove_connection(conn.info):
            self.controller.notify_consumer_ids_changed(group)

    async def _housekeeping(self) -> None:
        while True:
            await trio.sleep(HOUSEKEEPING_INTERVAL_S)
            connections, groups = self.controller.clients.expire(self.controller.now_ms())
            for info in connections:
                if info.peer is not None:
                    info.peer.close()
            for group in groups:
                self.controller.notify_consumer_ids_changed(group)

    def statistics(self) -> dict[str, Any]:
        return {
            "server": self.server.statistics(),
            "vip_server": self.vip_server.statistics(),
            "clients": self.controller.clients.statistics(),
            "topics": self.controller.topics.statistics(),
            "registrations": self.registrar.registrations,
            "store": self.messages.statistics(),
            "held_pulls": self.hold.held_count,
            "delayed_delivered": self.controller.schedule.delivered,
            "ha": self.controller.ha_runtime_info(),
        }


async def bind_with_vip(host: str, port: int) -> tuple[list[trio.SocketListener], list[trio.SocketListener]]:
    """Bind the broker's port and its VIP port (:func:`broker.vip.vip_port_of`). With port 0, an
    ephemeral port ``p`` is kept only if ``p - 2`` is free too (clients derive the VIP address from
    the registered one), trying up to ``VIP_BIND_ATTEMPTS`` ports; a fixed port whose VIP port is
    taken fails as the Java broker's start does."""
    for _ in range(VIP_BIND_ATTEMPTS if port == 0 else 1):
        listeners = await trio.open_tcp_listeners(port, host=host)
        bound = int(listeners[0].socket.getsockname()[1])
        try:
            return listeners, await trio.open_tcp_listeners(vip_port_of(bound), host=host)
        except OSError:
            for listener in listeners:
                await listener.aclose()
            if port != 0:
                raise
    raise OSError(f"no port p with p - 2 free found on {host} in {VIP_BIND_ATTEMPTS} attempts")


class BrokerApp:
    """Binds the broker's port, then assembles and serves a :class:`Broker` (module docstring)."""

    name = "broker"

    def __init__(
        self,
        config: BrokerConfig,
        server_config: ServerConfig | None = None,
        client_tls: ssl.SSLContext | None = None,
        faults: FaultPoint | None = None,
    ) -> None:
        self.config = config
        # Every command the broker writes carries the followed release's MQVersion (Java's configVersion).
        self.server_config = dataclasses.replace(
            server_config or ServerConfig(port=config.listen_port), command_version=config.followed.mq_version
        )
        self.client_tls = client_tls
        self.faults = faults
        self._stop = trio.Event()
        self._stopped = trio.Event()
        self._broker: Broker | None = None
        #: The numbers of every client connection, remoting (both ports) and gRPC alike.
        self.connection_ids = itertools.count(1)

    async def run(self, *, task_status: trio.TaskStatus[RemotingServer] = trio.TASK_STATUS_IGNORED) -> None:
        host = self.server_config.host
        listeners, vip_listeners = await bind_with_vip(host, self.server_config.port)
        ha_listeners: list[trio.SocketListener] = []
        try:
            bound_port = int(listeners[0].socket.getsockname()[1])
            config = dataclasses.replace(self.config, listen_port=bound_port)
            ha_listeners = await bind_ha(host, config)
            config.ha_listen_port = int(ha_listeners[0].socket.getsockname()[1])
            self._broker = Broker(
                config,
                self.server_config,
                listeners,
                self._stop,
                vip_listeners,
                client_tls=self.client_tls,
                faults=self.faults,
                ha_listeners=ha_listeners,
                connection_ids=self.connection_ids,
            )
            await self._broker.run(task_status=task_status)
        finally:
            with trio.CancelScope(shield=True):
                for listener in listeners + vip_listeners + ha_listeners:  # closed if the server ran
                    await listener.aclose()
            self._stopped.set()

    def shutdown(self) -> None:
        self._stop.set()

    async def wait_stopped(self) -> None:
        """Return once :meth:`run` has finished (store closed)."""
        await self._stopped.wait()

    @property
    def broker(self) -> Broker:
        """The running broker; raises ``RuntimeError`` before :meth:`run` has assembled it."""
        if self._broker is None:
            raise RuntimeError("the broker has not been started")
        return self._broker

    @property
    def controller(self) -> BrokerController:
        return self.broker.controller

    @property
    def server(self) -> RemotingServer:
        return self.broker.server

    @property
    def dispatcher(self) -> Dispatcher:
        return self.broker.dispatcher

    @property
    def registrar(self) -> NamesrvRegistrar:
        return self.broker.registrar

    def grpc_methods(
        self,
        port: int,
        config: GrpcServerConfig,
        start_soon: Callable[[Callable[[], Awaitable[None]]], object],
    ) -> dict[str, Handler]:
        """The gRPC MessagingService over this broker's services and auth checks, as the method
        table a gRPC server serves (``port``: the endpoint's, which routes advertise); its
        background loop (the renewal of push consumers' receipt handles) is started with
        ``start_soon``. Imports protobuf: called when the first gRPC client connects."""
        from broker.grpc.observe import CallRecorder
        from broker.grpc.service import MessagingService

        broker = self.broker
        recorder = CallRecorder()
        if broker.metrics is not None:
            recorder.observers.append(broker.metrics.on_grpc_request)
        service = MessagingService(
            broker.controller,
            port,
            broker.services,
            broker.auth.checks,
            config,
            self.faults.table.point("grpc") if self.faults is not None else None,
            recorder,
        )
        if service.consumer is not None:
            start_soon(service.consumer.renewer.run)
        return service.methods

    def statistics(self) -> dict[str, Any]:
        return self.broker.statistics()
