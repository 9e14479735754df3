"""NOTIFY_UNSUBSCRIBE_LITE (5.5): the broker tells a lite client of a subscription it dropped.

Mirrors ``LiteSubscriptionRegistryImpl.clientChannels`` / ``notifyUnsubscribeLite`` and
``Broker2Client.notifyUnsubscribeLite`` (5.5.0): the connection each client's lite subscription
changes came on (LITE_SUBSCRIPTION_CTL records it, ``updateClientChannel``; the client's
COMPLETE_REMOVE forgets it) and, when the registry drops a subscription itself, a oneway
NOTIFY_UNSUBSCRIBE_LITE on that connection with the client id, the group and the lite topic (not
its LMQ name). A cluster-mode Proxy is that connection: it hands the command to its gRPC client
as a Telemetry ``NotifyUnsubscribeLiteCommand`` (``ProxyClientRemotingProcessor``,
``GrpcClientChannel.processNotifyUnsubscribeLite``), and the client forgets the lite topic.

When does 5.5.0 drop a subscription itself? When a client of an exclusive group
(``lite.sub.model=Exclusive``) subscribes to a lite topic another client of the group holds, on
either door (``excludeClientByLmqName``, in :meth:`broker.lite.LiteSubscriptionRegistry.add_partial`).
(Its lite topic expiry cleans subscriptions without notifying, ``cleanSubscription(lmq, false)``.)

The notifier is one of the registry's unsubscribe listeners, which are asked in turn until one
reaches the client: a client without a recorded, open connection is not this notifier's (a
client of this gateway's own gRPC endpoint is told over its Telemetry stream instead,
:mod:`broker.grpc.lite`; a client neither knows is logged by the registry, as Java logs a
client without a channel). A connection whose outbox is full loses the notice (Java's
``invokeOneway`` with a 100 ms budget).
"""

from __future__ import annotations

import logging

from broker.lite import split_lmq_name
from codec.codes import RequestCode
from codec.command import RemotingCommand
from codec.headers.lite import NotifyUnsubscribeLiteRequestHeader
from gateway.transport.dispatch import Peer

logger = logging.getLogger(__name__)


class LiteUnsubscribeNotifier:
    """The lite clients' connections and the notice (module docstring); an
    :data:`broker.lite.UnsubscribeListener`."""

    def __init__(self) -> None:
        self.channels: dict[str, Peer] = {}
        self.sent = 0
        self.dropped = 0

    def update_channel(self, client_id: str, peer: Peer | None) -> None:
        """``updateClientChannel``: the connection the client's lite changes came on."""
        if peer is not None:
            self.channels[client_id] = peer

    def remove_channel(self, client_id: str) -> None:
        self.channels.pop(client_id, None)

    def __call__(self, client_id: str, group: str, lmq_name: str) -> bool:
        """``notifyUnsubscribeLite``: tell ``client_id`` that its ``lmq_name`` is gone; False when
        it has no open connection here (not this notifier's client)."""
        peer = self.channels.get(client_id)
        if peer is None or peer.closed:
            return False
        names = split_lmq_name(lmq_name)
        lite_topic = names[1] if names is not None else lmq_name
        header = NotifyUnsubscribeLiteRequestHeader(
            lite_topic=lite_topic, consumer_group=group, client_id=client_id
        )
        if peer.try_invoke_oneway(RemotingCommand.request(RequestCode.NOTIFY_UNSUBSCRIBE_LITE, header)):
            self.sent += 1
            logger.info(
                "notifyUnsubscribeLite liteTopic:%s, group:%s, clientId:%s", lite_topic, group, client_id
            )
        else:
            self.dropped += 1
            logger.warning("notifyUnsubscribeLite to %s dropped: channel busy or closed", client_id)
        return True

    def statistics(self) -> dict[str, int]:
        return {"channels": len(self.channels), "sent": self.sent, "dropped": self.dropped}
