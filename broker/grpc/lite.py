"""Lite topics over gRPC: SyncLiteSubscription and the lite consumers' receive.

Mirrors the 5.5 Proxy's ``ClientActivity.syncLiteSubscription`` and ``ClientProcessor`` checks
(topic and group names, each added lite topic as ``validateLiteTopic``, the group's
``lite.bind.topic``, the request's size against the group's quota) and the broker's
``LiteSubscriptionCtlProcessor`` (the registry of :mod:`broker.lite`: a PARTIAL_ADD past the
broker's ``maxLiteSubscriptionCount`` is LITE_SUBSCRIPTION_QUOTA_EXCEEDED with the broker's
``LiteQuotaException`` text; its ``offset_option``, converted as ``ClientActivity.toOffsetOption``
does, moves the group's offset on each lite topic added: :mod:`broker.lite_lifecycle`), then, for a
LITE_PUSH_CONSUMER or LITE_SIMPLE_CONSUMER, ``PopLiteMessageProcessor``: a receive pops the LMQ
queues of the client's lite topics one after the other, each orderly (a queue's next message
waits until the one handed out is acknowledged or invisible no more: FIFO per lite topic, as
the broker's ``consumerOrderInfoManager`` keeps it), until the batch is full. Nothing found: it
waits for an arrival on any of those queues (or a change of the client's subscription, or one of
them ceasing to be blocked) up to the long-polling time, then pops once more. A lite topic
unsubscribed is never popped again.

Java's broker learns which lite topics have new messages from its dispatch events
(``LiteEventDispatcher``); here a receive simply walks the client's subscribed queues, from a
rotating start so that one busy lite topic does not starve the others.
"""

from __future__ import annotations

import itertools
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
from broker.pop.pop_message import PopBatch, PopRequest
from broker.service.consume import ConsumeService
from codec.bodies.heartbeat import EXPRESSION_TAG
from codec.codes import ResponseCode
from codec.errors import RocketMQError
from codec.headers.pop import CONSUME_INIT_MODE_MAX
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
    ) -> None:
        """``sessions``: the clients' Telemetry streams by client id (ClientActivity's), on which
        a client of an exclusive group is told it lost a lite topic; None: nobody is told."""
        self.broker = broker
        self.pop = pop
        self.registry = registry if registry is not None else LiteSubscriptionRegistry()
        if lifecycle is None:
            lifecycle = LiteLifecycleManager(broker, self.registry, pop.orders, pop.state)
        self.lifecycle = lifecycle
        self.sessions = sessions
        self._starts: dict[str, itertools.count[int]] = {}

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
                excluded = self.lifecycle.subscribe_partial(
                    client_id, group, topic, lite_topics, offset_option
                )
            except LiteQuotaError as err:
                raise StatusError(pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED, str(err)) from None
            for other, lmq_name in excluded:
                self._notify_unsubscribe(other, lmq_name)
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

    def _notify_unsubscribe(self, client_id: str, lmq_name: str) -> None:
        """``GrpcClientChannel.processNotifyUnsubscribeLite``: a NotifyUnsubscribeLiteCommand on
        the client's Telemetry stream, so it drops the lite topic from its own set (a client
        without a stream is only logged, as the broker does without a channel)."""
        names = split_lmq_name(lmq_name)
        session = self.sessions.get(client_id) if self.sessions is not None else None
        if names is None or session is None:
            logger.warning("notifyUnsubscribeLite %s: client %s has no telemetry stream", lmq_name, client_id)
            return
        command = pb.TelemetryCommand(
            notify_unsubscribe_lite_command=pb.NotifyUnsubscribeLiteCommand(lite_topic=names[1])
        )
        if not session.post(command.SerializeToString()):
            logger.warning("notifyUnsubscribeLite %s to %s could not be queued", lmq_name, client_id)

    def forget(self, client_id: str) -> None:
        """``offlineClientLiteSubscription``: a client gone leaves no subscription behind."""
        self.registry.remove_complete(client_id)
        self._starts.pop(client_id, None)

    # -- receive ---------------------------------------------------------------------------------

    def _order(self, client_id: str) -> list[str]:
        names = self.registry.lmq_names_of(client_id)
        if len(names) > 1:
            start = next(self._starts.setdefault(client_id, itertools.count())) % len(names)
            names = names[start:] + names[:start]
        return names

    async def _pop_once(
        self, client_id: str, group: str, wanted: int, invisible_ms: int, attempt_id: str | None
    ) -> list[tuple[PopRequest, PopBatch]]:
        found: list[tuple[PopRequest, PopBatch]] = []
        for lmq_name in self._order(client_id):
            if wanted <= 0:
                break
            request = PopRequest(
                consumer_group=group,
                topic=lmq_name,
                queue_id=0,
                max_msg_nums=wanted,
                invisible_time=invisible_ms,
                poll_time=0,
                born_time=self.broker.now_ms(),
                init_mode=CONSUME_INIT_MODE_MAX,  # PopLiteMessageProcessor.getPopOffset
                exp_type=EXPRESSION_TAG,
                exp="*",
                order=True,
                attempt_id=attempt_id,
            )
            try:
                outcome = await self.pop.pop_message(request)
            except RocketMQError as err:  # this queue only (a name no queue can have, a group gone)
                logger.debug("lite pop of %s for %s refused: %s", lmq_name, group, err)
                continue
            if outcome.code == ResponseCode.SUCCESS and outcome.batch.buffers:
                found.append((request, outcome.batch))
                wanted -= len(outcome.batch.buffers)
        return found

    async def receive(
        self,
        ctx: ClientContext,
        group: str,
        topic: str,
        batch_size: int,
        invisible_ms: int,
        poll_ms: int,
        attempt_id: str | None,
    ) -> list[tuple[PopRequest, PopBatch]]:
        """The pops that found messages (each with its request), after a wait when none did."""
        self.registry.touch(ctx.client_id, self.broker.now_ms())
        found = await self._pop_once(ctx.client_id, group, batch_size, invisible_ms, attempt_id)
        if found or poll_ms <= 0 or self.broker.stopping:
            return found
        queues = [(name, 0) for name in self.registry.lmq_names_of(ctx.client_id)]
        now = self.broker.now_ms()
        deadline = now + poll_ms
        for name, _ in queues:  # a blocked lite topic freeing up ends the wait too
            free_at = self.pop.orders.unblock_time(name, group, 0)
            if free_at > now:
                deadline = min(deadline, free_at + 1)
        await self.pop.polling.wait(topic, group, -1, queues, None, deadline)
        return await self._pop_once(ctx.client_id, group, batch_size, invisible_ms, attempt_id)
