"""``BrokerController``: the broker's state, shared by its processors (no Trio here).

Mirrors ``org.apache.rocketmq.broker.BrokerController`` as a plain container: config, topic and
subscription-group tables, consumer offsets, client registrations, and two hooks the app wires
to Trio: ``spawn`` (start a background coroutine, e.g. notifying consumers) and ``now_ms``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from broker.client_manager import ClientManager
from broker.config import BrokerConfig
from broker.consumer_offset_manager import ConsumerOffsetManager
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from codec.bodies.register import TopicConfig
from codec.codes import RequestCode
from codec.command import RemotingCommand
from codec.headers.client import NotifyConsumerIdsChangedRequestHeader

logger = logging.getLogger(__name__)

Spawn = Callable[[Callable[[], Awaitable[None]]], None]


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


class BrokerController:
    def __init__(self, config: BrokerConfig, *, now_ms: Callable[[], int] = _wall_clock_ms) -> None:
        self.config = config
        self.now_ms = now_ms
        self.topics = TopicConfigManager(config, on_change=self._topics_changed)
        self.groups = SubscriptionGroupManager(config, on_change=self._groups_changed)
        self.offsets = ConsumerOffsetManager()
        self.clients = ClientManager(config.channel_expired_timeout)
        #: Set by the app: start a coroutine in the background.
        self.spawn: Spawn | None = None
        #: Set by the app: called with topics that changed (persist + incremental registration).
        self.on_topics_changed: Callable[[list[TopicConfig]], None] | None = None
        #: Set by the app: called when subscription groups changed (persist).
        self.on_groups_changed: Callable[[], None] | None = None

    def _topics_changed(self, topics: list[TopicConfig]) -> None:
        if self.on_topics_changed is not None:
            self.on_topics_changed(topics)

    def _groups_changed(self) -> None:
        if self.on_groups_changed is not None:
            self.on_groups_changed()

    def notify_consumer_ids_changed(self, group: str) -> None:
        """Tell every member of ``group`` to rebalance (oneway), unless the group opts out."""
        info = self.clients.consumers.get(group)
        if info is None or info.is_broadcasting or not self.config.notify_consumer_ids_changed_enable:
            return
        group_config = self.groups.find(group, create=False)
        if group_config is not None and not group_config.notify_consumer_ids_changed_enable:
            return
        peers = [c.connection.peer for c in info.channels.values() if c.connection.peer is not None]
        if not peers or self.spawn is None:
            return
        header = NotifyConsumerIdsChangedRequestHeader(group)

        async def notify() -> None:
            for peer in peers:
                try:
                    await peer.invoke_oneway(
                        RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, header)
                    )
                except Exception as err:  # a peer closing meanwhile is not our problem
                    logger.debug("notify %s of group %s failed: %s", peer, group, err)

        self.spawn(notify)
