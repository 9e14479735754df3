"""Lite topics over gRPC: SyncLiteSubscription and the lite consumers' receive.

Mirrors the 5.5 Proxy's ``ClientActivity.syncLiteSubscription`` and ``ClientProcessor`` checks
(topic and group names, each added lite topic as ``validateLiteTopic``, the group's
``lite.bind.topic``, the request's size against the group's quota) and the broker's
``LiteSubscriptionCtlProcessor`` (the registry of :mod:`broker.lite`, through
:meth:`broker.lite_lifecycle.LiteLifecycleManager.subscribe_partial` as the remoting door does: a
PARTIAL_ADD past the broker's ``maxLiteSubscriptionCount`` is LITE_SUBSCRIPTION_QUOTA_EXCEEDED
with the broker's ``LiteQuotaException`` text; its ``offset_option``, converted as
``ClientActivity.toOffsetOption`` does, moves the group's offset on each lite topic added), then,
for a LITE_PUSH_CONSUMER or LITE_SIMPLE_CONSUMER, the receive: the lite pop of
:mod:`broker.service.lite_pop` (``PopLiteMessageProcessor``), which the remoting
POP_LITE_MESSAGE of a cluster-mode Proxy reaches too. A subscription the broker drops itself (an
exclusive group's PARTIAL_ADD, on either door, takes the lite topic from the group's other
clients) is told to a client of this endpoint over Telemetry as a ``NotifyUnsubscribeLiteCommand``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from broker.controller import BrokerController
from broker.grpc.common import OK, Call, ClientContext, StatusError
from broker.grpc.validation import validate_topic_and_group
from broker.lite import (
    OFFSET_OFFSET,
    OFFSET_POLICY,
    OFFSET_TAIL_N,
    OFFSET_TIMESTAMP,
    LiteQuotaError,
    LiteSubscriptionRegistry,
    OffsetOption,
    lite_bind_topic,
    lite_sub_client_quota,
    lite_topic_problem,
    quota_problem,
    split_lmq_name,
)
from broker.lite_lifecycle import LiteLifecycleManager
from broker.service.consume import ConsumeService
from broker.service.lite_pop import LitePops, LitePopService
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

logger = logging.getLogger(__name__)

LITE_CLIENT_TYPES = (pb.LITE_PUSH_CONSUMER, pb.LITE_SIMPLE_CONSUMER)
#: ``ClientActivity.toOffsetOption``'s IllegalArgumentException as the Proxy answers it
#: (``ExceptionUtils.getErrorDetailMessage``: message, class, first stack frame).
_UNKNOWN_OFFSET_TYPE = (
    "Unknown OffsetOption type: OFFSETTYPE_NOT_SET. IllegalArgumentException."
    " org.apache.rocketmq.proxy.grpc.v2.client.ClientActivity.toOffsetOption(ClientActivity.java:259)"
)
_UNKNOWN_POLICY = (
    "Unknown OffsetOption.Policy value: UNRECOGNIZED. IllegalArgumentException."
    " org.apache.rocketmq.proxy.grpc.v2.client.ClientActivity.toOffsetPolicy(ClientActivity.java:273)"
)


def to_offset_option(option: pb.OffsetOption) -> OffsetOption:
    """``ClientActivity.toOffsetOption``; raises StatusError for an option without a type or with
    a policy the Proxy does not know."""
    kind = option.WhichOneof("offset_type")
    if kind == "policy":
        if option.policy not in (pb.OffsetOption.LAST, pb.OffsetOption.MIN, pb.OffsetOption.MAX):
            raise StatusError(pb.INTERNAL_SERVER_ERROR, _UNKNOWN_POLICY)
        return OffsetOption(OFFSET_POLICY, int(option.policy))  # LAST 0, MIN 1, MAX 2 both sides
    if kind == "offset":
        return OffsetOption(OFFSET_OFFSET, option.offset)
    if kind == "tail_n":
        return OffsetOption(OFFSET_TAIL_N, option.tail_n)
    if kind == "timestamp":
        return OffsetOption(OFFSET_TIMESTAMP, option.timestamp)
    raise StatusError(pb.INTERNAL_SERVER_ERROR, _UNKNOWN_OFFSET_TYPE)


class LiteActivity:
    """SyncLiteSubscription and the lite receive over one registry; see the module docstring."""

    def __init__(
        self,
        broker: BrokerController,
        pop: ConsumeService,
        registry: LiteSubscriptionRegistry | None = None,
        lifecycle: LiteLifecycleManager | None = None,
        sessions: Mapping[str, Call] | None = None,
        lite_pop: LitePopService | None = None,
    ) -> None:
        """``sessions``: the clients' Telemetry streams by client id (``ClientActivity``'s); given
        them, the activity joins the registry's unsubscribe listeners (:meth:`notify_unsubscribe`),
        so a client of this endpoint hears of a lite topic an exclusive group's takeover took from
        it, whichever door the takeover came through. None: nobody is told here."""
        self.broker = broker
        self.sessions: Mapping[str, Call] = sessions if sessions is not None else {}
        self.notified = 0
        self.pop = pop
        self.registry = registry if registry is not None else LiteSubscriptionRegistry()
        if lifecycle is None:
            lifecycle = LiteLifecycleManager(broker, self.registry, pop.orders, pop.state)
        self.lifecycle = lifecycle
        self.lite_pop = lite_pop if lite_pop is not None else LitePopService(broker, pop, self.registry)
        if sessions is not None:
            self.registry.unsubscribe_listeners.append(self.notify_unsubscribe)

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
        offset_option = None
        if action == pb.PARTIAL_ADD and request.HasField("offset_option"):
            offset_option = to_offset_option(request.offset_option)
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
            try:
                self.lifecycle.subscribe_partial(client_id, group, topic, lite_topics, offset_option)
            except LiteQuotaError as err:
                raise StatusError(pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED, str(err)) from None
            registry.open_events(client_id, self.broker.now_ms())
        elif action == pb.PARTIAL_REMOVE:
            self.lifecycle.unsubscribe_partial(client_id, group, topic, lite_topics)
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

    def notify_unsubscribe(self, client_id: str, group: str, lmq_name: str) -> bool:
        """A lite subscription the broker dropped (an exclusive group's takeover), told to the
        client over its Telemetry stream as the Proxy does with NOTIFY_UNSUBSCRIBE_LITE
        (``GrpcClientChannel.processNotifyUnsubscribeLite``), so it drops the lite topic from its
        own set. An :data:`broker.lite.UnsubscribeListener`: False for a client without a stream
        here (a client of another door); a stream whose outbox is full loses the notice."""
        session = self.sessions.get(client_id)
        names = split_lmq_name(lmq_name)
        if session is None or names is None:
            return False
        command = pb.TelemetryCommand(
            notify_unsubscribe_lite_command=pb.NotifyUnsubscribeLiteCommand(lite_topic=names[1])
        )
        if session.post(command.SerializeToString()):
            self.notified += 1
        else:
            logger.warning(
                "notifyUnsubscribeLite %s of %s to %s could not be queued", lmq_name, group, client_id
            )
        return True

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
