"""The check every remoting request passes before its handler: authentication, then authorization.

Mirrors the broker's request pipeline (``BrokerController.initialRequestPipeline``:
``AuthenticationPipeline`` then ``AuthorizationPipeline``) with the stateless strategies and the
default providers of ``org.apache.rocketmq.auth``:

* authentication (``DefaultAuthenticationHandler``): the request's ``AccessKey`` names an enabled
  user whose secret signs the request (:mod:`broker.auth.signature`);
* authorization (``UserAuthorizationHandler``, ``AclAuthorizationHandler``): for each resource the
  request needs (:mod:`broker.auth.contexts`), a SUPER user passes; otherwise the user's CUSTOM
  entries that match, or only if none does its DEFAULT ones, are ordered as Java orders them
  (:func:`first_entry`) and the first decides.

A refusal raises :class:`AuthError`: the dispatcher answers ``NO_PERMISSION`` with Java's message.
Request codes listed in ``authenticationWhitelist`` / ``authorizationWhitelist`` skip that step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from broker.auth.config import AuthConfig
from broker.auth.contexts import Need, required_permissions
from broker.auth.metadata import AuthError, AuthMetadata
from broker.auth.models import (
    Action,
    Decision,
    PolicyEntry,
    PolicyType,
    Resource,
    ResourcePattern,
    ResourceType,
    UserStatus,
    UserType,
)
from broker.auth.signature import ACCESS_KEY, SIGNATURE, fields_content, signature_matches
from codec.command import RemotingCommand
from codec.errors import CodecError
from gateway.transport.dispatch import RequestContext

NO_AUTHN_PROVIDER = "The authenticationMetadataProvider is not configured"
NO_AUTHZ_PROVIDER = "The authorizationMetadataProvider is not configured"
AUTHZ_FAILED = "Authorization failed. Please verify your access rights and try again."


def _codes(text: str) -> frozenset[int]:
    """A comma-separated whitelist of decimal request codes (Java compares the strings; a code is
    always written in decimal, so comparing numbers is the same)."""
    return frozenset(
        int(item) for item in (part.strip() for part in text.split(",")) if item.lstrip("-").isdigit()
    )


def _names(text: str) -> frozenset[str]:
    """The whitelist's items as strings (``StringUtils.split`` then ``trim``)."""
    return frozenset(item for item in (part.strip() for part in text.split(",")) if item)


@dataclasses.dataclass(frozen=True, slots=True)
class AuthSettings:
    """What the check needs of :class:`AuthConfig`, parsed once."""

    authentication_enabled: bool = False
    authorization_enabled: bool = False
    authentication_metadata_configured: bool = False
    authorization_metadata_configured: bool = False
    authentication_whitelist: frozenset[int] = frozenset()
    authorization_whitelist: frozenset[int] = frozenset()
    # The same keys read as gRPC rpc codes: a request message's full name
    # ("apache.rocketmq.v2.SendMessageRequest"), which is what the Proxy compares.
    authentication_rpc_whitelist: frozenset[str] = frozenset()
    authorization_rpc_whitelist: frozenset[str] = frozenset()
    cluster_name: str = "DefaultCluster"

    @classmethod
    def of(cls, config: AuthConfig, cluster_name: str) -> AuthSettings:
        return cls(
            authentication_enabled=config.authentication_enabled,
            authorization_enabled=config.authorization_enabled,
            authentication_metadata_configured=bool(config.authentication_metadata_provider.strip()),
            authorization_metadata_configured=bool(config.authorization_metadata_provider.strip()),
            authentication_whitelist=_codes(config.authentication_whitelist),
            authorization_whitelist=_codes(config.authorization_whitelist),
            authentication_rpc_whitelist=_names(config.authentication_whitelist),
            authorization_rpc_whitelist=_names(config.authorization_whitelist),
            cluster_name=cluster_name,
        )

    @property
    def enabled(self) -> bool:
        return self.authentication_enabled or self.authorization_enabled


def source_ip(remote_addr: str) -> str:
    """The remote address without its port (``substringBeforeLast(addr, ":")``), brackets dropped."""
    host = remote_addr.rsplit(":", 1)[0] if ":" in remote_addr else remote_addr
    return host.strip("[]")


def _compare(e1: PolicyEntry, e2: PolicyEntry) -> int:
    """``AclAuthorizationHandler.comparePolicyEntries``, as written (see :func:`first_entry`)."""
    r1, r2 = e1.resource, e2.resource
    result = 0
    if r1.resource_type is not r2.resource_type:
        if r1.resource_type is ResourceType.ANY:
            result = 1
        if r2.resource_type is ResourceType.ANY:
            result = -1
    elif r1.pattern is r2.pattern:
        if r1.pattern is ResourcePattern.PREFIXED:
            n1, n2 = len(r1.name or ""), len(r2.name or "")
            result = (n1 > n2) - (n1 < n2)
    elif r1.pattern in (ResourcePattern.LITERAL, ResourcePattern.PREFIXED):
        result = -1
    if result:
        return result
    if e1.decision is Decision.DENY:
        return 1
    return -1 if e2.decision is Decision.DENY else 0


def first_entry(entries: Sequence[PolicyEntry]) -> PolicyEntry:
    """The entry Java's ``List.sort`` puts first with that comparator.

    The comparator is not a consistent order (entries of different patterns always compare
    "first argument first"), so the result depends on the sorting algorithm: this is TimSort's
    path for fewer than 32 elements (a run counted from the start, then binary insertion), which
    is every real ACL. Larger lists use Python's sort, also a TimSort, with the same comparator.
    """
    items = list(entries)
    n = len(items)
    if n < 2:
        return items[0]
    if n >= 32:
        import functools

        return sorted(items, key=functools.cmp_to_key(_compare))[0]
    run = 1
    if _compare(items[1], items[0]) < 0:
        run = 2
        while run < n and _compare(items[run], items[run - 1]) < 0:
            run += 1
        items[:run] = reversed(items[:run])
    else:
        run = 2
        while run < n and _compare(items[run], items[run - 1]) >= 0:
            run += 1
    for start in range(run, n):
        pivot = items[start]
        left, right = 0, start
        while left < right:
            mid = (left + right) >> 1
            if _compare(pivot, items[mid]) < 0:
                right = mid
            else:
                left = mid + 1
        items[left + 1 : start + 1] = items[left:start]
        items[left] = pivot
    return items[0]


class AuthGuard:
    """The request pipeline's check, called by the dispatcher before each handler."""

    def __init__(self, settings: AuthSettings, metadata: AuthMetadata) -> None:
        self.settings = settings
        self.metadata = metadata
        self.refused = 0

    def __call__(self, ctx: RequestContext, request: RemotingCommand) -> None:
        """Raises :class:`AuthError` when the request may not be processed."""
        try:
            if (
                self.settings.authentication_enabled
                and request.code not in self.settings.authentication_whitelist
            ):
                self.authenticate(request)
            if (
                self.settings.authorization_enabled
                and request.code not in self.settings.authorization_whitelist
            ):
                self.authorize(request, source_ip(ctx.connection.remote_addr))
        except AuthError:
            self.refused += 1
            raise

    def authenticate(self, request: RemotingCommand) -> None:
        """``DefaultAuthenticationHandler`` over the remoting context (``AccessKey``, ``Signature``)."""
        fields = request.ext_fields or {}
        self.check_signature(
            fields.get(ACCESS_KEY),
            fields_content(fields, request.version),
            fields.get(SIGNATURE),
            request.body,
        )

    def check_signature(
        self, username: str | None, content: bytes, signature: str | None, body: bytes | None = None
    ) -> None:
        """``DefaultAuthenticationHandler``: ``username`` names an enabled user whose secret signs
        ``content`` + ``body`` as ``signature`` (Base64); the remoting and gRPC contexts share it."""
        if not self.settings.authentication_metadata_configured:
            raise AuthError(NO_AUTHN_PROVIDER)
        if not username:
            raise AuthError("username cannot be null.")
        user = self.metadata.get_user(username)
        if user is None:
            raise AuthError(f"User:{username} is not found.")
        if user.user_status is UserStatus.DISABLE:
            raise AuthError(f"User:{username} is disabled.")
        if not signature_matches(content, user.password or "", signature, body):
            raise AuthError("check signature failed.")

    def authorize(self, request: RemotingCommand, ip: str) -> None:
        """``DefaultAuthorizationProvider`` over every resource the request needs."""
        fields = request.ext_fields or {}
        try:
            needs = required_permissions(request.code, fields, request.body, self.settings.cluster_name)
        except CodecError as err:
            raise AuthError("parse authorization context error.") from err
        self.authorize_needs(fields.get(ACCESS_KEY), needs, ip)

    def authorize_needs(self, username: str | None, needs: Sequence[Need], ip: str) -> None:
        """Each need in turn, the first refusal raised (``AuthorizationEvaluator.evaluate``)."""
        for need in needs:
            self._authorize_one(username, need, ip)

    def _authorize_one(self, username: str | None, need: Need, ip: str) -> None:
        if username is None:
            raise AuthError(AUTHZ_FAILED)
        if not self.settings.authentication_metadata_configured:
            raise AuthError(NO_AUTHN_PROVIDER)
        user = self.metadata.get_user(username)
        if user is None:
            raise AuthError(f"User:{username} not found.")
        if user.user_type is UserType.SUPER:
            return
        if not self.settings.authorization_metadata_configured:
            raise AuthError(NO_AUTHZ_PROVIDER)
        resource, actions = need
        entry = self._matching_entry(username, resource, actions, ip)
        if entry is None:
            raise AuthError(self._denial(username, resource, ip, "no matched policies."))
        if entry.decision is Decision.DENY:
            raise AuthError(self._denial(username, resource, ip, "the decision is deny."))

    def _matching_entry(
        self, username: str, resource: Resource, actions: tuple[Action, ...], ip: str
    ) -> PolicyEntry | None:
        acl = self.metadata.acls.get(username)
        if acl is None:
            return None
        for policy_type in (PolicyType.CUSTOM, PolicyType.DEFAULT):
            policy = acl.policy(policy_type)
            if policy is None:
                continue
            matched = [e for e in policy.entries if e.matches(resource, actions, ip)]
            if matched:
                return first_entry(matched)
        return None

    @staticmethod
    def _denial(username: str, resource: Resource, ip: str, detail: str) -> str:
        return f"User:{username} has no permission to access {resource.key} from {ip}, {detail}"


Guard = Callable[[RequestContext, RemotingCommand], None]


def build_guard(settings: AuthSettings, metadata: AuthMetadata) -> AuthGuard | None:
    """The dispatcher's guard, or ``None`` when neither check is enabled (no cost per request)."""
    return AuthGuard(settings, metadata) if settings.enabled else None
