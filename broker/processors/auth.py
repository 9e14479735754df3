"""User and ACL administration: AUTH_CREATE_USER .. AUTH_LIST_ACL (3001-3010).

Mirrors the ``createUser`` .. ``listAcl`` methods of ``AdminBrokerProcessor`` with
``AuthenticationMetadataManagerImpl`` / ``AuthorizationMetadataManagerImpl`` behind them
(:mod:`broker.auth.metadata`). What ``mqadmin createUser`` … ``listAcl`` / ``copyUser`` /
``copyAcl`` see:

* a blank user name on create, update or get: ``INVALID_PARAMETER`` "The username is blank";
* a SUPER user created or updated by a signed non-super caller: ``SYSTEM_ERROR`` "The super user
  can only be create by super user" (update: "… update by super user"); an existing SUPER user
  updated or deleted by one: ``NO_PERMISSION`` with the update message;
* the managers' refusals: ``NO_PERMISSION`` with their message ("The user is existed", "The
  subject of User:x is not exist.", "The decision is null or illegal." …);
* no metadata provider configured: ``SYSTEM_ERROR`` "An system error occurred, please try again
  later." (Java's ``IllegalStateException`` path);
* get and list answer ``SUCCESS`` without a body when there is nothing to show.

Changes are stored at once and apply to the next request.
"""

from __future__ import annotations

import logging
from typing import Any

from broker.auth.bodies import acl_info_from_obj, acl_to_obj, encode, user_from_obj, user_to_obj
from broker.auth.metadata import AuthError, AuthMetadata
from broker.auth.models import PolicyType, Resource, User, UserType, subject_username
from broker.auth.signature import ACCESS_KEY
from codec import fastjson
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.auth import (
    AclRequestHeader,
    DeleteAclRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    UserRequestHeader,
)
from gateway.transport.dispatch import Dispatcher, RequestContext

logger = logging.getLogger(__name__)

SYSTEM_ERROR_REMARK = "An system error occurred, please try again later."
BLANK_USERNAME = "The username is blank"
ACL_EXCEPTION = "org.apache.rocketmq.auth.authorization.exception.AuthorizationException"


class AuthAdminProcessor:
    """The ten auth admin codes over one :class:`AuthMetadata` (given by the composition)."""

    def __init__(self, metadata: AuthMetadata, *, users_configured: bool, acls_configured: bool) -> None:
        self.metadata = metadata
        self.users_configured = users_configured
        self.acls_configured = acls_configured

    def register(self, dispatcher: Dispatcher) -> None:
        reg = dispatcher.register
        reg(RequestCode.AUTH_CREATE_USER, self.create_user, UserRequestHeader)
        reg(RequestCode.AUTH_UPDATE_USER, self.update_user, UserRequestHeader)
        reg(RequestCode.AUTH_DELETE_USER, self.delete_user, UserRequestHeader)
        reg(RequestCode.AUTH_GET_USER, self.get_user, UserRequestHeader)
        reg(RequestCode.AUTH_LIST_USER, self.list_user, ListUsersRequestHeader)
        reg(RequestCode.AUTH_CREATE_ACL, self.put_acl, AclRequestHeader)
        reg(RequestCode.AUTH_UPDATE_ACL, self.put_acl, AclRequestHeader)
        reg(RequestCode.AUTH_DELETE_ACL, self.delete_acl, DeleteAclRequestHeader)
        reg(RequestCode.AUTH_GET_ACL, self.get_acl, AclRequestHeader)
        reg(RequestCode.AUTH_LIST_ACL, self.list_acl, ListAclsRequestHeader)

    # -- helpers ---------------------------------------------------------------------------------

    def _ready(self, *, acls: bool = False) -> None:
        if not self.users_configured or (acls and not self.acls_configured):
            raise RocketMQError(SYSTEM_ERROR_REMARK)

    def _not_super_login(self, request: RemotingCommand) -> bool:
        """``isNotSuperUserLogin``: an unsigned request (authentication off) counts as super."""
        access_key = (request.ext_fields or {}).get(ACCESS_KEY)
        if not access_key:
            return False
        try:
            return not self.metadata.is_super_user(access_key)
        except AuthError as err:
            raise RocketMQError(f"{type(err).__name__}: {err}") from err

    @staticmethod
    def _body(request: RemotingCommand, what: str) -> Any:
        if not request.body:
            raise RocketMQError(f"The body of {what} is null")
        return fastjson.loads(request.body)

    # -- users -----------------------------------------------------------------------------------

    def _requested_user(self, request: RemotingCommand, header: UserRequestHeader, verb: str) -> User:
        """The user a create or update request carries, named by its header; raises for a blank
        name, or a super user asked for by a caller who is not one."""
        if not header.username:
            raise RocketMQError(BLANK_USERNAME, response_code=ResponseCode.INVALID_PARAMETER)
        user = user_from_obj(self._body(request, "user"))
        user.username = header.username
        if user.user_type is UserType.SUPER and self._not_super_login(request):
            raise RocketMQError(f"The super user can only be {verb} by super user")
        self._ready()
        return user

    def create_user(
        self, _ctx: RequestContext, request: RemotingCommand, header: UserRequestHeader
    ) -> RemotingCommand:
        user = self._requested_user(request, header, "create")
        self.metadata.create_user(user)
        logger.info("user %s created (%s)", user.username, (user.user_type or UserType.NORMAL).value)
        return request.make_response(ResponseCode.SUCCESS)

    def update_user(
        self, _ctx: RequestContext, request: RemotingCommand, header: UserRequestHeader
    ) -> RemotingCommand:
        user = self._requested_user(request, header, "update")
        old = self.metadata.get_user(user.username)
        if old is None:
            raise AuthError("The user is not exist")
        if old.user_type is UserType.SUPER and self._not_super_login(request):
            raise AuthError("The super user can only be update by super user")
        self.metadata.update_user(user)
        logger.info("user %s updated", user.username)
        return request.make_response(ResponseCode.SUCCESS)

    def delete_user(
        self, _ctx: RequestContext, request: RemotingCommand, header: UserRequestHeader
    ) -> RemotingCommand:
        self._ready(acls=True)
        username = header.username or ""
        if not username.strip():
            raise AuthError("username can not be blank")
        old = self.metadata.get_user(username)
        if old is not None:
            if old.user_type is UserType.SUPER and self._not_super_login(request):
                raise AuthError("The super user can only be update by super user")
            self.metadata.delete_user(username)
            logger.info("user %s deleted", username)
        return request.make_response(ResponseCode.SUCCESS)

    def get_user(
        self, _ctx: RequestContext, request: RemotingCommand, header: UserRequestHeader
    ) -> RemotingCommand:
        if not header.username or not header.username.strip():
            raise RocketMQError(BLANK_USERNAME, response_code=ResponseCode.INVALID_PARAMETER)
        self._ready()
        user = self.metadata.get_user(header.username)
        body = encode(user_to_obj(user)) if user is not None else b""
        return request.make_response(ResponseCode.SUCCESS, body=body)

    def list_user(
        self, _ctx: RequestContext, request: RemotingCommand, header: ListUsersRequestHeader
    ) -> RemotingCommand:
        self._ready()
        users = self.metadata.list_users(header.filter)
        body = encode([user_to_obj(u) for u in users]) if users else b""
        return request.make_response(ResponseCode.SUCCESS, body=body)

    # -- ACLs ------------------------------------------------------------------------------------

    def put_acl(
        self, _ctx: RequestContext, request: RemotingCommand, header: AclRequestHeader
    ) -> RemotingCommand:
        """AUTH_CREATE_ACL and AUTH_UPDATE_ACL: the same merge (``createAcl`` = ``updateAcl``)."""
        doc = self._body(request, "acl") if request.body else None
        if not isinstance(doc, dict) or not doc.get("policies"):
            raise RocketMQError(f"{ACL_EXCEPTION}: The body of acl is null")
        subject, policies = acl_info_from_obj(doc)
        self._ready(acls=True)
        username = subject_username(subject if subject is not None else header.subject)
        self.metadata.put_acl(username, policies)
        logger.info("ACL of User:%s changed", username)
        return request.make_response(ResponseCode.SUCCESS)

    def delete_acl(
        self, _ctx: RequestContext, request: RemotingCommand, header: DeleteAclRequestHeader
    ) -> RemotingCommand:
        self._ready(acls=True)
        policy_type = PolicyType.by_name(header.policy_type)
        self.metadata.delete_acl(
            subject_username(header.subject),
            policy_type if isinstance(policy_type, PolicyType) else None,
            Resource.parse(header.resource),
        )
        return request.make_response(ResponseCode.SUCCESS)

    def get_acl(
        self, _ctx: RequestContext, request: RemotingCommand, header: AclRequestHeader
    ) -> RemotingCommand:
        username = subject_username(header.subject)
        if username is None:
            raise RocketMQError("java.lang.NullPointerException")
        self._ready(acls=True)
        acl = self.metadata.get_acl(username)
        body = encode(acl_to_obj(acl)) if acl is not None else b""
        return request.make_response(ResponseCode.SUCCESS, body=body)

    def list_acl(
        self, _ctx: RequestContext, request: RemotingCommand, header: ListAclsRequestHeader
    ) -> RemotingCommand:
        self._ready(acls=True)
        acls = self.metadata.list_acls(header.subject_filter, header.resource_filter)
        body = encode([acl_to_obj(a) for a in acls]) if acls else b""
        return request.make_response(ResponseCode.SUCCESS, body=body)
