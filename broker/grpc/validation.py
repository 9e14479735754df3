"""The checks the Proxy makes on each gRPC request before anything reaches the broker.

Mirrors org.apache.rocketmq.proxy.grpc.v2.common.GrpcValidator (topics, consumer groups, tags,
invisible times, control characters), the validate* methods of
org.apache.rocketmq.proxy.grpc.v2.producer.SendMessageActivity (keys, message groups, user
properties, delivery times, orphaned transaction recovery), the long-polling time of
org.apache.rocketmq.proxy.grpc.v2.consumer.ReceiveMessageActivity and the settings checks of
org.apache.rocketmq.proxy.grpc.v2.client.ClientActivity, with the limits of ProxyConfig
(:class:`GrpcServerConfig`). Each raises :class:`StatusError` with the Proxy's code and text.
Where the Proxy has no check and fails inside (a timestamp or duration out of protobuf's range:
INTERNAL_SERVER_ERROR), these refuse the value with the field's code; an invalid born timestamp is
dropped, as there.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from typing import Protocol

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from broker.grpc.common import StatusError
from broker.grpc.convert import SYSTEM_PROPERTIES
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.framing import parse_timeout
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from gateway.transport.grpc.status import GrpcError, StatusCode

#: Whether a topic is a system one (TopicValidator.isSystemTopic with the broker's own topics).
SystemTopic = Callable[[str], bool]

TOPIC_MAX_LENGTH = 127  # Validators.TOPIC_MAX_LENGTH
GROUP_MAX_LENGTH = 255  # Validators.CHARACTER_MAX_LENGTH
SYS_GROUP_PREFIX = "CID_RMQ_SYS_"  # MixAll.CID_RMQ_SYS_PREFIX
_NAME_CHARS = frozenset("%|-_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_NAME_PATTERN = "^[%|a-zA-Z0-9_-]+$"
# google.protobuf.util.Timestamps / Durations: the valid ranges.
TIMESTAMP_SECONDS_MIN = -62_135_596_800  # 0001-01-01T00:00:00Z
TIMESTAMP_SECONDS_MAX = 253_402_300_799  # 9999-12-31T23:59:59Z
DURATION_SECONDS_MAX = 315_576_000_000  # 10 000 years
_POLLING_CODE_SINCE = "5.0.3"  # clients older than this get BAD_REQUEST for a short deadline


class TopicAndGroup(Protocol):
    """A request naming a topic and a consumer group."""

    @property
    def topic(self) -> pb.Resource: ...

    @property
    def group(self) -> pb.Resource: ...


# -- character classes ---------------------------------------------------------------------------


def contains_control_character(text: str) -> bool:
    """``GrpcValidator.containControlCharacter``: Guava's ``CharMatcher.javaIsoControl``."""
    return any(ch <= "\x1f" or "\x7f" <= ch <= "\x9f" for ch in text)


def _java_whitespace(ch: str) -> bool:
    """``Character.isWhitespace``: space separators but the non-breaking ones, and the controls
    \\t \\n \\v \\f \\r and \\x1c-\\x1f."""
    if ch in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f":
        return True
    return unicodedata.category(ch) in ("Zs", "Zl", "Zp") and ch not in "\xa0\u2007\u202f"


def is_blank(text: str) -> bool:
    """``StringUtils.isBlank``."""
    return all(_java_whitespace(ch) for ch in text)


def utf8_size(text: str) -> int:
    """``text.getBytes(UTF_8).length``."""
    return len(text.encode("utf-8", "surrogatepass"))


# -- protobuf well-known types -------------------------------------------------------------------


def timestamp_valid(stamp: Timestamp) -> bool:
    """``Timestamps.isValid``: seconds within years 1..9999, nanos in 0..999 999 999."""
    seconds, nanos = stamp.seconds, stamp.nanos
    return TIMESTAMP_SECONDS_MIN <= seconds <= TIMESTAMP_SECONDS_MAX and 0 <= nanos <= 999_999_999


def duration_valid(duration: Duration) -> bool:
    """``Durations.isValid``: within ±10 000 years, nanos of the seconds' sign."""
    seconds, nanos = duration.seconds, duration.nanos
    if abs(seconds) > DURATION_SECONDS_MAX or abs(nanos) > 999_999_999:
        return False
    return not (seconds < 0 < nanos or nanos < 0 < seconds)


def duration_ms(duration: Duration, code: pb.Code, what: str) -> int:
    """``Durations.toMillis``, refusing an invalid duration with ``code``."""
    if not duration_valid(duration):
        raise StatusError(code, f"the {what} is not a valid duration")
    return duration.ToMilliseconds()


# -- GrpcValidator -------------------------------------------------------------------------------


def _illegal_name(name: str) -> bool:
    return any(ch not in _NAME_CHARS for ch in name)


def validate_topic(topic: pb.Resource, is_system: SystemTopic) -> str:
    """``GrpcValidator.validateTopic`` (``Validators.checkTopic``, then system topics)."""
    name = topic.name
    if is_blank(name):
        raise StatusError(pb.ILLEGAL_TOPIC, "The specified topic is blank")
    if len(name) > TOPIC_MAX_LENGTH:
        raise StatusError(
            pb.ILLEGAL_TOPIC, f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}."
        )
    if _illegal_name(name):
        raise StatusError(
            pb.ILLEGAL_TOPIC,
            f"The specified topic[{name}] contains illegal characters, allowing only {_NAME_PATTERN}",
        )
    if is_system(name):
        raise StatusError(pb.ILLEGAL_TOPIC, "cannot access system topic")
    return name


def validate_consumer_group(group: pb.Resource) -> str:
    """``GrpcValidator.validateConsumerGroup`` (``Validators.checkGroup``, then system groups)."""
    name = group.name
    if is_blank(name):
        raise StatusError(pb.ILLEGAL_CONSUMER_GROUP, "the specified group is blank")
    if len(name) > GROUP_MAX_LENGTH:
        raise StatusError(
            pb.ILLEGAL_CONSUMER_GROUP,
            f"the specified group is longer than group max length {GROUP_MAX_LENGTH}.",
        )
    if _illegal_name(name):
        raise StatusError(
            pb.ILLEGAL_CONSUMER_GROUP,
            f"the specified group[{name}] contains illegal characters, allowing only {_NAME_PATTERN}",
        )
    if name.startswith(SYS_GROUP_PREFIX):
        raise StatusError(pb.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")
    return name


def validate_invisible_time(invisible_ms: int, config: GrpcServerConfig, minimum: int = 0) -> None:
    """``GrpcValidator.validateInvisibleTime``."""
    if invisible_ms < minimum:
        raise StatusError(pb.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too small. min is {minimum}")
    maximum = config.max_invisible_time_mills
    if maximum > 0 and invisible_ms > maximum:
        raise StatusError(pb.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too large. max is {maximum}")


def validate_tag(tag: str) -> None:
    """``GrpcValidator.validateTag``: an empty tag is no tag."""
    if not tag:
        return
    if is_blank(tag):
        raise StatusError(pb.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
    if "|" in tag:
        raise StatusError(pb.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
    if contains_control_character(tag):
        raise StatusError(pb.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")


# -- per RPC -------------------------------------------------------------------------------------


def validate_topic_and_group(request: TopicAndGroup, is_system: SystemTopic) -> None:
    """AckMessage, ChangeInvisibleDuration (without its time), ForwardMessageToDeadLetterQueue and
    QueryAssignment: ``validateTopicAndConsumerGroup`` of the request's ``topic`` and ``group``."""
    validate_topic(request.topic, is_system)
    validate_consumer_group(request.group)


def validate_change_invisible_duration(
    request: pb.ChangeInvisibleDurationRequest, is_system: SystemTopic, config: GrpcServerConfig
) -> None:
    """``ChangeInvisibleDurationActivity``: topic and group, then the time (min 0)."""
    validate_topic_and_group(request, is_system)
    invisible = duration_ms(request.invisible_duration, pb.ILLEGAL_INVISIBLE_TIME, "invisible duration")
    validate_invisible_time(invisible, config)


def validate_end_transaction(request: pb.EndTransactionRequest, is_system: SystemTopic) -> None:
    """``EndTransactionActivity``: the topic, a transaction id."""
    validate_topic(request.topic, is_system)
    if is_blank(request.transaction_id):
        raise StatusError(pb.INVALID_TRANSACTION_ID, "transaction id cannot be empty")


def validate_heartbeat(request: pb.HeartbeatRequest, client_type: int) -> None:
    """``ClientActivity.heartbeat``: a consumer's heartbeat names a valid group."""
    if client_type in (pb.PUSH_CONSUMER, pb.SIMPLE_CONSUMER, pb.LITE_PUSH_CONSUMER, pb.LITE_SIMPLE_CONSUMER):
        validate_consumer_group(request.group)


def validate_settings(settings: pb.Settings, is_system: SystemTopic) -> None:
    """``ClientActivity.processAndWriteClientSettings`` and ``processTelemetryException``: a bad
    topic or group ends the Telemetry stream INVALID_ARGUMENT, as do settings with neither
    publishing nor subscription."""
    try:
        if settings.HasField("publishing"):
            for topic in settings.publishing.topics:
                validate_topic(topic, is_system)
        elif settings.HasField("subscription"):
            validate_consumer_group(settings.subscription.group)
    except StatusError as err:
        raise GrpcError(
            StatusCode.INVALID_ARGUMENT, f"process client telemetryCommand failed. {err.message}"
        ) from None
    if settings.WhichOneof("pub_sub") is None:
        raise GrpcError(
            StatusCode.INVALID_ARGUMENT, "there is no publishing or subscription data in settings"
        )


# -- ReceiveMessage ------------------------------------------------------------------------------


def remaining_ms(metadata: Mapping[str, str]) -> int | None:
    """The call's time left from its ``grpc-timeout`` (``ContextInitPipeline``); None without one."""
    timeout = metadata.get("grpc-timeout")
    if timeout is None:
        return None
    try:
        return int(parse_timeout(timeout) * 1000)
    except GrpcError:
        return None


def polling_time(
    request: pb.ReceiveMessageRequest,
    config: GrpcServerConfig,
    remaining: int | None,
    request_timeout_ms: int = 0,
    client_version: str = "",
) -> int:
    """``ReceiveMessageActivity``'s long-polling time: the request's (without one, the time left
    less half the client's request timeout) clamped to the configured bounds, then to the time
    left less ``longPollingReserveTimeInMillis`` (so the empty answer beats the deadline; the
    Proxy itself polls until the deadline). Refused when the deadline leaves less than the least
    polling time."""
    low = config.grpc_client_consumer_min_long_polling_timeout_millis
    high = config.grpc_client_consumer_max_long_polling_timeout_millis
    if request.HasField("long_polling_timeout"):
        wanted = duration_ms(request.long_polling_timeout, pb.ILLEGAL_POLLING_TIME, "long polling timeout")
    elif remaining is not None:
        wanted = remaining - request_timeout_ms // 2
    else:
        wanted = high
    wanted = min(max(wanted, low), high)
    if remaining is not None and wanted > remaining:
        if remaining < low:
            old = not client_version or client_version < _POLLING_CODE_SINCE  # String.compareTo
            raise StatusError(
                pb.BAD_REQUEST if old else pb.ILLEGAL_POLLING_TIME,
                "The deadline time remaining is not enough for polling, please check network condition",
            )
        wanted = max(remaining - config.long_polling_reserve_time_in_millis, 0)
    return wanted


def validate_receive(
    request: pb.ReceiveMessageRequest,
    is_system: SystemTopic,
    config: GrpcServerConfig,
    metadata: Mapping[str, str],
    settings: pb.Settings | None = None,
    client_version: str = "",
) -> tuple[int, int]:
    """``ReceiveMessageActivity``: the long-polling time, topic and group, the invisible time (the
    configured default for an auto-renewed receive); returns ``(polling ms, invisible ms)``. A
    batch size below 1 is refused too (the Proxy passes it to the broker)."""
    timeout = 0
    if settings is not None and settings.HasField("request_timeout"):
        timeout = settings.request_timeout.ToMilliseconds()
    poll = polling_time(request, config, remaining_ms(metadata), timeout, client_version)
    validate_topic(request.message_queue.topic, is_system)
    validate_consumer_group(request.group)
    if config.enable_proxy_auto_renew and request.auto_renew:
        invisible = config.default_invisible_time_mills
    else:
        invisible = duration_ms(request.invisible_duration, pb.ILLEGAL_INVISIBLE_TIME, "invisible duration")
        validate_invisible_time(invisible, config, config.min_invisible_time_mills_for_recv)
    if request.batch_size < 1:
        raise StatusError(pb.BAD_REQUEST, f"the batch size must be positive: {request.batch_size}")
    return poll, invisible


# -- SendMessage ---------------------------------------------------------------------------------


def validate_send(
    request: pb.SendMessageRequest, is_system: SystemTopic, config: GrpcServerConfig, now_ms: int
) -> None:
    """``SendMessageActivity.sendMessage`` and ``buildMessage``: at least one message, a valid
    topic shared by all, then each message's body, properties, tag, keys, id, transaction
    recovery time, delivery time and message group, in the Proxy's order."""
    if not request.messages:
        raise StatusError(pb.MESSAGE_CORRUPTED, "no message to send")
    first = request.messages[0].topic
    validate_topic(first, is_system)
    for message in request.messages:
        if message.topic != first:
            raise StatusError(pb.MESSAGE_CORRUPTED, "topic in message is not same")
        validate_message(message, config, now_ms)


def validate_message(message: pb.Message, config: GrpcServerConfig, now_ms: int) -> None:
    """``validateMessageBodySize`` and ``buildMessageProperty``'s checks of one message."""
    if config.enable_message_body_empty_check and not message.body:
        raise StatusError(pb.MESSAGE_BODY_EMPTY, "message body cannot be empty")
    if 0 < config.max_message_size < len(message.body):
        raise StatusError(
            pb.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {config.max_message_size}"
        )
    props = message.user_properties
    if len(props) > config.user_property_max_num:
        raise StatusError(
            pb.MESSAGE_PROPERTIES_TOO_LARGE,
            f"too many user properties, max is {config.user_property_max_num}",
        )
    size = 0
    for key, value in props.items():
        if key in SYSTEM_PROPERTIES:
            raise StatusError(pb.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {key}")
        if contains_control_character(key):
            raise StatusError(
                pb.ILLEGAL_MESSAGE_PROPERTY_KEY, "the key of property cannot contain control character"
            )
        if contains_control_character(value):
            raise StatusError(
                pb.ILLEGAL_MESSAGE_PROPERTY_KEY, "the value of property cannot contain control character"
            )
        size += utf8_size(key) + utf8_size(value)
    system = message.system_properties
    validate_tag(system.tag)
    size += utf8_size(system.tag)
    for key in system.keys:
        if key and is_blank(key):
            raise StatusError(pb.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
        if contains_control_character(key):
            raise StatusError(pb.ILLEGAL_MESSAGE_KEY, "key cannot contain control character")
        size += utf8_size(key)
    if size > config.max_user_property_size:
        raise StatusError(
            pb.MESSAGE_PROPERTIES_TOO_LARGE,
            f"the total size of user property is too large, max is {config.max_user_property_size}",
        )
    if is_blank(system.message_id):
        raise StatusError(pb.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    if system.message_type == pb.TRANSACTION and system.HasField("orphaned_transaction_recovery_duration"):
        recovery = system.orphaned_transaction_recovery_duration
        if not duration_valid(recovery):
            raise StatusError(
                pb.BAD_REQUEST, "the orphaned transaction recovery duration is not a valid duration"
            )
        most = config.max_transaction_recovery_second
        if 0 < most < recovery.seconds:
            raise StatusError(
                pb.BAD_REQUEST, f"the max transaction recovery time of message is too large, max is {most}"
            )
    if system.HasField("delivery_timestamp"):
        validate_delivery_time(system.delivery_timestamp, config, now_ms)
    if system.message_group:
        validate_message_group(system.message_group, config)


def validate_delivery_time(stamp: Timestamp, config: GrpcServerConfig, now_ms: int) -> None:
    """``SendMessageActivity.validateDelayTime``: at most ``maxDelayTimeMills`` ahead."""
    if not timestamp_valid(stamp):
        raise StatusError(pb.ILLEGAL_DELIVERY_TIME, "the delivery timestamp is not a valid timestamp")
    most = config.max_delay_time_mills
    if most > 0 and stamp.ToMilliseconds() - now_ms > most:
        raise StatusError(
            pb.ILLEGAL_DELIVERY_TIME, f"the max delay time of message is too large, max is {most}"
        )


def validate_message_group(group: str, config: GrpcServerConfig) -> None:
    """``SendMessageActivity.validateMessageGroup``: a group of ``maxMessageGroupSize`` bytes or
    more is refused."""
    if is_blank(group):
        raise StatusError(pb.ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace")
    most = config.max_message_group_size
    if most <= 0:
        return
    if utf8_size(group) >= most:
        raise StatusError(pb.ILLEGAL_MESSAGE_GROUP, f"message group exceed the max size {most}")
    if contains_control_character(group):
        raise StatusError(pb.ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character")
