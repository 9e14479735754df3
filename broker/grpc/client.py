"""Telemetry, Heartbeat and NotifyClientTermination: who the 5.x clients are and their settings.

Mirrors ``org.apache.rocketmq.proxy.grpc.v2.client.ClientActivity`` and
``GrpcClientSettingsManager``. A client opens a Telemetry stream and sends its ``Settings``; it
is answered with the settings merged with the server's (retry policy, body size limit, the
consumer group's batch size, long-polling time and retry policy; metrics off), and a Java 5.x
client does not finish starting before that answer. Settings and heartbeats register the client
in the broker's ClientManager (a producer under each of its topics, the Proxy's producer group
for transaction checks; a consumer under its group with its subscriptions), where the remoting
clients are, so expiry and consumer listings work the same for both.

A client's key there is the one :class:`ConnectionInfo` kept per client id from its first
registration to its termination (Java's ``GrpcChannelManager.createChannel``): its ``id`` is the
broker-wide number of the HTTP/2 connection it registered over, its address that connection's
peer, its language the ``x-mq-language`` header and its version the ``x-mq-client-version``
header read as an ``MQVersion`` name (``ClientActivity.parseClientVersion``: the current version
when it is not one), as ``consumerConnection`` and ``producerConnection`` show them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import DecodeError

from broker.client_manager import ClientChannel
from broker.controller import BrokerController
from broker.grpc.common import (
    OK,
    Call,
    ClientContext,
    RequestCheck,
    StatusError,
    caller,
    require_client_id,
    status,
)
from broker.grpc.observe import CallRecorder
from broker.grpc.renewal import CUSTOMIZED_RETRY_MS
from broker.lite import MAX_LITE_TOPIC_SIZE, lite_sub_client_quota
from broker.subscription_group_manager import SubscriptionGroupConfig
from codec.bodies.heartbeat import CONSUME_ACTIVELY, CONSUME_PASSIVELY, ConsumerData, SubscriptionData
from codec.codes import LanguageCode
from codec.versions import CURRENT_VERSION, version_ordinal
from gateway.transport.dispatch import ConnectionInfo, Peer
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

logger = logging.getLogger(__name__)

# ProxyConfig defaults the merged settings carry.
PRODUCER_MAX_ATTEMPTS = 3  # grpcClientProducerMaxAttempts
PRODUCER_BACKOFF_INITIAL_MS = 10  # grpcClientProducerBackoffInitialMillis
PRODUCER_BACKOFF_MAX_MS = 1000  # grpcClientProducerBackoffMaxMillis
PRODUCER_BACKOFF_MULTIPLIER = 2  # grpcClientProducerBackoffMultiplier
VALIDATE_MESSAGE_TYPE = True  # enableTopicMessageTypeCheck
TELEMETRY = "Telemetry"


def language_of(header: str) -> LanguageCode:
    """``LanguageCode.valueOf(x-mq-language)``; a name it does not know is ``OTHER``."""
    try:
        return LanguageCode[header.upper()]
    except KeyError:
        return LanguageCode.OTHER


def client_version_of(header: str) -> int:
    """``ClientActivity.parseClientVersion``: the ``MQVersion`` ordinal named by the header (upper
    case), else the current version (a 5.x client sends ``5.0.8``, which names none)."""
    try:
        return version_ordinal(header.upper())
    except KeyError:
        return CURRENT_VERSION


def _duration_ms(ms: int) -> Duration:
    return Duration(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def merge_producer(settings: pb.Settings, max_body_size: int) -> None:
    """``GrpcClientSettingsManager.mergeProducerData``."""
    policy = settings.backoff_policy
    policy.max_attempts = PRODUCER_MAX_ATTEMPTS
    policy.exponential_backoff.CopyFrom(
        pb.ExponentialBackoff(
            initial=_duration_ms(PRODUCER_BACKOFF_INITIAL_MS),
            max=_duration_ms(PRODUCER_BACKOFF_MAX_MS),
            multiplier=PRODUCER_BACKOFF_MULTIPLIER,
        )
    )
    settings.publishing.validate_message_type = VALIDATE_MESSAGE_TYPE
    settings.publishing.max_body_size = max_body_size


def merge_subscription(
    settings: pb.Settings, group: SubscriptionGroupConfig, config: GrpcServerConfig
) -> None:
    """``GrpcClientSettingsManager.mergeSubscriptionData`` with the group's config; the batch size
    and long polling timeout a consumer is told come from the endpoint's ``config``
    (``grpcClientConsumerLongPollingBatchSize``, ``grpcClientConsumerMaxLongPollingTimeoutMillis``)."""
    subscription = settings.subscription
    subscription.receive_batch_size = config.grpc_client_consumer_long_polling_batch_size
    subscription.long_polling_timeout.CopyFrom(
        _duration_ms(config.grpc_client_consumer_max_long_polling_timeout_millis)
    )
    subscription.fifo = group.consume_message_orderly
    policy = settings.backoff_policy
    policy.max_attempts = group.retry_max_times + 1
    retry = group.group_retry_policy or {}
    if retry.get("type") == "EXPONENTIAL":
        exp = retry.get("exponentialRetryPolicy") or {}
        policy.exponential_backoff.CopyFrom(
            pb.ExponentialBackoff(
                initial=_duration_ms(int(exp.get("initial", 5_000))),
                max=_duration_ms(int(exp.get("max", 7_200_000))),
                multiplier=float(exp.get("multiplier", 2)),
            )
        )
    else:
        custom = (retry.get("customizedRetryPolicy") or {}).get("next") or CUSTOMIZED_RETRY_MS
        policy.customized_backoff.CopyFrom(
            pb.CustomizedBackoff(next=[_duration_ms(int(ms)) for ms in custom])
        )


def merge_lite(settings: pb.Settings, group: SubscriptionGroupConfig) -> None:
    """``mergeSubscriptionData``'s lite part (5.5): the client's quota of lite topics and the
    longest lite topic name. Given to lite consumers only: the 5.3.3 settings have neither."""
    settings.subscription.lite_subscription_quota = lite_sub_client_quota(group.attributes)
    settings.subscription.max_lite_topic_size = MAX_LITE_TOPIC_SIZE


class ClientActivity:
    """The clients' settings (by client id) and their registrations; see the module docstring."""

    def __init__(
        self,
        broker: BrokerController,
        now_ms: Callable[[], int] | None = None,
        peer_for: Callable[[str], Peer] | None = None,
        check: RequestCheck | None = None,
        recorder: CallRecorder | None = None,
        config: GrpcServerConfig | None = None,
    ) -> None:
        """``peer_for(client_id)``: what the broker calls to reach the client (transaction checks);
        ``check``: the request pipeline, run on every Telemetry command; ``recorder``: told of
        every Settings command a Telemetry stream carries and its refusals; ``config``: the
        endpoint's settings, whose consumer keys the merged settings carry."""
        self.broker = broker
        self.config = config or GrpcServerConfig()
        self.check = check
        self.peer_for = peer_for
        self.now_ms = now_ms or broker.now_ms
        self.raw_settings: dict[str, pb.Settings] = {}
        self.connections: dict[str, ConnectionInfo] = {}
        #: Open Telemetry streams by client id (server-to-client commands go there).
        self.sessions: dict[str, Call] = {}
        self.recorder = recorder if recorder is not None else CallRecorder()
        #: Told the id of each client that terminates or whose Telemetry stream is cancelled
        #: (its lite subscriptions go).
        self.on_termination: Callable[[str], None] | None = None

    # -- settings --------------------------------------------------------------------------------

    def update_settings(self, client_id: str, settings: pb.Settings) -> None:
        """``updateClientSettings``: a consumer's settings start from the default group's merge."""
        if settings.HasField("subscription"):
            base = pb.Settings()
            merge_subscription(base, SubscriptionGroupConfig(""), self.config)
            base.MergeFrom(settings)
            settings = base
        self.raw_settings[client_id] = settings

    def is_online(self, client_id: str, group: str) -> bool:
        """``ConsumerManager.findChannel(group, channel) != null`` for the client's channel."""
        info = self.connections.get(client_id)
        members = self.broker.clients.consumers.get(group)
        return info is not None and members is not None and info in members.channels

    def settings_of(self, client_id: str) -> pb.Settings | None:
        """``getClientSettings``: the stored settings merged with the server's, metrics off."""
        raw = self.raw_settings.get(client_id)
        if raw is None:
            return None
        settings = pb.Settings()
        settings.CopyFrom(raw)
        if settings.HasField("publishing"):
            merge_producer(settings, self.broker.config.max_message_size)
        elif settings.HasField("subscription"):
            group = self.broker.groups.find(settings.subscription.group.name, create=False)
            if group is not None:
                merge_subscription(settings, group, self.config)
                if settings.client_type in (pb.LITE_PUSH_CONSUMER, pb.LITE_SIMPLE_CONSUMER):
                    merge_lite(settings, group)
        settings.metric.CopyFrom(pb.Metric(on=False))
        return settings

    # -- registrations ---------------------------------------------------------------------------

    def _connection(self, ctx: ClientContext) -> ConnectionInfo:
        """The client's key in the ClientManager (see the module docstring), made on first use."""
        info = self.connections.get(ctx.client_id)
        if info is None:
            peer = self.peer_for(ctx.client_id) if self.peer_for is not None else None
            info = ConnectionInfo(ctx.connection_id, ctx.remote_addr, "", peer)
            info.client_id = ctx.client_id
            info.language = language_of(ctx.language)
            info.version = client_version_of(ctx.version)
            self.connections[ctx.client_id] = info
        return info

    def _register(self, ctx: ClientContext, settings: pb.Settings) -> None:
        """The producer under each of its topics (the Proxy's producer group is the topic name);
        a consumer under its group with its subscriptions in clustering mode from the last offset,
        consuming actively when it is a simple consumer, passively when a push consumer
        (``ClientActivity.buildConsumeType``), as ``ClientActivity.heartbeat`` registers one."""
        info = self._connection(ctx)
        channel = ClientChannel(info, ctx.client_id, info.language, info.version, self.now_ms())
        if settings.HasField("publishing"):
            for topic in settings.publishing.topics:
                self.broker.clients.register_producer(topic.name, channel)
        elif settings.HasField("subscription") and settings.subscription.group.name:
            subscriptions = [
                SubscriptionData.build(entry.topic.name, entry.expression.expression)
                if entry.expression.type != pb.SQL
                else SubscriptionData(
                    topic=entry.topic.name, sub_string=entry.expression.expression, expression_type="SQL92"
                )
                for entry in settings.subscription.subscriptions
            ]
            simple = settings.client_type == pb.SIMPLE_CONSUMER
            data = ConsumerData(
                group_name=settings.subscription.group.name,
                consume_type=CONSUME_ACTIVELY if simple else CONSUME_PASSIVELY,
                subscription_data_set=subscriptions,
            )
            if self.broker.clients.register_consumer(data, channel):
                self.broker.notify_consumer_ids_changed(data.group_name)

    def _unregister(self, ctx: ClientContext, settings: pb.Settings) -> None:
        info = self.connections.pop(ctx.client_id, None)
        if info is None:
            return
        for topic in settings.publishing.topics:
            self.broker.clients.unregister_producer(topic.name, info)
        group = settings.subscription.group.name
        if group and self.broker.clients.unregister_consumer(group, info):
            self.broker.notify_consumer_ids_changed(group)

    # -- RPCs ------------------------------------------------------------------------------------

    def heartbeat(self, ctx: ClientContext, request: pb.HeartbeatRequest) -> pb.HeartbeatResponse:
        """``ClientActivity.heartbeat``: refreshes the registration the settings made."""
        client_id = require_client_id(ctx)
        settings = self.settings_of(client_id)
        if settings is None:
            return pb.HeartbeatResponse(
                status=status(pb.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client")
            )
        self._register(ctx, settings)
        return pb.HeartbeatResponse(status=OK)

    def notify_client_termination(
        self, ctx: ClientContext, request: pb.NotifyClientTerminationRequest
    ) -> pb.NotifyClientTerminationResponse:
        """``ClientActivity.notifyClientTermination``: forget the client and its registrations."""
        client_id = require_client_id(ctx)
        settings = self.raw_settings.pop(client_id, None)
        if settings is not None:
            self._unregister(ctx, settings)
        if self.on_termination is not None:
            self.on_termination(client_id)
        return pb.NotifyClientTerminationResponse(status=OK)

    def on_settings(self, ctx: ClientContext, settings: pb.Settings) -> pb.TelemetryCommand:
        """``processClientSettings``: store, register, answer with the merged settings."""
        self.update_settings(ctx.client_id, settings)
        merged = self.settings_of(ctx.client_id)
        assert merged is not None
        self._register(ctx, merged)
        return pb.TelemetryCommand(status=OK, settings=merged)

    async def telemetry(self, call: Call) -> None:
        """``ClientActivity.telemetry``: the bidirectional stream of one client."""
        ctx = ClientContext.of(call)
        if not ctx.client_id:
            answer = pb.TelemetryCommand(status=status(pb.CLIENT_ID_REQUIRED, "missing client id"))
            await call.send(answer.SerializeToString())
            return
        self.sessions[ctx.client_id] = call
        try:
            while (payload := await call.receive()) is not None:
                try:
                    command = pb.TelemetryCommand.FromString(payload)
                except DecodeError:
                    logger.info("grpc client %s: malformed TelemetryCommand ignored", ctx.client_id)
                    continue
                start = self.recorder.start()
                if self.check is not None:
                    try:
                        self.check(ctx, command)
                    except StatusError as err:
                        # ResponseWriter.write: the status, then the stream is completed.
                        self.recorder.refused(TELEMETRY, caller(call), err.code, err.message, start)
                        answer = pb.TelemetryCommand(status=status(err.code, err.message))
                        await call.send(answer.SerializeToString())
                        return
                kind = command.WhichOneof("command")
                if kind == "settings":
                    try:
                        answer = self.on_settings(ctx, command.settings)
                    except StatusError as err:
                        self.recorder.refused(TELEMETRY, caller(call), err.code, err.message, start)
                        answer = pb.TelemetryCommand(status=status(err.code, err.message))
                    else:
                        self.recorder.answered(TELEMETRY, answer.status.code, start)
                    await call.send(answer.SerializeToString())
                else:
                    logger.debug("grpc client %s: telemetry %s", ctx.client_id, kind)
        finally:
            if self.sessions.get(ctx.client_id) is call:
                del self.sessions[ctx.client_id]
                # handleGrpcCancel: a client whose stream was cancelled is gone (its lite
                # subscriptions go); a half-close is not that.
                if call.cancelled and self.on_termination is not None:
                    self.on_termination(ctx.client_id)
