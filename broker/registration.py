"""Broker ↔ NameServer: REGISTER_BROKER at start, every period, and after topic changes.

Mirrors ``BrokerOuterAPI.registerBrokerAll`` and the scheduling in ``BrokerController``: one
long-lived connection per NameServer (a NameServer drops a broker at once when its connection
closes, so we keep it open); a full registration at start and every ``registerNameServerPeriod``
(clamped to 10–60 s); an incremental one, carrying only the changed topics, right after a topic
is created or updated; UNREGISTER_BROKER on shutdown.
"""

from __future__ import annotations

import logging
import math
import ssl
from collections.abc import Callable

import trio

from broker.config import BrokerConfig
from broker.topic_config_manager import TopicConfigManager
from codec.bodies.register import (
    PERM_READ,
    PERM_WRITE,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.hashing import body_crc32
from codec.headers.namesrv import RegisterBrokerRequestHeader, UnregisterBrokerRequestHeader
from gateway.transport.client import connect
from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection

logger = logging.getLogger(__name__)

RECONNECT_DELAY_S = 3.0


class NamesrvRegistrar:
    def __init__(
        self,
        config: BrokerConfig,
        topics: TopicConfigManager,
        sign: Callable[[RemotingCommand], None] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """``sign``: applied to every request before it is sent (``BrokerOuterAPI``'s
        ``AclClientRPCHook`` of ``innerClientAuthenticationCredentials``); ``tls``: connect over TLS
        with this context (``BrokerOuterAPI``'s remoting client with ``useTLS``, so a broker
        registers with an enforcing NameServer)."""
        self.config = config
        self.tls = tls
        self.topics = topics
        self.sign = sign
        self._connections: dict[str, Connection] = {}
        self._wake = trio.Event()
        self._pending: dict[str, TopicConfig] = {}
        self.registrations = 0
        self.failures = 0
        #: Told (haServerAddr, masterAddr) of every accepted registration: a slave's master.
        self.on_registered: Callable[[str | None, str | None], None] | None = None

    @property
    def period_s(self) -> float:
        return min(max(self.config.register_name_server_period, 10_000), 60_000) / 1000

    def build_request(self, topics: list[TopicConfig] | None = None) -> RemotingCommand:
        """A REGISTER_BROKER request with every topic, or only ``topics`` (incremental)."""
        config = self.config
        table = self.topics.table if topics is None else {t.topic_name: t for t in topics}
        if config.broker_permission & (PERM_READ | PERM_WRITE) != PERM_READ | PERM_WRITE:
            # A broker that is not fully readable and writable advertises its own permission.
            table = {
                name: TopicConfig.from_obj({**t.to_obj(), "perm": t.perm & config.broker_permission})
                for name, t in table.items()
            }
        wrapper = TopicConfigSerializeWrapper(
            topic_config_table=dict(table), data_version=self.topics.data_version
        )
        body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).encode()
        header = RegisterBrokerRequestHeader(
            broker_name=config.broker_name,
            broker_addr=config.broker_addr,
            cluster_name=config.broker_cluster_name,
            ha_server_addr=f"{config.broker_ip2}:{config.ha_listen_port}",
            broker_id=config.broker_id,
            enable_acting_master=False,
            compressed=False,
            body_crc32=body_crc32(body),
        )
        return RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body=body)

    def _signed(self, request: RemotingCommand) -> RemotingCommand:
        if self.sign is not None:
            self.sign(request)
        return request

    def topics_changed(self, topics: list[TopicConfig]) -> None:
        """Queue an incremental registration (called from processors, synchronously)."""
        for topic in topics:
            self._pending[topic.topic_name] = topic
        if not topics:  # a deletion: only a full registration tells the NameServer
            self._pending.clear()
            self._pending[""] = TopicConfig("")
        self._wake.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep one connection per NameServer and register over it until cancelled."""
        async with trio.open_nursery() as nursery:
            for address in self.config.namesrv_addrs:
                nursery.start_soon(self._serve_namesrv, address)
            task_status.started()
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                pending, self._pending = self._pending, {}
                full = "" in pending
                request_topics = None if full else list(pending.values())
                for address in list(self._connections):
                    nursery.start_soon(self._register, address, request_topics)

    async def _serve_namesrv(self, address: str) -> None:
        while True:
            try:
                version = self.config.followed.mq_version
                config = ServerConfig(idle_timeout_s=math.inf, command_version=version)
                async with connect(address, config=config, tls=self.tls) as conn:
                    self._connections[address] = conn
                    try:
                        while not conn.closed:
                            await self._register(address, None)
                            with trio.move_on_after(self.period_s):
                                await conn.wait_closed()
                        logger.warning("connection to namesrv %s lost", address)
                    finally:
                        self._connections.pop(address, None)
            except OSError as err:
                logger.warning(
                    "namesrv %s unreachable: %s; retrying in %.0f s", address, err, RECONNECT_DELAY_S
                )
            await trio.sleep(RECONNECT_DELAY_S)

    async def _register(self, address: str, topics: list[TopicConfig] | None) -> bool:
        conn = self._connections.get(address)
        if conn is None:
            return False
        timeout = self.config.register_broker_timeout_mills / 1000
        try:
            response = await conn.invoke(self._signed(self.build_request(topics)), timeout_s=timeout)
        except Exception as err:
            self.failures += 1
            logger.warning("register to namesrv %s failed: %s", address, err)
            conn.close()
            return False
        if response.code != ResponseCode.SUCCESS:
            self.failures += 1
            logger.warning("namesrv %s refused registration: %s %s", address, response.code, response.remark)
            return False
        self.registrations += 1
        if self.on_registered is not None:
            fields = response.ext_fields or {}
            self.on_registered(fields.get("haServerAddr"), fields.get("masterAddr"))
        logger.debug(
            "registered to namesrv %s (%s)", address, "full" if topics is None else f"{len(topics)} topics"
        )
        return True

    async def unregister_all(self) -> None:
        """UNREGISTER_BROKER to every connected NameServer (shutdown); failures are logged."""
        config = self.config
        header = UnregisterBrokerRequestHeader(
            config.broker_name, config.broker_addr, config.broker_cluster_name, config.broker_id
        )
        for address, conn in list(self._connections.items()):
            try:
                request = self._signed(RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header))
                await conn.invoke(request, timeout_s=3)
            except Exception as err:
                logger.warning("unregister from namesrv %s failed: %s", address, err)
