"""Request headers of the user and ACL administration codes (3001-3010).

Mirrors ``org.apache.rocketmq.remoting.protocol.header.{Create,Update,Delete,Get}UserRequestHeader``,
``ListUsersRequestHeader``, ``{Create,Update,Delete,Get}AclRequestHeader`` and
``ListAclsRequestHeader``: every field is optional in Java (no ``@CFNotNull``); the processor
answers a blank one with Java's message.
"""

from __future__ import annotations

from dataclasses import dataclass

from codec.headers.base import CustomHeader, wire


@dataclass(slots=True)
class UserRequestHeader(CustomHeader):
    """AUTH_CREATE_USER, AUTH_UPDATE_USER, AUTH_DELETE_USER, AUTH_GET_USER."""

    username: str | None = wire("username", required=False)


@dataclass(slots=True)
class ListUsersRequestHeader(CustomHeader):
    filter: str | None = wire("filter", required=False)


@dataclass(slots=True)
class AclRequestHeader(CustomHeader):
    """AUTH_CREATE_ACL, AUTH_UPDATE_ACL, AUTH_GET_ACL."""

    subject: str | None = wire("subject", required=False)


@dataclass(slots=True)
class DeleteAclRequestHeader(CustomHeader):
    subject: str | None = wire("subject", required=False)
    policy_type: str | None = wire("policyType", required=False)
    resource: str | None = wire("resource", required=False)


@dataclass(slots=True)
class ListAclsRequestHeader(CustomHeader):
    subject_filter: str | None = wire("subjectFilter", required=False)
    resource_filter: str | None = wire("resourceFilter", required=False)
