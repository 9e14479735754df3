"""Users and ACLs kept by the broker, with the rules of Java's metadata managers.

Mirrors ``LocalAuthenticationMetadataProvider`` / ``LocalAuthorizationMetadataProvider`` (the
store) and ``AuthenticationMetadataManagerImpl`` / ``AuthorizationMetadataManagerImpl`` (the rules
and their messages). Every change is written at once through the ``on_change`` callback the
composition gives (``config/users.json`` / ``config/acls.json``, atomically, as the broker's
other config files), so a change applies to the next request and survives a restart.

Refusals raise :class:`AuthError` (``NO_PERMISSION``, Java's ``AuthenticationException`` /
``AuthorizationException``) with Java's message. No message ever contains a password.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from broker.auth.bodies import ParsedPolicy, acl_from_stored, acl_to_obj, user_from_obj, user_to_obj
from broker.auth.models import (
    Acl,
    Action,
    Policy,
    PolicyEntry,
    PolicyType,
    Resource,
    User,
    UserStatus,
    UserType,
    is_valid_ip_or_cidr,
)
from codec.errors import RocketMQError

USERS_JSON = "users.json"
ACLS_JSON = "acls.json"
_NO_PERMISSION = 16  # ResponseCode.NO_PERMISSION

#: Called with ``USERS_JSON`` or ``ACLS_JSON`` after a change; writes that file or raises.
Changed = Callable[[str], None]


class AuthError(RocketMQError):
    """Authentication or authorization refused; the remoting answer is ``NO_PERMISSION``."""

    response_code = _NO_PERMISSION


class AuthMetadata:
    """Users by name and ACLs by user name; sorted listings, as RocksDB iterates keys."""

    def __init__(self, on_change: Changed | None = None) -> None:
        self.users: dict[str, User] = {}
        self.acls: dict[str, Acl] = {}
        self._on_change = on_change

    # -- loading and saving ----------------------------------------------------------------------

    def load(self, users_doc: Any | None, acls_doc: Any | None) -> None:
        """Load the stored documents; raises ``BodyError`` / ``ValueError`` when malformed."""
        if users_doc is not None:
            self.users = {}
            for obj in users_doc.get("users", []):
                user = user_from_obj(obj)
                self.users[user.username] = user
        if acls_doc is not None:
            self.acls = {}
            for obj in acls_doc.get("acls", []):
                acl = acl_from_stored(obj)
                self.acls[acl.username] = acl

    def users_obj(self) -> dict[str, Any]:
        """``users.json``'s document: the users sorted by name."""
        return {"users": [user_to_obj(self.users[name]) for name in sorted(self.users)]}

    def acls_obj(self) -> dict[str, Any]:
        """``acls.json``'s document: the ACLs sorted by user name."""
        return {"acls": [acl_to_obj(self.acls[name]) for name in sorted(self.acls)]}

    def _save_users(self) -> None:
        if self._on_change is not None:
            self._on_change(USERS_JSON)

    def _save_acls(self) -> None:
        if self._on_change is not None:
            self._on_change(ACLS_JSON)

    def init_users(self, init_user: str, inner_credentials: str) -> None:
        """``initUser``: the ``initAuthenticationUser`` and ``innerClientAuthenticationCredentials``
        users are created as SUPER when absent. Raises ``ValueError`` for malformed JSON."""
        if init_user.strip():
            doc = _json_object(init_user, "initAuthenticationUser")
            self._ensure_super(str(doc.get("username") or ""), doc.get("password"))
        if inner_credentials.strip():
            doc = _json_object(inner_credentials, "innerClientAuthenticationCredentials")
            self._ensure_super(str(doc.get("accessKey") or ""), doc.get("secretKey"))

    def _ensure_super(self, username: str, password: Any) -> None:
        if not username.strip() or not isinstance(password, str) or not password.strip():
            raise ValueError("the initial user needs a name and a password")
        if username not in self.users:
            self.users[username] = User(username, password, UserType.SUPER, UserStatus.ENABLE)
            self._save_users()

    # -- users -----------------------------------------------------------------------------------

    def get_user(self, username: str) -> User | None:
        return self.users.get(username)

    def is_super_user(self, username: str) -> bool:
        user = self.users.get(username)
        if user is None:
            raise AuthError(f"User:{username} is not found")
        return user.user_type is UserType.SUPER

    def create_user(self, user: User) -> None:
        if not user.username.strip():
            raise AuthError("username can not be blank")
        if not user.password or not user.password.strip():
            raise AuthError("password can not be blank")
        if user.username in self.users:
            raise AuthError("The user is existed")
        self.users[user.username] = User(
            user.username,
            user.password,
            user.user_type or UserType.NORMAL,
            user.user_status or UserStatus.ENABLE,
        )
        self._save_users()

    def update_user(self, user: User) -> None:
        """Only the given fields change (a blank password keeps the old one)."""
        if not user.username.strip():
            raise AuthError("username can not be blank")
        old = self.users.get(user.username)
        if old is None:
            raise AuthError("The user is not exist")
        if user.password and user.password.strip():
            old.password = user.password
        if user.user_type is not None:
            old.user_type = user.user_type
        if user.user_status is not None:
            old.user_status = user.user_status
        self._save_users()

    def delete_user(self, username: str) -> None:
        """Deletes the user and its ACL; nothing to delete is no error."""
        if not username.strip():
            raise AuthError("username can not be blank")
        if self.users.pop(username, None) is not None:
            self._save_users()
        if self.acls.pop(username, None) is not None:
            self._save_acls()

    def list_users(self, name_filter: str | None) -> list[User]:
        return [self.users[n] for n in sorted(self.users) if not name_filter or name_filter in n]

    # -- ACLs ------------------------------------------------------------------------------------

    def get_acl(self, username: str) -> Acl | None:
        if username not in self.users:
            raise AuthError("The subject is not exist.")
        return self.acls.get(username)

    def put_acl(self, username: str | None, parsed: list[ParsedPolicy]) -> None:
        """``createAcl`` and ``updateAcl`` (the same merge): validate, then merge each policy into
        the subject's policy of its type, replacing entries of the same resource."""
        if username is None:
            raise RocketMQError("An system error occurred, please try again later.")
        policies = validated_policies(parsed)
        if username not in self.users:
            raise AuthError(f"The subject of User:{username} is not exist.")
        old = self.acls.get(username)
        if old is None:
            self.acls[username] = Acl(username, policies)
        else:
            old.update_policies(policies)
        self._save_acls()

    def delete_acl(
        self, username: str | None, policy_type: PolicyType | None, resource: Resource | None
    ) -> None:
        """Without ``resource`` the whole ACL goes; with it only that entry of the policy (Custom
        unless said), and the ACL once it has no policy left."""
        if username is None:
            raise AuthError("The subject is null.")
        if username not in self.users:
            raise AuthError("The subject is not exist.")
        acl = self.acls.get(username)
        if acl is None:
            raise AuthError("The acl is not exist.")
        if resource is not None:
            acl.delete_entry(policy_type or PolicyType.CUSTOM, resource)
        if resource is None or not acl.policies:
            del self.acls[username]
        self._save_acls()

    def list_acls(self, subject_filter: str | None, resource_filter: str | None) -> list[Acl]:
        """``listAcl``: ACLs whose subject key contains ``subject_filter``; with a resource
        filter not found in the subject key, only the entries whose resource key contains it."""
        result = []
        for name in sorted(f"User:{n}" for n in self.acls):
            if subject_filter and subject_filter not in name:
                continue
            acl = self.acls[name[len("User:") :]]
            policies = []
            for policy in acl.policies:
                entries = policy.entries
                if resource_filter and resource_filter not in name:
                    entries = [e for e in entries if resource_filter in e.resource.key]
                if entries:
                    policies.append(Policy(policy.policy_type, entries))
            if policies:
                result.append(Acl(acl.username, policies))
        return result


def validated_policies(parsed: list[ParsedPolicy]) -> list[Policy]:
    """``AuthorizationMetadataManagerImpl.validate`` and ``initAcl``; raises :class:`AuthError`."""
    if not parsed:
        raise AuthError("The policies is empty.")
    policies = []
    for policy in parsed:
        if not policy.entries:
            raise AuthError("The policy entries is empty.")
        entries = []
        for e in policy.entries:
            if e.resource is None:
                raise AuthError("The resource is null.")
            if not e.actions:
                raise AuthError("The actions is empty.")
            if Action.ANY in e.actions:
                raise AuthError("The actions can not be Any.")
            for ip in e.source_ips:
                if not ip.strip():
                    raise AuthError("The source ip is empty.")
                if not is_valid_ip_or_cidr(ip):
                    raise AuthError("The source ip is invalid.")
            if e.decision is None:
                raise AuthError("The decision is null or illegal.")
            entries.append(PolicyEntry(e.resource, e.actions, e.source_ips, e.decision))
        policies.append(Policy(policy.policy_type or PolicyType.CUSTOM, entries))
    return policies


def _json_object(text: str, key: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{key} is not a JSON object: {err.msg}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{key} is not a JSON object")
    return doc
