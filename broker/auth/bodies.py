"""``UserInfo`` and ``AclInfo``: the JSON of the admin codes 3001-3010 and of the stored files.

Mirrors ``org.apache.rocketmq.remoting.protocol.body.UserInfo`` / ``AclInfo`` and the broker's
``auth.converter.UserConverter`` / ``AclConverter``. Enum fields are Java's ``getName()``
strings; reading is lenient as fastjson is (unknown action names are dropped, an unknown decision
or type reads as ``None`` and is refused later by the metadata rules with Java's message).
A body of the wrong shape raises :class:`codec.errors.BodyError`.

The broker keeps users and ACLs in these same shapes (``config/users.json``, ``config/acls.json``):
RocketMQ's own RocksDB stores are internal and no client reads them.
"""

from __future__ import annotations

from typing import Any

from broker.auth.models import (
    Acl,
    Action,
    Decision,
    Policy,
    PolicyEntry,
    PolicyType,
    Resource,
    User,
    UserStatus,
    UserType,
    subject_username,
)
from codec import fastjson
from codec.errors import BodyError


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BodyError(f"{what}: expected a JSON object")
    return value


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return str(value).lower() if isinstance(value, bool) else str(value)
    raise BodyError("expected a string")


def _texts(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BodyError("expected a JSON array")
    return [t for t in (_text(v) for v in value) if t is not None]


def user_from_obj(obj: Any) -> User:
    """``UserConverter.convertUser(UserInfo)``."""
    doc = _object(obj, "UserInfo")
    user_type = UserType.by_name(_text(doc.get("userType")))
    status = UserStatus.by_name(_text(doc.get("userStatus")))
    return User(
        username=_text(doc.get("username")) or "",
        password=_text(doc.get("password")),
        user_type=user_type if isinstance(user_type, UserType) else None,
        user_status=status if isinstance(status, UserStatus) else None,
    )


def user_to_obj(user: User) -> dict[str, Any]:
    """``UserConverter.convertUser(User)``, fields in fastjson2's (alphabetical) order."""
    obj: dict[str, Any] = {}
    if user.password is not None:
        obj["password"] = user.password
    if user.user_status is not None:
        obj["userStatus"] = user.user_status.value
    if user.user_type is not None:
        obj["userType"] = user.user_type.value
    obj["username"] = user.username
    return obj


class ParsedEntry:
    """An ``AclInfo.PolicyEntryInfo`` as read: resource, decision may be ``None`` (refused later)."""

    __slots__ = ("actions", "decision", "resource", "source_ips")

    def __init__(
        self,
        resource: Resource | None,
        actions: list[Action],
        source_ips: list[str],
        decision: Decision | None,
    ) -> None:
        self.resource = resource
        self.actions = actions
        self.source_ips = source_ips
        self.decision = decision


class ParsedPolicy:
    __slots__ = ("entries", "policy_type")

    def __init__(self, policy_type: PolicyType | None, entries: list[ParsedEntry]) -> None:
        self.policy_type = policy_type
        self.entries = entries


def acl_info_from_obj(obj: Any) -> tuple[str | None, list[ParsedPolicy]]:
    """``AclConverter.convertAcl(AclInfo)``: the subject key and the policies, unvalidated.
    Policies without entries are skipped, as Java skips them."""
    doc = _object(obj, "AclInfo")
    policies: list[ParsedPolicy] = []
    raw_policies = doc.get("policies")
    if raw_policies is not None and not isinstance(raw_policies, list):
        raise BodyError("AclInfo.policies: expected a JSON array")
    for raw in raw_policies or []:
        policy = _object(raw, "PolicyInfo")
        raw_entries = policy.get("entries")
        if not raw_entries:
            continue
        if not isinstance(raw_entries, list):
            raise BodyError("PolicyInfo.entries: expected a JSON array")
        entries = []
        for raw_entry in raw_entries:
            entry = _object(raw_entry, "PolicyEntryInfo")
            actions = [a for a in (Action.by_name(n) for n in _texts(entry.get("actions"))) if a is not None]
            decision = Decision.by_name(_text(entry.get("decision")))
            entries.append(
                ParsedEntry(
                    Resource.parse(_text(entry.get("resource"))),
                    [a for a in actions if isinstance(a, Action)],
                    _texts(entry.get("sourceIps")),
                    decision if isinstance(decision, Decision) else None,
                )
            )
        policy_type = PolicyType.by_name(_text(policy.get("policyType")))
        policies.append(ParsedPolicy(policy_type if isinstance(policy_type, PolicyType) else None, entries))
    return _text(doc.get("subject")), policies


def acl_to_obj(acl: Acl) -> dict[str, Any]:
    """``AclConverter.convertAcl(Acl)`` in fastjson2's field order."""
    policies = []
    for policy in acl.policies:
        entries = []
        for entry in policy.entries:
            item: dict[str, Any] = {}
            if entry.actions:
                item["actions"] = [a.value for a in entry.actions]
            item["decision"] = entry.decision.value
            item["resource"] = entry.resource.key
            if entry.source_ips:
                item["sourceIps"] = list(entry.source_ips)
            entries.append(item)
        policies.append({"entries": entries, "policyType": policy.policy_type.value})
    return {"policies": policies, "subject": acl.subject_key}


def acl_from_stored(obj: Any) -> Acl:
    """An ACL as this broker stored it (always valid when written); raises ``BodyError``."""
    subject, parsed = acl_info_from_obj(obj)
    username = subject_username(subject)
    if username is None:
        raise BodyError(f"stored ACL has no user subject: {subject!r}")
    policies = []
    for policy in parsed:
        entries = []
        for e in policy.entries:
            if e.resource is None or e.decision is None:
                raise BodyError(f"stored ACL of {subject} has an entry without resource or decision")
            entries.append(PolicyEntry(e.resource, e.actions, e.source_ips, e.decision))
        policies.append(Policy(policy.policy_type or PolicyType.CUSTOM, entries))
    return Acl(username, policies)


def encode(obj: Any) -> bytes:
    return fastjson.dumps(obj)
