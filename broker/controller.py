"""``BrokerController``: the broker's state, shared by its processors (no Trio here).

Mirrors ``org.apache.rocketmq.broker.BrokerController`` as a plain container: config, topic and
subscription-group tables, consumer offsets, client registrations, the compiled SQL92 filters of
the subscriptions (``ConsumerFilterManager``, shared by every consumption path), the message
store, held pulls, order locks and the delay-level service. It is built by :mod:`broker.app`,
which hands it the collaborators that need Trio as plain callables: ``put_messages`` (a put that
waits for the flush under ``SYNC_FLUSH``), its two halves ``put_nowait`` and ``wait_flushed``
(``None`` under ``ASYNC_FLUSH``: nothing to wait for) for the send path, which answers without a
task when it need not wait, and the listeners for topic and group changes.
"""

from __future__ import annotations

import functools
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from broker.client_manager import ClientManager
from broker.config import BrokerConfig
from broker.config_tables import ConfigTable, ConfigTables
from broker.consumer_offset_manager import ConsumerOffsetManager
from broker.filter import ConsumerFilterManager
from broker.long_polling import PullHoldService
from broker.rebalance_lock import RebalanceLockManager
from broker.schedule import PutMessages, ScheduleMessageService
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from codec.bodies.register import TopicConfig
from codec.codes import RequestCode
from codec.command import RemotingCommand
from codec.errors import CodecError
from codec.headers.client import NotifyConsumerIdsChangedRequestHeader
from codec.message import MessageRecord, decode_record
from codec.message_id import UniqIdGenerator
from gateway.transport.address import split_address
from store.config import StoreConfig
from store.message_store import MessageStore
from store.metadata import CONSUMER_OFFSET_JSON, DELAY_OFFSET_JSON, SUBSCRIPTION_GROUP_JSON, TOPICS_JSON
from store.results import PutMessageResult

logger = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@functools.lru_cache(maxsize=1024)  # per record (store host, born host): a few hosts repeat
def host_bytes(host: str) -> bytes:
    """An IPv4 or IPv6 literal as the 4 or 16 address bytes records carry; raises ``ValueError``."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            return socket.inet_pton(family, host)
        except OSError:
            continue
    raise ValueError(f"not an IP address: {host!r}")


def store_config_of(config: BrokerConfig) -> StoreConfig:
    """The store settings of a broker: ``broker.conf`` store keys plus the few both sides know."""
    props = dict(config.extra)
    props["storePathRootDir"] = config.store_path_root_dir
    props["maxMessageSize"] = str(config.max_message_size)
    props["messageDelayLevel"] = config.message_delay_level
    store_config, _unknown = StoreConfig.from_properties(props)
    return store_config


class BrokerController:
    def __init__(
        self,
        config: BrokerConfig,
        store: MessageStore,
        hold: PullHoldService,
        put_messages: PutMessages,
        *,
        put_nowait: Callable[[Sequence[MessageRecord], Sequence[dict[str, str]] | None], PutMessageResult],
        wait_flushed: Callable[[PutMessageResult], Awaitable[None]] | None,
        on_topics_changed: Callable[[list[TopicConfig]], None] | None = None,
        on_groups_changed: Callable[[], None] | None = None,
        now_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        """``store`` must report its arrivals to ``hold`` (``MessageStore(on_arrival=...)``);
        ``on_topics_changed`` gets the topics created or updated (an empty list after a deletion)."""
        self.config = config
        self.now_ms = now_ms
        self.store = store
        self.hold = hold
        self.put_messages = put_messages
        self.put_nowait = put_nowait
        self.wait_flushed = wait_flushed
        self.locks = RebalanceLockManager()
        self.stopping = False  # set at shutdown: pulls are no longer held
        self.schedule = ScheduleMessageService(store, put_messages, config.delay_levels_ms())
        self.uniq_ids = UniqIdGenerator(host_bytes(config.broker_ip1))
        self.topics = TopicConfigManager(config, on_change=on_topics_changed)
        self.groups = SubscriptionGroupManager(config, on_change=on_groups_changed)
        self.offsets = ConsumerOffsetManager()
        self.clients = ClientManager(config.channel_expired_timeout)
        self.filters = ConsumerFilterManager()  # SQL92: compiled once per subscription version
        #: The persisted tables of ``config/``; the managers of this broker register theirs here.
        self.tables = ConfigTables(store.config_files)
        self._register_tables()
        #: GET_BROKER_HA_STATUS's body (``HARuntimeInfo``), set by the composition (:mod:`broker.ha`).
        self.ha_runtime_info: Callable[[], dict[str, Any]] = lambda: {}

    def _register_tables(self) -> None:
        """The tables of the managers held here; topics and groups are written on change, the
        offsets on the period and at shutdown (``BrokerController.initialize`` and ``shutdown``)."""
        topics, groups, offsets, schedule = self.topics, self.groups, self.offsets, self.schedule
        for table in (
            ConfigTable(TOPICS_JSON, topics.to_obj, topics.load_obj),
            ConfigTable(SUBSCRIPTION_GROUP_JSON, groups.to_obj, groups.load_obj),
            ConfigTable(
                CONSUMER_OFFSET_JSON, offsets.to_obj, offsets.load_obj, source=offsets, flush_at_shutdown=True
            ),
            ConfigTable(
                DELAY_OFFSET_JSON, schedule.to_obj, schedule.load_obj, source=schedule, flush_at_shutdown=True
            ),
        ):
            self.tables.register(table)

    @property
    def store_host(self) -> bytes:
        return host_bytes(self.config.broker_ip1)

    @property
    def store_port(self) -> int:
        return self.config.listen_port

    @staticmethod
    @functools.lru_cache(maxsize=4096)  # per record; a connection's address repeats
    def client_address(remote_addr: str) -> tuple[bytes, int]:
        """A connection's ``host:port`` as record host bytes and port (loopback if unparsable)."""
        try:
            host, port = split_address(remote_addr)
            return host_bytes(host), port
        except ValueError:
            return b"\x7f\x00\x00\x01", 0

    def look_message(self, commit_log_offset: int) -> MessageRecord | None:
        data = self.store.look_message_by_offset(commit_log_offset)
        if data is None:
            return None
        try:
            return decode_record(data)
        except CodecError as err:
            logger.error("record at commit-log offset %d is unreadable: %s", commit_log_offset, err)
            return None

    def earliest_message_time(self) -> int:
        """Store time of the oldest record in the commit log (0 when empty)."""
        record = self.look_message(self.store.min_phy_offset) if self.store.max_phy_offset else None
        return record.store_timestamp if record is not None else 0

    def first_message_in_memory(self, topic: str, queue_id: int) -> bool:
        """``checkInMemByConsumeOffset(topic, queue, 0)``: is message 0 of the queue still in page cache."""
        return self.store.is_in_memory(topic, queue_id, 0)

    def notify_consumer_ids_changed(self, group: str) -> None:
        """Tell every member of ``group`` to rebalance (oneway), unless the group opts out."""
        info = self.clients.consumers.get(group)
        if info is None or info.is_broadcasting or not self.config.notify_consumer_ids_changed_enable:
            return
        group_config = self.groups.find(group, create=False)
        if group_config is not None and not group_config.notify_consumer_ids_changed_enable:
            return
        peers = [c.connection.peer for c in info.channels.values() if c.connection.peer is not None]
        header = NotifyConsumerIdsChangedRequestHeader(group)
        for peer in peers:
            # Like Java's invokeOneway with a 10 ms budget: a busy channel misses the notice and the
            # client rebalances on its own 20 s timer instead.
            if not peer.try_invoke_oneway(
                RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, header)
            ):
                logger.debug("notify %s of group %s dropped: channel busy or closed", peer, group)
