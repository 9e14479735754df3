"""What every gRPC handler shares: the call it is given, statuses, the unary adapter.

Mirrors the Proxy's ``ResponseBuilder`` (exceptions and remoting codes to ``Status``),
``GrpcProxyException`` and the ``ProxyContext`` the interceptors build from request headers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage

from broker.grpc.faults import injected as fault_answer
from broker.grpc.observe import CallRecorder
from codec.codes import ResponseCode
from codec.errors import RocketMQError
from gateway.transport.faults import FaultPoint
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from gateway.transport.grpc.status import GrpcError, StatusCode

logger = logging.getLogger(__name__)

# gRPC request headers the 5.x clients send (the Proxy's ContextInterceptor reads them).
CLIENT_ID = "x-mq-client-id"
LANGUAGE = "x-mq-language"
CLIENT_VERSION = "x-mq-client-version"
NAMESPACE = "x-mq-namespace"

# ResponseBuilder.RESPONSE_CODE_MAPPING; any other remoting code is INTERNAL_SERVER_ERROR.
_REMOTING_CODES: dict[int, pb.Code] = {
    ResponseCode.SUCCESS: pb.OK,
    ResponseCode.SYSTEM_BUSY: pb.TOO_MANY_REQUESTS,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: pb.NOT_IMPLEMENTED,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: pb.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.TOPIC_NOT_EXIST: pb.TOPIC_NOT_FOUND,  # TopicRouteHelper.isTopicNotExistError
    ResponseCode.LMQ_QUOTA_EXCEEDED: pb.LITE_TOPIC_QUOTA_EXCEEDED,
    ResponseCode.LITE_SUBSCRIPTION_QUOTA_EXCEEDED: pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED,
}


class Call(Protocol):
    """The server call a handler is given (gateway.transport.grpc.server.ServerCall)."""

    metadata: dict[str, str]
    peer: str
    connection_id: int  # of the HTTP/2 connection the call came on

    async def receive(self) -> bytes | None: ...

    async def send(self, payload: bytes, *, flush: bool = True) -> None: ...

    def post(self, payload: bytes) -> bool:
        """Queue a response message from outside the handler; False if it cannot be queued."""

    @property
    def cancelled(self) -> bool:
        """The stream was reset (by the client, or its connection ended) before the call ended."""


Handler = Callable[[Call], Awaitable[None]]
#: The request pipeline's check of one request message (broker.grpc.auth.GrpcAuth); raises
#: StatusError to refuse it.
RequestCheck = Callable[["ClientContext", ProtoMessage], None]


class StatusError(Exception):
    """A request refused with a RocketMQ status code (the Proxy's GrpcProxyException)."""

    def __init__(self, code: pb.Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def status(code: pb.Code, message: str | None = None) -> pb.Status:
    """``ResponseBuilder.buildStatus(code, message)``: the code's name when there is no message."""
    return pb.Status(code=code, message=message if message is not None else pb.Code.Name(code))


OK = status(pb.OK)


def status_of(err: Exception) -> pb.Status:
    """``ResponseBuilder.buildStatus(Throwable)``."""
    if isinstance(err, StatusError):
        return status(err.code, err.message)
    if isinstance(err, RocketMQError):
        return status(_REMOTING_CODES.get(err.response_code, pb.INTERNAL_SERVER_ERROR), str(err))
    logger.error("grpc: internal server error", exc_info=err)
    return status(pb.INTERNAL_SERVER_ERROR, f"{type(err).__name__}: {err}")


@dataclass(slots=True, frozen=True)
class ClientContext:
    """``ProxyContext``: who is calling, from the request headers and the connection."""

    client_id: str
    remote_addr: str
    language: str
    version: str
    metadata: Mapping[str, str]  # every request header (the credentials are read from it)
    connection_id: int = 0  # of the HTTP/2 connection the request came on

    @classmethod
    def of(cls, call: Call) -> ClientContext:
        md = call.metadata
        return cls(
            md.get(CLIENT_ID, ""),
            call.peer,
            md.get(LANGUAGE, ""),
            md.get(CLIENT_VERSION, ""),
            md,
            call.connection_id,
        )


Req = TypeVar("Req", bound=ProtoMessage)
Resp = TypeVar("Resp", bound=ProtoMessage)


def unary(
    request_type: type[Req],
    response_type: type[Resp],
    fn: Callable[[ClientContext, Req], Resp | Awaitable[Resp]],
    check: RequestCheck | None = None,
    faults: FaultPoint | None = None,
    method: str = "",
    recorder: CallRecorder | None = None,
) -> Handler:
    """A unary handler: parse, ``check`` it, call ``fn``, answer; a refusal is the response's
    ``status``. ``faults``: the gRPC fault rules, asked (with the call's ``method`` path) before
    ``fn`` when one is active (:mod:`broker.grpc.faults`). ``recorder``: told of the answer, or
    of the refusal, with the time it took (:mod:`broker.grpc.observe`).

    A request that does not parse ends the call with INVALID_ARGUMENT (no response message)."""
    name = method.rsplit("/", 1)[-1]

    async def answer(call: Call) -> tuple[ProtoMessage, pb.Status | None]:
        """The response, and its status when it is a refusal."""
        payload = await call.receive()
        if payload is None:
            raise GrpcError(StatusCode.INTERNAL, "no request message")
        if await call.receive() is not None:
            raise GrpcError(StatusCode.INTERNAL, "more than one request message on a unary call")
        try:
            request = request_type.FromString(payload)
        except DecodeError as err:
            raise GrpcError(
                StatusCode.INVALID_ARGUMENT, f"malformed {request_type.__name__}: {err}"
            ) from None
        ctx = ClientContext.of(call)
        try:
            if check is not None:
                check(ctx, request)
            injected = None
            if faults is not None and faults.rules:
                injected = await fault_answer(faults, method, ctx.remote_addr, request, response_type)
            if injected is not None:
                return injected, None
            result = fn(ctx, request)
            return (result if isinstance(result, ProtoMessage) else await result), None
        except (StatusError, RocketMQError) as err:
            refusal = status_of(err)
            return response_type(status=refusal), refusal

    async def handle(call: Call) -> None:
        start = recorder.start() if recorder is not None else 0.0
        try:
            response, refusal = await answer(call)
        except GrpcError as err:
            if recorder is not None:
                recorder.failed(name, caller(call), err.code, err.message, start)
            raise
        if recorder is not None:
            if refusal is not None:
                recorder.refused(name, caller(call), refusal.code, refusal.message, start)
            else:
                recorder.answered(name, cast(Any, response).status.code, start)  # every v2 response has one
        await call.send(response.SerializeToString(), flush=False)

    return handle


def caller(call: Call) -> str:
    """Who a call came from, for a log line: its client id and address."""
    client_id = call.metadata.get(CLIENT_ID, "")
    return f"{client_id}@{call.peer}" if client_id else call.peer


def require_client_id(ctx: ClientContext) -> str:
    """The client id header, which the Proxy's ClientActivity requires."""
    if not ctx.client_id:
        raise StatusError(pb.CLIENT_ID_REQUIRED, "missing client id")
    return ctx.client_id
