"""The gRPC side of fault rules: which MessagingService methods a rule may name, and the RocketMQ
status code (``apache.rocketmq.v2.Code``) it answers with.

A rule names a method by its name (``"SendMessage"``) or its full path
(``"/apache.rocketmq.v2.MessagingService/SendMessage"``): the unary methods, and the streaming
ones (``ReceiveMessage``: server streaming; ``Telemetry``: bidirectional), whose request messages
pass the rules as a unary call's does (:mod:`broker.grpc.stream_faults`). Protobuf is imported
only to read a status code given by its name.
"""

from __future__ import annotations

from codec.codes import request_code_name

SERVICE_PREFIX = "/apache.rocketmq.v2.MessagingService/"
#: The unary RPCs of the gateway's gRPC endpoint (broker.grpc.service), which faults can hit.
GRPC_METHODS = (
    "QueryRoute",
    "QueryAssignment",
    "Heartbeat",
    "NotifyClientTermination",
    "SendMessage",
    "RecallMessage",
    "EndTransaction",
    "AckMessage",
    "ChangeInvisibleDuration",
    "ForwardMessageToDeadLetterQueue",
)
#: The streaming RPCs, which faults hit per request message (broker.grpc.stream_faults).
GRPC_STREAMING_METHODS = ("ReceiveMessage", "Telemetry")
#: apache.rocketmq.v2.Code.TOO_MANY_REQUESTS: what the Proxy answers for a busy broker.
GRPC_TOO_MANY_REQUESTS = 42900


class FaultSpecError(ValueError):
    """A gRPC part of a rule that cannot be used (faults.FaultRuleError derives from it)."""


def grpc_method_of(value: object) -> str | None:
    """The full path of the gRPC method ``value`` names, or None when it names none (a
    RequestCode, say)."""
    if not isinstance(value, str):
        return None
    name = value.strip()
    name = name.removeprefix(SERVICE_PREFIX)
    return SERVICE_PREFIX + name if name in GRPC_METHODS or name in GRPC_STREAMING_METHODS else None


def grpc_code_of(value: object) -> int | None:
    """An ``apache.rocketmq.v2.Code`` from its number or its name (``"TOO_MANY_REQUESTS"``);
    None stays None; raises :class:`FaultSpecError` for anything else."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise FaultSpecError(f"respond: {value!r} is neither a gRPC Code name nor a number")
    from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int):
        if value not in pb.Code.values():
            raise FaultSpecError(f"respond: {value} is not an apache.rocketmq.v2.Code")
        return value
    if isinstance(value, str):
        try:
            return int(pb.Code.Value(value.strip().upper()))
        except ValueError:
            raise FaultSpecError(f"respond: unknown apache.rocketmq.v2.Code name {value!r}") from None
    raise FaultSpecError(f"respond: {value!r} is neither a gRPC Code name nor a number")


def request_name(request: int | str) -> str:
    """A rule's request for people: the RequestCode's Java name, or the gRPC method's name."""
    if isinstance(request, str):
        return request.removeprefix(SERVICE_PREFIX)
    return request_code_name(request)
