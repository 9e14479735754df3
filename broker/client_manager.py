"""Producer and consumer registrations from heartbeats, and their expiry.

Mirrors ``ProducerManager``, ``ConsumerManager``, ``ConsumerGroupInfo`` and
``ClientHousekeepingService``: a channel is a client connection
(``gateway.transport.dispatch.ConnectionInfo``) registered under a group by HEART_BEAT, refreshed
by every heartbeat, dropped by UNREGISTER_CLIENT, by its connection closing, or after
``channelExpiredTimeout`` of silence.

The tables are keyed by the :class:`ConnectionInfo` itself, as Java's are by the Netty
``Channel``: a remoting client's is its TCP connection's; a gRPC client's is the one the gRPC
door keeps per client id for as long as the client is known (Java's ``GrpcClientChannel``), so the
same tables, listings and expiry serve both protocols and no two clients can share a key.
Membership and subscription changes are reported to the caller, which notifies the group's
consumers (NOTIFY_CONSUMER_IDS_CHANGED) unless the group is broadcasting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from codec.bodies.heartbeat import BROADCASTING, ConsumerData, SubscriptionData
from gateway.transport.dispatch import ConnectionInfo

logger = logging.getLogger(__name__)

AVAILABLE_CHANNEL_TRIES = 3  # ProducerManager.GET_AVAILABLE_CHANNEL_RETRY_COUNT


def channel_state(connection: ConnectionInfo) -> tuple[bool, bool]:
    """(active, writable) of a client connection: Netty's ``isActive`` / ``isWritable``.

    Active: it has a peer that is not closed. Writable: the peer's outbox has room.
    """
    peer = connection.peer
    if peer is None or peer.closed:
        return False, False
    return True, peer.writable


@dataclass(slots=True)
class ClientChannel:
    """``ClientChannelInfo``: one registered connection."""

    connection: ConnectionInfo
    client_id: str
    language: int
    version: int
    last_update_ms: int


@dataclass(slots=True)
class ConsumerGroupInfo:
    group: str
    consume_type: str = ""
    message_model: str = ""
    consume_from_where: str = ""
    channels: dict[ConnectionInfo, ClientChannel] = field(default_factory=dict)  # by connection
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)  # by topic
    last_update_ms: int = 0

    @property
    def is_broadcasting(self) -> bool:
        return self.message_model == BROADCASTING

    def client_ids(self) -> list[str]:
        return [c.client_id for c in self.channels.values()]


class ClientManager:
    """Producer and consumer groups, keyed by group name."""

    def __init__(self, channel_expired_timeout_ms: int = 120_000) -> None:
        self.channel_expired_timeout_ms = channel_expired_timeout_ms
        self.producers: dict[str, dict[ConnectionInfo, ClientChannel]] = {}
        self.consumers: dict[str, ConsumerGroupInfo] = {}
        self._producer_counter = 0

    def register_producer(self, group: str, channel: ClientChannel) -> None:
        self.producers.setdefault(group, {})[channel.connection] = channel

    def register_consumer(
        self, data: ConsumerData, channel: ClientChannel, *, keep_subscriptions: bool = False
    ) -> bool:
        """Register or refresh a consumer; True when the group's members or subscriptions changed."""
        info = self.consumers.get(data.group_name)
        if info is None:
            info = self.consumers[data.group_name] = ConsumerGroupInfo(data.group_name)
        info.consume_type = data.consume_type
        info.message_model = data.message_model
        info.consume_from_where = data.consume_from_where
        info.last_update_ms = channel.last_update_ms
        changed = channel.connection not in info.channels
        info.channels[channel.connection] = channel
        if not keep_subscriptions:
            new = {s.topic: s for s in data.subscription_data_set}
            old = info.subscriptions
            if set(new) != set(old) or any(new[t].sub_string != old[t].sub_string for t in new):
                changed = True
            # Keep the newer subVersion of an unchanged subscription, as Java does.
            info.subscriptions = {
                t: (
                    old[t]
                    if t in old and old[t].sub_version >= s.sub_version and old[t].sub_string == s.sub_string
                    else s
                )
                for t, s in new.items()
            }
        return changed

    def unregister_producer(self, group: str, connection: ConnectionInfo) -> None:
        channels = self.producers.get(group)
        if channels is not None:
            channels.pop(connection, None)
            if not channels:
                del self.producers[group]

    def unregister_consumer(self, group: str, connection: ConnectionInfo) -> bool:
        """Remove a consumer channel; True when it was a member (the group changed)."""
        info = self.consumers.get(group)
        if info is None or info.channels.pop(connection, None) is None:
            return False
        if not info.channels:
            del self.consumers[group]
        return True

    def remove_connection(self, connection: ConnectionInfo) -> list[str]:
        """Drop every registration of a closed connection; returns the consumer groups that changed."""
        for group in list(self.producers):
            self.unregister_producer(group, connection)
        return [g for g in list(self.consumers) if self.unregister_consumer(g, connection)]

    def expire(self, now_ms: int) -> tuple[list[ConnectionInfo], list[str]]:
        """Drop channels silent for longer than the timeout: (their connections, groups changed)."""
        deadline = now_ms - self.channel_expired_timeout_ms
        stale: dict[ConnectionInfo, None] = {}  # in order, each once
        for channels in self.producers.values():
            stale.update({conn: None for conn, ch in channels.items() if ch.last_update_ms < deadline})
        for info in self.consumers.values():
            stale.update({conn: None for conn, ch in info.channels.items() if ch.last_update_ms < deadline})
        changed: list[str] = []
        for connection in stale:
            changed += self.remove_connection(connection)
        if stale:
            logger.info(
                "expired %d client channel(s) silent for %d ms", len(stale), self.channel_expired_timeout_ms
            )
        return list(stale), changed

    def find_producer_channel(self, group: str) -> ClientChannel | None:
        """The channel a transaction check of ``group`` goes to (``ProducerManager.getAvailableChannel``).

        Rotates over the group's channels with one counter for every group (Java's
        ``positiveAtomicCounter``, incremented before use, so the first check of a two-producer
        group goes to the second); takes the first of up to
        :data:`AVAILABLE_CHANNEL_TRIES` that is active and writable, else the last active one seen,
        else None.
        """
        channels = list(self.producers.get(group, {}).values())
        if not channels:
            return None
        self._producer_counter = (self._producer_counter + 1) & 0x7FFFFFFF
        index = self._producer_counter % len(channels)
        last_active = None
        for _ in range(AVAILABLE_CHANNEL_TRIES):
            channel = channels[index]
            active, writable = channel_state(channel.connection)
            if active and writable:
                return channel
            if active:
                last_active = channel
            index = (index + 1) % len(channels)
        return last_active

    def groups_subscribing(self, topic: str) -> list[str]:
        return [g for g, info in self.consumers.items() if topic in info.subscriptions]

    def statistics(self) -> dict[str, int]:
        return {
            "producer_groups": len(self.producers),
            "consumer_groups": len(self.consumers),
            "consumer_channels": sum(len(i.channels) for i in self.consumers.values()),
        }
