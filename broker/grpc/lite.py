"""Lite topics over gRPC: SyncLiteSubscription and the lite consumers' receive.

Mirrors the 5.5 Proxy's ``ClientActivity.syncLiteSubscription`` and ``ClientProcessor`` checks
(topic and group names, each added lite topic as ``validateLiteTopic``, the group's
``lite.bind.topic``, the request's size against the group's quota) and the broker's
``LiteSubscriptionCtlProcessor`` (the registry of :mod:`broker.lite`), then, for a
LITE_PUSH_CONSUMER or LITE_SIMPLE_CONSUMER, the receive: the lite pop of
:mod:`broker.service.lite_pop` (``PopLiteMessageProcessor``), which the remoting
POP_LITE_MESSAGE of a cluster-mode Proxy reaches too. A subscription the broker drops itself (an
exclusive group's PARTIAL_ADD takes the lite topic from the group's other clients) is told to its
client over Telemetry as a ``NotifyUnsubscribeLiteCommand``.
"""

from __future__ import annotations

from broker.controller import BrokerController
from broker.grpc.common import OK, Call, ClientContext, StatusError
from broker.grpc.validation import validate_topic_and_group
from broker.lite import (
    LiteSubscriptionRegistry,
    is_lite_sub_exclusive,
    lite_bind_topic,
    lite_sub_client_quota,
    lite_topic_problem,
    quota_problem,
    split_lmq_name,
)
from broker.service.consume import ConsumeService
from broker.service.lite_pop import LitePops, LitePopService
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

LITE_CLIENT_TYPES = (pb.LITE_PUSH_CONSUMER, pb.LITE_SIMPLE_CONSUMER)


class LiteActivity:
    """SyncLiteSubscription and the lite receive over one registry; see the module docstring."""

    def __init__(
        self,
        broker: BrokerController,
        pop: ConsumeService,
        registry: LiteSubscriptionRegistry | None = None,
        lite_pop: LitePopService | None = None,
        sessions: dict[str, Call] | None = None,
    ) -> None:
        """``sessions``: the clients' Telemetry streams by client id (``ClientActivity``'s), where
        :meth:`notify_unsubscribe` writes; None: no stream is told."""
        self.broker = broker
        self.sessions = sessions if sessions is not None else {}
        self.notified = 0
        self.pop = pop
        self.registry = registry if registry is not None else LiteSubscriptionRegistry()
        self.lite_pop = lite_pop if lite_pop is not None else LitePopService(broker, pop, self.registry)

    # -- SyncLiteSubscription --------------------------------------------------------------------

    def _check_bind_topic(self, group: str, topic: str) -> dict[str, str]:
        """``ClientProcessor.validateLiteBindTopic``: the group's attributes."""
        config = self.broker.groups.find(group, create=False)
        if config is None:
            raise StatusError(pb.ILLEGAL_CONSUMER_GROUP, f"group not found: {group}")
        expected = lite_bind_topic(config.attributes)
        if expected != topic:
            raise StatusError(
                pb.ILLEGAL_TOPIC,
                f"lite group {group} is expected to bind topic {expected or 'null'}, but actual is {topic}",
            )
        return config.attributes

    def sync_lite_subscription(
        self, ctx: ClientContext, request: pb.SyncLiteSubscriptionRequest
    ) -> pb.SyncLiteSubscriptionResponse:
        """Raises StatusError for a refused change (the response carries it)."""
        validate_topic_and_group(request, self.broker.topics.is_system)
        lite_topics = list(dict.fromkeys(request.lite_topic_set))
        action = request.action
        if action == pb.PARTIAL_ADD:
            for lite in lite_topics:
                problem = lite_topic_problem(lite)
                if problem is not None:
                    raise StatusError(pb.ILLEGAL_LITE_TOPIC, problem)
        group, topic = request.group.name, request.topic.name
        attributes = self._check_bind_topic(group, topic)
        if lite_topics:
            problem = quota_problem(len(lite_topics), lite_sub_client_quota(attributes))
            if problem is not None:
                raise StatusError(pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED, problem)
        client_id = ctx.client_id
        registry = self.registry
        if not client_id:  # LiteSubscriptionCtlProcessor skips an entry without a client id
            return pb.SyncLiteSubscriptionResponse(status=OK)
        if action == pb.PARTIAL_ADD:
            if is_lite_sub_exclusive(attributes):  # excludeClientByLmqName
                registry.exclude_others(client_id, group, topic, lite_topics)
            registry.add_partial(client_id, group, topic, lite_topics)
            registry.open_events(client_id, self.broker.now_ms())
        elif action == pb.PARTIAL_REMOVE:
            registry.remove_partial(client_id, group, topic, lite_topics)
        elif action == pb.COMPLETE_ADD:
            registry.add_complete(client_id, group, topic, lite_topics)
            registry.open_events(client_id, self.broker.now_ms())
        elif action == pb.COMPLETE_REMOVE:
            registry.remove_complete(client_id)
        else:
            raise StatusError(pb.BAD_REQUEST, f"unknown LiteSubscriptionAction: {action}")
        # A receive parked on the old set of queues looks again.
        self.pop.polling.wake(topic, group, -1)
        return pb.SyncLiteSubscriptionResponse(status=OK)

    def forget(self, client_id: str) -> None:
        """``offlineClientLiteSubscription``: a client gone leaves no subscription behind."""
        self.registry.remove_complete(client_id)
        self.lite_pop.forget(client_id)

    def notify_unsubscribe(self, client_id: str, group: str, lmq_name: str) -> None:
        """A lite subscription the broker dropped (an exclusive group's takeover), told to the
        client over its Telemetry stream as the Proxy does with NOTIFY_UNSUBSCRIBE_LITE
        (``GrpcClientChannel.processNotifyUnsubscribeLite``); a client of another door has no
        stream here."""
        session = self.sessions.get(client_id)
        names = split_lmq_name(lmq_name)
        if session is None or names is None:
            return
        command = pb.TelemetryCommand(
            notify_unsubscribe_lite_command=pb.NotifyUnsubscribeLiteCommand(lite_topic=names[1])
        )
        self.notified += session.post(command.SerializeToString())

    # -- receive ---------------------------------------------------------------------------------

    async def receive(
        self,
        ctx: ClientContext,
        group: str,
        topic: str,
        batch_size: int,
        invisible_ms: int,
        poll_ms: int,
        attempt_id: str | None,
    ) -> LitePops:
        """The pops that found messages (each with its request), after a wait when none did
        (:meth:`broker.service.lite_pop.LitePopService.pop`)."""
        found, _full = await self.lite_pop.pop(
            ctx.client_id, group, topic, batch_size, invisible_ms, poll_ms, attempt_id
        )
        return found
