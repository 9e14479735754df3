"""Users and ACLs: the managers' rules, the merge of ACLs, listings, and what is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker.auth.bodies import acl_info_from_obj
from broker.auth.config import LOCAL_AUTHN_METADATA, AuthConfig, auth_config_of
from broker.auth.metadata import AuthError, AuthMetadata
from broker.auth.models import PolicyType, Resource, User, UserStatus, UserType
from broker.auth.service import BrokerAuth
from broker.config import BrokerConfig
from gateway.launcher import BrokerSpec, check_specs, unused_property_keys
from gateway.transport.config import ServerConfig
from store.errors import StoreError
from store.metadata import ConfigFiles


def entries(*items: tuple[str, list[str], str]) -> Any:
    return {"policies": [{"entries": [{"resource": r, "actions": a, "decision": d} for r, a, d in items]}]}


def test_users_are_created_updated_and_deleted_with_java_messages() -> None:
    meta = AuthMetadata()
    meta.create_user(User("u", "p"))
    assert meta.users["u"] == User("u", "p", UserType.NORMAL, UserStatus.ENABLE)
    with pytest.raises(AuthError, match=r"^The user is existed$"):
        meta.create_user(User("u", "q"))
    with pytest.raises(AuthError, match=r"^password can not be blank$"):
        meta.create_user(User("v", " "))
    meta.update_user(User("u", "", None, UserStatus.DISABLE))
    assert meta.users["u"].password == "p"
    assert meta.users["u"].user_status is UserStatus.DISABLE
    with pytest.raises(AuthError, match=r"^The user is not exist$"):
        meta.update_user(User("nobody", "x"))
    meta.delete_user("nobody")  # nothing to delete is no error


def test_acl_create_and_update_merge_entries_by_resource() -> None:
    meta = AuthMetadata()
    meta.create_user(User("u", "p"))
    meta.put_acl(
        "u", acl_info_from_obj(entries(("Topic:A", ["Pub"], "Allow"), ("Group:g", ["Sub"], "Allow")))[1]
    )
    meta.put_acl(
        "u", acl_info_from_obj(entries(("Topic:A", ["Sub"], "Deny"), ("Topic:B*", ["Pub"], "Allow")))[1]
    )
    acl = meta.acls["u"]
    assert [
        (e.resource.key, [a.value for a in e.actions], e.decision.value) for e in acl.policies[0].entries
    ] == [
        ("Topic:A", ["Sub"], "Deny"),
        ("Group:g", ["Sub"], "Allow"),
        ("Topic:B*", ["Pub"], "Allow"),
    ]
    listed = meta.list_acls(None, "Topic")
    assert [e.resource.key for e in listed[0].policies[0].entries] == ["Topic:A", "Topic:B*"]
    meta.delete_acl("u", None, Resource.parse("Topic:A"))
    assert [e.resource.key for e in meta.acls["u"].policies[0].entries] == ["Group:g", "Topic:B*"]
    meta.delete_acl("u", PolicyType.CUSTOM, None)
    assert "u" not in meta.acls
    with pytest.raises(AuthError, match=r"^The acl is not exist\.$"):
        meta.delete_acl("u", None, None)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (entries(("Queue:x", ["Pub"], "Allow")), "The resource is null."),
        (entries(("Topic:x", ["Nope"], "Allow")), "The actions is empty."),
        (entries(("Topic:x", ["Any"], "Allow")), "The actions can not be Any."),
        (entries(("Topic:x", ["Pub"], "Perhaps")), "The decision is null or illegal."),
        (
            {
                "policies": [
                    {
                        "entries": [
                            {"resource": "*", "actions": ["Pub"], "decision": "Allow", "sourceIps": ["1.2.3"]}
                        ]
                    }
                ]
            },
            "The source ip is invalid.",
        ),
    ],
)
def test_invalid_acls_are_refused_with_java_messages(body: Any, message: str) -> None:
    meta = AuthMetadata()
    meta.create_user(User("u", "p"))
    with pytest.raises(AuthError) as err:
        meta.put_acl("u", acl_info_from_obj(body)[1])
    assert str(err.value) == message


def test_users_and_acls_survive_a_reload_and_init_users_are_super(tmp_path: Path) -> None:
    config = BrokerConfig(store_path_root_dir=str(tmp_path))
    config.extra.update(
        {
            "authenticationEnabled": "true",
            "authenticationMetadataProvider": LOCAL_AUTHN_METADATA,
            "initAuthenticationUser": '{"username":"root","password":"secret-1"}',
            "innerClientAuthenticationCredentials": '{"accessKey":"inner","secretKey":"secret-2"}',
        }
    )
    files = ConfigFiles(str(tmp_path / "config"))
    first = BrokerAuth(config, files)
    first.load()
    first.metadata.create_user(User("u", "p"))
    first.metadata.put_acl("u", acl_info_from_obj(entries(("Topic:A", ["Pub"], "Allow")))[1])
    second = BrokerAuth(config, files)
    second.load()
    assert second.metadata.users["root"].user_type is UserType.SUPER
    assert second.metadata.users["inner"].user_type is UserType.SUPER
    assert second.metadata.users["u"] == User("u", "p", UserType.NORMAL, UserStatus.ENABLE)
    assert second.metadata.acls["u"] == first.metadata.acls["u"]


def test_auth_keys_are_known_and_off_means_no_guard(tmp_path: Path) -> None:
    keys = ["authenticationEnabled", "initAuthenticationUser", "migrateAuthFromV1Enabled", "aclCacheMaxNum"]
    assert unused_property_keys(keys, namesrv=False, broker=True) == []
    auth = BrokerAuth(BrokerConfig(store_path_root_dir=str(tmp_path)), ConfigFiles(str(tmp_path)))
    assert auth.guard is None
    config = BrokerConfig()
    config.extra["migrateAuthFromV1Enabled"] = "true"
    with pytest.raises(ValueError, match=r"plain_acl\.yml"):
        auth_config_of(config)
    assert AuthConfig().authentication_enabled is False


def test_start_up_refuses_bad_auth_settings_without_showing_secrets(tmp_path: Path) -> None:
    config = BrokerConfig(store_path_root_dir=str(tmp_path))
    config.extra["migrateAuthFromV1Enabled"] = "true"
    with pytest.raises(ValueError, match=r"^migrateAuthFromV1Enabled"):
        check_specs(None, BrokerSpec(config, ServerConfig(port=0)))
    config = BrokerConfig(store_path_root_dir=str(tmp_path))
    config.extra.update(
        {"authenticationMetadataProvider": LOCAL_AUTHN_METADATA, "initAuthenticationUser": "{s3cret-not-json"}
    )
    auth = BrokerAuth(config, ConfigFiles(str(tmp_path / "config")))
    with pytest.raises(StoreError) as err:
        auth.load()
    assert "Init authentication user error" in str(err.value)
    assert "s3cret" not in str(err.value)
