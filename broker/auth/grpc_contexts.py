"""Who a gRPC request comes from and what it must be allowed: the gRPC halves of the builders.

Mirrors ``DefaultAuthenticationContextBuilder.build(Metadata, GeneratedMessageV3)`` and
``DefaultAuthorizationContextBuilder.build(Metadata, GeneratedMessageV3)`` of 5.3.3, which the
Proxy's ``AuthenticationPipeline`` / ``AuthorizationPipeline`` call for every request message.

Authentication reads two request headers the 5.x clients send (rocketmq-clients ``Signature``)::

    authorization: MQv2-HMAC-SHA1 Credential=<accessKey>, SignedHeaders=x-mq-date-time, Signature=<hex>
    x-mq-date-time: 20260125T101500Z

The signed content is the date-time header's value alone, the signature the hex of
HmacSHA1(secret, content); the check compares its Base64 form with the one the user's secret
gives (:meth:`broker.auth.guard.AuthGuard.check_signature`, shared with the remoting context).
The date is not checked for freshness, as in Java. Without an ``authorization`` header the
context has no user, which the check refuses ("username cannot be null.").

The header is parsed with Java's ``String.split`` semantics (trailing empty pieces dropped, a
limit of 2 keeping them), so a malformed header is refused with the same message.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass

from google.protobuf.message import Message as ProtoMessage

from broker.auth.contexts import PUB, SUB, Need
from broker.auth.metadata import AuthError
from broker.auth.models import Action, Resource
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

AUTHORIZATION = "authorization"  # GrpcConstants.AUTHORIZATION
DATE_TIME = "x-mq-date-time"  # GrpcConstants.DATE_TIME
AUTHORIZATION_AK = "x-mq-authorization-ak"  # GrpcConstants.AUTHORIZATION_AK
CREDENTIAL = "Credential"
SIGNATURE = "Signature"
_JAVA_BLANKS = "".join(chr(c) for c in range(0x21))  # what String.trim() removes
CONSUMER_TYPES = frozenset((pb.PUSH_CONSUMER, pb.SIMPLE_CONSUMER, pb.PULL_CONSUMER))
PUB_SUB = (Action.PUB, Action.SUB)


class ContextError(Exception):
    """A request Java refuses with an exception that is not an authorization one (the Proxy
    answers ``INTERNAL_SERVER_ERROR``): a settings command without publishing or subscription."""


@dataclass(frozen=True, slots=True)
class GrpcCredentials:
    """``DefaultAuthenticationContext`` of a gRPC request."""

    username: str | None
    signature: str | None  # Base64, as the remoting signature
    content: bytes


def java_split(text: str, sep: str) -> list[str]:
    """``String.split(sep)`` for a one-character separator: trailing empty strings removed, and a
    text without the separator returned whole (so ``""`` gives ``[""]``)."""
    parts = text.split(sep)
    if len(parts) == 1:
        return parts
    while parts and not parts[-1]:
        parts.pop()
    return parts


def credentials(metadata: Mapping[str, str]) -> GrpcCredentials:
    """The credentials the request headers carry; raises :class:`AuthError` with Java's message
    for a header that does not parse."""
    authorization = metadata.get(AUTHORIZATION)
    if not authorization:
        return GrpcCredentials(None, None, b"")
    datetime = metadata.get(DATE_TIME)
    if not datetime:
        raise AuthError("datetime is null.")
    scheme_and_rest = authorization.split(" ", 1)
    if len(scheme_and_rest) != 2:
        raise AuthError("authentication header is incorrect.")
    username: str | None = None
    signature: str | None = None
    for key_value in java_split(scheme_and_rest[1], ","):
        kv = key_value.strip(_JAVA_BLANKS).split("=", 1)
        if len(kv) != 2:
            raise AuthError(f"authentication keyValues length is incorrect, actual length={len(kv)}.")
        key, value = kv
        if key == CREDENTIAL:
            parts = java_split(value, "/")
            if not parts:
                raise AuthError("authentication credential length is incorrect, actual length=0.")
            username = parts[0]
        elif key == SIGNATURE:
            signature = _hex_to_base64(value)
    return GrpcCredentials(username, signature, datetime.encode("utf-8"))


def _hex_to_base64(text: str) -> str:
    """Commons-codec ``Hex.decodeHex`` (strict: even length, hex digits only), then Base64."""
    try:
        raw = binascii.a2b_hex(text)
    except (binascii.Error, ValueError):
        raise AuthError("create authentication context error.") from None
    return base64.b64encode(raw).decode("ascii")


def _name(resource: pb.Resource, what: str) -> str:
    name = resource.name
    if not name.strip():
        raise AuthError(f"{what} is null.")
    return name


def _pub(topic: pb.Resource) -> list[Need]:
    return [(Resource.topic(_name(topic, "topic")), PUB)]


def _group_sub(group: pb.Resource) -> list[Need]:
    return [(Resource.group(_name(group, "group")), SUB)]


def _sub(group: pb.Resource, topic: pb.Resource) -> list[Need]:
    return [*_group_sub(group), (Resource.topic(_name(topic, "topic")), SUB)]


def _settings(settings: pb.Settings) -> list[Need]:
    has_publishing, has_subscription = settings.HasField("publishing"), settings.HasField("subscription")
    if not has_publishing and not has_subscription:
        raise ContextError("settings command doesn't have publishing or subscription.")
    needs: list[Need] = []
    if has_publishing:
        for topic in settings.publishing.topics:
            needs += _pub(topic)
    if has_subscription:
        needs += _group_sub(settings.subscription.group)
        for entry in settings.subscription.subscriptions:
            needs.append((Resource.topic(_name(entry.topic, "topic")), SUB))
    return needs


def required_permissions(request: ProtoMessage) -> list[Need]:
    """What one request message needs, in Java's order; raises :class:`AuthError` (or
    :class:`ContextError`) for a request that names no resource where one is needed."""
    if isinstance(request, pb.SendMessageRequest):
        if not request.messages:
            raise AuthError("message is null.")
        return _pub(request.messages[0].topic)
    if isinstance(request, pb.RecallMessageRequest | pb.EndTransactionRequest):
        return _pub(request.topic)
    if isinstance(request, pb.HeartbeatRequest):
        return _group_sub(request.group) if request.client_type in CONSUMER_TYPES else []
    if isinstance(request, pb.ReceiveMessageRequest):
        if not request.HasField("message_queue"):
            raise AuthError("messageQueue is null.")
        return _sub(request.group, request.message_queue.topic)
    if isinstance(
        request, pb.AckMessageRequest | pb.ForwardMessageToDeadLetterQueueRequest | pb.QueryAssignmentRequest
    ):
        return _sub(request.group, request.topic)
    if isinstance(request, pb.NotifyClientTerminationRequest):
        return _group_sub(request.group) if request.group.name.strip() else []
    if isinstance(request, pb.ChangeInvisibleDurationRequest):
        return _group_sub(request.group)
    if isinstance(request, pb.QueryRouteRequest):
        return [(Resource.topic(_name(request.topic, "topic")), PUB_SUB)]
    if isinstance(request, pb.TelemetryCommand):
        return _settings(request.settings) if request.WhichOneof("command") == "settings" else []
    return []
