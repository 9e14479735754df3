"""The broker's authentication and authorization collaborators, built once by the composition.

Mirrors what ``BrokerController`` builds from its ``AuthConfig``: the metadata managers
(``AuthenticationFactory.getMetadataManager`` / ``AuthorizationFactory.getMetadataManager``,
which create the ``initAuthenticationUser`` and ``innerClientAuthenticationCredentials`` users),
the request pipeline (:class:`broker.auth.guard.AuthGuard`, handed to the dispatcher) and the
settings :mod:`broker.app` builds the admin processor of codes 3001-3010 with. Users and ACLs live
in the store's ``config/users.json`` and ``config/acls.json``, two tables of the broker's owner of
persisted tables (:mod:`broker.config_tables`), written at once on each change."""

from __future__ import annotations

from broker.auth.config import AuthConfig, auth_config_of
from broker.auth.guard import AuthGuard, AuthSettings, Guard, build_guard
from broker.auth.metadata import ACLS_JSON, USERS_JSON, AuthMetadata
from broker.auth.signature import Signer, inner_client_signer
from broker.config import BrokerConfig
from broker.config_tables import ConfigTable, ConfigTables
from store.errors import StoreError
from store.metadata import ConfigFiles


class BrokerAuth:
    """Config, users and ACLs and the dispatcher's guard of one broker."""

    def __init__(self, config: BrokerConfig, files: ConfigFiles, tables: ConfigTables | None = None) -> None:
        """``tables``: the broker's owner of persisted tables, where users and ACLs register (one
        of their own over ``files`` when None). Raises ``ValueError`` for a malformed auth key."""
        self.config: AuthConfig = auth_config_of(config)
        self.tables = tables or ConfigTables(files)
        self.metadata = AuthMetadata(on_change=self.tables.write)
        meta = self.metadata
        self.tables.register(ConfigTable(USERS_JSON, meta.users_obj, lambda doc: meta.load(doc, None)))
        self.tables.register(ConfigTable(ACLS_JSON, meta.acls_obj, lambda doc: meta.load(None, doc)))
        self.settings = AuthSettings.of(self.config, config.broker_cluster_name)
        #: Signs what the broker sends to the NameServer (innerClientAuthenticationCredentials).
        self.inner_client_signer: Signer | None = inner_client_signer(
            self.config.inner_client_authentication_credentials
        )
        #: The check itself, which the gRPC endpoint shares (None when both checks are off).
        self.checks: AuthGuard | None = build_guard(self.settings, self.metadata)
        self.guard: Guard | None = self.checks

    def load(self) -> None:
        """Read the stored users and ACLs, then create the configured initial users if absent.
        Raises :class:`StoreError` naming the file or key that is wrong (no secret in it)."""
        self.tables.load_all([USERS_JSON, ACLS_JSON])
        if not self.settings.authentication_metadata_configured:
            return  # Java creates them through the metadata provider, which is then absent
        try:
            self.metadata.init_users(
                self.config.init_authentication_user, self.config.inner_client_authentication_credentials
            )
        except ValueError as err:
            raise StoreError(f"Init authentication user error: {err}") from err
