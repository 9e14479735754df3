"""The Proxy's request pipeline on the gRPC endpoint: authentication, then authorization.

Mirrors ``GrpcMessagingApplication.addExecutor`` running ``AuthenticationPipeline`` then
``AuthorizationPipeline`` (``org.apache.rocketmq.proxy.grpc.pipeline``) on every request message
(every ``TelemetryCommand`` too) before the activity sees it, with the broker's own users, ACLs
and checks (:class:`broker.auth.guard.AuthGuard`). A refusal is answered as ``ResponseBuilder``
answers ``AuthenticationException`` / ``AuthorizationException``: the RPC succeeds at the gRPC
level and its response's ``status`` is ``UNAUTHORIZED`` (401) with Java's message.

``authenticationWhitelist`` / ``authorizationWhitelist`` name gRPC requests by the full name of
their message (``apache.rocketmq.v2.SendMessageRequest``), as the Proxy compares them.

One deliberate difference: the Proxy authorizes the user named by the ``x-mq-authorization-ak``
header, which its authentication step only sets when the client did not send it, so a client
signing as one user could be authorized as another. Here, with authentication on, the user
authorized is always the one whose signature was checked; with authentication off, the header
is used as the Proxy uses it (nothing is verified then anyway).
"""

from __future__ import annotations

from google.protobuf.message import Message as ProtoMessage

from broker.auth.grpc_contexts import AUTHORIZATION_AK, ContextError, credentials, required_permissions
from broker.auth.guard import AuthGuard, source_ip
from broker.auth.metadata import AuthError
from broker.grpc.common import ClientContext, StatusError
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb


class GrpcAuth:
    """Called with each request message; raises :class:`StatusError` when it may not proceed."""

    def __init__(self, guard: AuthGuard) -> None:
        self.guard = guard
        self.settings = guard.settings
        self.refused = 0

    def __call__(self, ctx: ClientContext, request: ProtoMessage) -> None:
        try:
            self.check(ctx, request)
        except AuthError as err:
            self.refused += 1
            raise StatusError(pb.UNAUTHORIZED, str(err)) from None
        except ContextError as err:
            # ResponseBuilder's fallback: ExceptionUtils.getErrorDetailMessage (no stack frame here).
            self.refused += 1
            raise StatusError(pb.INTERNAL_SERVER_ERROR, f"{err}. AclException") from None

    def check(self, ctx: ClientContext, request: ProtoMessage) -> None:
        """Raises :class:`AuthError` (or :class:`ContextError`) as the two pipelines do."""
        settings = self.settings
        rpc_code = request.DESCRIPTOR.full_name
        username = ctx.metadata.get(AUTHORIZATION_AK)
        if settings.authentication_enabled:
            found = credentials(ctx.metadata)
            username = found.username if found.username and found.username.strip() else None
            if rpc_code not in settings.authentication_rpc_whitelist:
                self.guard.check_signature(found.username, found.content, found.signature)
        if settings.authorization_enabled:
            needs = required_permissions(request)
            if needs and rpc_code not in settings.authorization_rpc_whitelist:
                self.guard.authorize_needs(username, needs, source_ip(ctx.remote_addr))


def grpc_auth(guard: AuthGuard | None) -> GrpcAuth | None:
    """The endpoint's check, or ``None`` when neither check is on (no cost per request)."""
    return GrpcAuth(guard) if guard is not None else None
