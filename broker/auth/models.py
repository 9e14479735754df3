"""The ACL 2.0 data model: users, resources, actions, policies and ACLs.

Mirrors ``org.apache.rocketmq.auth.authentication.model.User`` and the enums beside it,
``org.apache.rocketmq.auth.authorization.model`` (``Acl``, ``Policy``, ``PolicyEntry``,
``Resource``, ``Environment``) and ``org.apache.rocketmq.common.action.Action`` /
``common.resource.ResourceType``. Enum names travel as Java's ``getName()`` strings ("Super",
"enable", "Topic", "Pub", "Allow", "Custom") and are matched case-insensitively, as Java's
``getByName`` does; an unknown name reads as ``None``.

The matching rules are Java's: a resource of type ``Any`` matches everything, else the type must be
equal and the pattern decides (``ANY``, ``LITERAL`` equal names, ``PREFIXED`` ``startswith``); an
entry matches actions when any requested action is in its list or it holds ``All``; an entry with
source IPs matches only requests from one of them (IP or CIDR, :mod:`ipaddress`).
"""

from __future__ import annotations

import dataclasses
import enum
import ipaddress
from collections.abc import Iterable

RETRY_PREFIX = "%RETRY%"  # MixAll.RETRY_GROUP_TOPIC_PREFIX
DLQ_PREFIX = "%DLQ%"  # MixAll.DLQ_GROUP_TOPIC_PREFIX


class NamedEnum(enum.Enum):
    """An enum whose value is its Java ``getName()`` spelling."""

    @classmethod
    def by_name(cls, name: str | None) -> NamedEnum | None:
        """``getByName``: case-insensitive, ``None`` for a blank or unknown name."""
        if not name:
            return None
        wanted = name.strip().lower()
        for member in cls:
            if member.value.lower() == wanted:
                return member
        return None


class UserType(NamedEnum):
    SUPER = "Super"
    NORMAL = "Normal"


class UserStatus(NamedEnum):
    ENABLE = "enable"
    DISABLE = "disable"


class ResourceType(NamedEnum):
    ANY = "Any"
    CLUSTER = "Cluster"
    NAMESPACE = "Namespace"
    TOPIC = "Topic"
    GROUP = "Group"


class ResourcePattern(NamedEnum):
    ANY = "ANY"
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class Action(NamedEnum):
    UNKNOWN = "Unknown"
    ALL = "All"
    ANY = "Any"
    PUB = "Pub"
    SUB = "Sub"
    CREATE = "Create"
    UPDATE = "Update"
    DELETE = "Delete"
    GET = "Get"
    LIST = "List"


class Decision(NamedEnum):
    ALLOW = "Allow"
    DENY = "Deny"


class PolicyType(NamedEnum):
    CUSTOM = "Custom"
    DEFAULT = "Default"


@dataclasses.dataclass(slots=True)
class User:
    """A user: its name, its secret (the HMAC key, kept as given, as Java keeps it), type, status."""

    username: str
    password: str | None = None
    user_type: UserType | None = None
    user_status: UserStatus | None = None

    @property
    def subject_key(self) -> str:
        return f"User:{self.username}"


def subject_username(subject_key: str | None) -> str | None:
    """``Subject.of``: the user name of ``User:<name>`` (type matched case-insensitively), else ``None``."""
    if subject_key is None:
        return None
    kind, _, name = subject_key.partition(":")
    return name if kind.lower() == "user" else None


def is_retry_topic(name: str | None) -> bool:
    """``NamespaceUtil.isRetryTopic``."""
    return bool(name) and name.startswith(RETRY_PREFIX)  # type: ignore[union-attr]


def without_retry_and_dlq(name: str) -> str:
    """``NamespaceUtil.withOutRetryAndDLQ``."""
    for prefix in (RETRY_PREFIX, DLQ_PREFIX):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


@dataclasses.dataclass(frozen=True, slots=True)
class Resource:
    resource_type: ResourceType
    name: str | None
    pattern: ResourcePattern

    @classmethod
    def topic(cls, name: str | None) -> Resource:
        return cls(ResourceType.TOPIC, name, ResourcePattern.LITERAL)

    @classmethod
    def group(cls, name: str | None) -> Resource:
        """``Resource.ofGroup``: a retry or DLQ topic name is authorized as its group."""
        if name is not None and is_retry_topic(name):
            name = without_retry_and_dlq(name)
        return cls(ResourceType.GROUP, name, ResourcePattern.LITERAL)

    @classmethod
    def cluster(cls, name: str) -> Resource:
        return cls(ResourceType.CLUSTER, name, ResourcePattern.LITERAL)

    @classmethod
    def parse(cls, key: str | None) -> Resource | None:
        """``Resource.of(String)``: ``*``, ``Type:*``, ``Type:prefix*`` or ``Type:name``."""
        if key is None or not key.strip():
            return None
        if key == "*":
            return cls(ResourceType.ANY, None, ResourcePattern.ANY)
        kind, _, name = key.partition(":")
        resource_type = ResourceType.by_name(kind)
        if not isinstance(resource_type, ResourceType):
            return None
        if name == "*":
            return cls(resource_type, None, ResourcePattern.ANY)
        if name.endswith("*"):
            return cls(resource_type, name[: name.index("*")], ResourcePattern.PREFIXED)
        return cls(resource_type, name, ResourcePattern.LITERAL)

    @property
    def key(self) -> str:
        """``getResourceKey``."""
        if self.resource_type is ResourceType.ANY:
            return "*"
        if self.pattern is ResourcePattern.ANY:
            return f"{self.resource_type.value}:*"
        if self.pattern is ResourcePattern.PREFIXED:
            return f"{self.resource_type.value}:{self.name}*"
        return f"{self.resource_type.value}:{self.name}"

    def matches(self, other: Resource) -> bool:
        """``Resource.isMatch``: does this (an entry's) resource cover ``other`` (a request's)?"""
        if self.resource_type is ResourceType.ANY:
            return True
        if self.resource_type is not other.resource_type:
            return False
        if self.pattern is ResourcePattern.ANY:
            return True
        if self.pattern is ResourcePattern.LITERAL:
            return other.name == self.name
        return other.name is not None and self.name is not None and other.name.startswith(self.name)


def is_valid_ip_or_cidr(text: str) -> bool:
    """``IPAddressUtils.isValidIPOrCidr``."""
    try:
        if "/" in text:
            ipaddress.ip_network(text, strict=False)
        else:
            ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def ip_in_range(ip: str, allowed: str) -> bool:
    """``IPAddressUtils.isIPInRange``: ``ip`` equals ``allowed`` or lies in the CIDR ``allowed``."""
    try:
        address = ipaddress.ip_address(ip)
        if "/" in allowed:
            return address in ipaddress.ip_network(allowed, strict=False)
        return address == ipaddress.ip_address(allowed)
    except ValueError:
        return False


@dataclasses.dataclass(slots=True)
class PolicyEntry:
    resource: Resource
    actions: list[Action]
    source_ips: list[str]
    decision: Decision

    def matches(self, resource: Resource, actions: Iterable[Action], source_ip: str | None) -> bool:
        """``isMatchResource`` and ``isMatchAction`` and ``isMatchEnvironment``."""
        if not self.resource.matches(resource):
            return False
        if not self.actions:
            return False
        wanted = list(actions)
        if Action.ANY not in wanted and not (
            Action.ALL in self.actions or any(a in self.actions for a in wanted)
        ):
            return False
        if not self.source_ips:
            return True
        if not source_ip:
            return False
        return any(ip_in_range(source_ip, allowed) for allowed in self.source_ips)


@dataclasses.dataclass(slots=True)
class Policy:
    policy_type: PolicyType
    entries: list[PolicyEntry]

    def entry(self, resource: Resource) -> PolicyEntry | None:
        return next((e for e in self.entries if e.resource == resource), None)

    def update_entries(self, entries: Iterable[PolicyEntry]) -> None:
        """``Policy.updateEntry``: an entry for the same resource is replaced, others appended."""
        for new in entries:
            old = self.entry(new.resource)
            if old is None:
                self.entries.append(new)
            else:
                old.actions, old.source_ips, old.decision = new.actions, new.source_ips, new.decision


@dataclasses.dataclass(slots=True)
class Acl:
    username: str
    policies: list[Policy]

    @property
    def subject_key(self) -> str:
        return f"User:{self.username}"

    def policy(self, policy_type: PolicyType) -> Policy | None:
        return next((p for p in self.policies if p.policy_type is policy_type), None)

    def update_policies(self, policies: Iterable[Policy]) -> None:
        """``Acl.updatePolicy``: merge each policy into the one of its type, or add it."""
        for new in policies:
            old = self.policy(new.policy_type)
            if old is None:
                self.policies.append(new)
            else:
                old.update_entries(new.entries)

    def delete_entry(self, policy_type: PolicyType, resource: Resource) -> None:
        """``Acl.deletePolicy``: drop the entry, and the policy once it has no entry left."""
        policy = self.policy(policy_type)
        if policy is None:
            return
        entry = policy.entry(resource)
        if entry is not None:
            policy.entries.remove(entry)
        if not policy.entries:
            self.policies.remove(policy)
