"""A broker's replication parts for its role, assembled in one place for :mod:`broker.app`.

Every broker listens on its HA port (``DefaultHAService.start`` accepts whatever the role); a
SYNC_MASTER send with ``inSyncReplicas`` > 1 also waits for its slave copies; a slave runs the HA
client and the metadata sync, rejects sends (and pulls without ``slaveReadEnable``), learns its
master from its registration answer, and runs none of the services that write on their own
(delay levels, timers, transaction checks, POP revive: ``changeSpecialServiceStatus(false)``),
which :attr:`Replication.is_slave` tells the composition.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable

import trio

from broker.config import BrokerConfig
from broker.controller import BrokerController
from broker.ha.client import HAClient
from broker.ha.roles import JAVA_DEFAULT_HA_PORT, ha_port_of, slave_guard
from broker.ha.service import HAService, WaitPut, with_replication
from broker.ha.slave_sync import SlaveSynchronize
from broker.registration import NamesrvRegistrar
from codec.command import RemotingCommand
from gateway.transport.dispatch import Dispatcher
from store.config import SYNC_MASTER
from store.dispatch import ArrivalListener, DispatchRequest
from store.message_store import MessageStore

logger = logging.getLogger(__name__)


async def bind_ha(host: str, config: BrokerConfig) -> list[trio.SocketListener]:
    """Bind the HA port (:func:`broker.ha.roles.ha_port_of`). A configured ``haListenPort`` that
    is taken fails the start, as in Java; when it is not configured and ``listenPort + 1`` is
    taken, any free port is used instead (one WARNING line): the port is registered, and a slave
    that learns it from the NameServer finds it, while a broker that never has a slave (a test
    broker on a fixed port) starts as before."""
    port = ha_port_of(config)
    try:
        return await trio.open_tcp_listeners(port, host=host)
    except OSError as err:
        if config.ha_listen_port != JAVA_DEFAULT_HA_PORT or port == 0:
            raise
        listeners = await trio.open_tcp_listeners(0, host=host)
        logger.warning(
            "HA port %d (listenPort + 1) is taken (%s): slaves connect to port %d, the one registered",
            port,
            errno.errorcode.get(err.errno or 0, err.errno),
            listeners[0].socket.getsockname()[1],
        )
        return listeners


class Replication:
    """The HA service, and on a slave its client and metadata sync; see the module docstring."""

    def __init__(self, store: MessageStore, listeners: list[trio.SocketListener] | None) -> None:
        self.store = store
        self.listeners = listeners or []
        self.ha = HAService(store)
        self.client = HAClient(store) if store.config.is_slave else None
        self.slave_sync: SlaveSynchronize | None = None

    @property
    def is_slave(self) -> bool:
        return self.client is not None

    def arrival_listener(self, inner: ArrivalListener) -> ArrivalListener:
        """``inner`` (held pulls) plus a wake-up of the HA writers: new bytes to send."""
        wakeup = self.ha.wakeup

        def arrived(req: DispatchRequest, props: dict[str, str]) -> None:
            inner(req, props)
            wakeup()

        return arrived

    def wait_put(self, wait_flushed: WaitPut | None) -> WaitPut | None:
        """What a send awaits before it answers: ``wait_flushed``, and under SYNC_MASTER with
        ``inSyncReplicas`` > 1 the slave copies."""
        config = self.store.config
        if config.broker_role == SYNC_MASTER and config.in_sync_replicas > 1:
            return with_replication(wait_flushed, self.ha)
        return wait_flushed

    def attach(
        self,
        controller: BrokerController,
        dispatcher: Dispatcher,
        registrar: NamesrvRegistrar,
        sign: Callable[[RemotingCommand], None] | None,
    ) -> None:
        """Hook into the assembled broker: haStatus, and on a slave the refusal of sends and
        the registration answer."""
        controller.ha_runtime_info = self.ha.runtime_info
        if self.client is None:
            return
        controller.ha_runtime_info = self.client.runtime_info
        read = controller.config.slave_read_enable
        dispatcher.guard = slave_guard(dispatcher.guard, slave_read_enable=read)
        self.slave_sync = SlaveSynchronize(controller, sign)
        registrar.on_registered = self._registered

    def _registered(self, ha_server_addr: str | None, master_addr: str | None) -> None:
        """A slave's registration answer (``handleRegisterBrokerResult``): its master's addresses."""
        if self.client is not None and self.slave_sync is not None:
            self.client.update_ha_master_address(ha_server_addr, master_addr)
            self.slave_sync.set_master_addr(master_addr)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.ha.run, self.listeners)
            if self.client is not None:
                await nursery.start(self.client.run)
            if self.slave_sync is not None:
                await nursery.start(self.slave_sync.run)
            task_status.started()
