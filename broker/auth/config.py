"""``AuthConfig``: the authentication and authorization keys of ``broker.conf``.

Mirrors ``org.apache.rocketmq.auth.config.AuthConfig``, which ``BrokerStartup`` fills from the
same properties as the broker's config (``MixAll.properties2Object``). As with the store's keys,
:class:`broker.config.BrokerConfig` keeps them in ``extra`` and :func:`auth_config_of` reads them
from there, so ``GET_BROKER_CONFIG`` reports what the file gave, as Java's ``Configuration`` does.

The providers and strategies are class names in Java; this broker has one of each (the local
metadata providers and the stateless strategies). A blank metadata provider means "none", as in
Java: with authentication or authorization on, every checked request is then refused with Java's
"… is not configured" message. Cache keys are accepted and have no effect (reads are from memory).
"""

from __future__ import annotations

import dataclasses
import json
import logging

from broker.config import BrokerConfig
from codec.config_fields import apply_properties

logger = logging.getLogger(__name__)

LOCAL_AUTHN_METADATA = "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider"
LOCAL_AUTHZ_METADATA = "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider"


def acl_conf(username: str, password: str) -> dict[str, str]:
    """The broker keys that turn authentication and authorization on with the local metadata
    providers and ``username`` as the super user made at start (``initAuthenticationUser``), the
    same for our broker and the Java one."""
    return {
        "authenticationEnabled": "true",
        "authorizationEnabled": "true",
        "authenticationMetadataProvider": LOCAL_AUTHN_METADATA,
        "authorizationMetadataProvider": LOCAL_AUTHZ_METADATA,
        "initAuthenticationUser": json.dumps({"username": username, "password": password}),
    }


@dataclasses.dataclass(slots=True)
class AuthConfig:
    authentication_enabled: bool = False
    authentication_provider: str = ""  # blank: DefaultAuthenticationProvider
    authentication_metadata_provider: str = ""  # blank: none (see module docstring)
    authentication_strategy: str = ""  # blank: StatelessAuthenticationStrategy
    authentication_whitelist: str = ""  # comma-separated request codes that skip authentication
    init_authentication_user: str = ""  # {"username":…,"password":…}: a SUPER user made at start-up
    inner_client_authentication_credentials: str = ""  # {"accessKey":…,"secretKey":…}: SUPER too
    authorization_enabled: bool = False
    authorization_provider: str = ""
    authorization_metadata_provider: str = ""
    authorization_strategy: str = ""
    authorization_whitelist: str = ""
    migrate_auth_from_v1_enabled: bool = False  # plain_acl.yml import: not implemented, refused
    user_cache_max_num: int = 1000
    user_cache_expired_second: int = 600
    user_cache_refresh_second: int = 60
    acl_cache_max_num: int = 1000
    acl_cache_expired_second: int = 600
    acl_cache_refresh_second: int = 60
    stateful_authentication_cache_max_num: int = 10000
    stateful_authentication_cache_expired_second: int = 60
    stateful_authorization_cache_max_num: int = 10000
    stateful_authorization_cache_expired_second: int = 60


def auth_config_of(config: BrokerConfig) -> AuthConfig:
    """The auth keys among ``config.extra``; raises ``ValueError`` for a malformed value or for
    ``migrateAuthFromV1Enabled=true`` (ACL 1.0 files are not read)."""
    auth = AuthConfig()
    apply_properties(auth, config.extra)
    if auth.migrate_auth_from_v1_enabled:
        raise ValueError("migrateAuthFromV1Enabled: importing ACL 1.0 plain_acl.yml is not supported")
    for key, value, local in (
        ("authenticationMetadataProvider", auth.authentication_metadata_provider, LOCAL_AUTHN_METADATA),
        ("authorizationMetadataProvider", auth.authorization_metadata_provider, LOCAL_AUTHZ_METADATA),
    ):
        if value.strip() and value.strip() != local:
            logger.warning("%s=%s: this broker uses its local provider (%s)", key, value.strip(), local)
    return auth
