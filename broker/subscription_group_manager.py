"""Subscription groups (subscriptionGroup.json): per-group consume settings, auto-created on use.

Mirrors ``org.apache.rocketmq.broker.subscription.SubscriptionGroupManager`` and
``SubscriptionGroupConfig`` (its field defaults are Java's).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.config import BrokerConfig
from broker.topic_config_manager import is_valid_group
from codec.bodies.base import JsonBody, jfield
from codec.bodies.register import DataVersion

logger = logging.getLogger(__name__)

SYSTEM_GROUPS = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_RMQ_SYS_TRANS",
)


@dataclass(slots=True)
class SubscriptionGroupConfig(JsonBody):
    group_name: str = ""
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    group_retry_policy: dict[str, Any] = jfield(factory=lambda: {"type": "CUSTOMIZED"})
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    group_sys_flag: int = 0
    consume_timeout_minute: int = 15
    attributes: dict[str, str] = jfield(factory=dict)


def alter_group_attributes(current: dict[str, str], requested: dict[str, str]) -> dict[str, str]:
    """The attributes a group has after an update that requests ``requested``: the merge of
    ``AttributeUtil.alterCurrentAttributes`` (``updateSubscriptionGroupConfig``), ``+key`` added
    or changed and ``-key`` removed, stored under the plain key (so GET_SUBSCRIPTIONGROUP_CONFIG
    answers ``lite.bind.topic`` as a 5.5 Proxy reads it). Unlike Java, a key without a sign is
    kept as given and an unknown key is not refused."""
    result = {key.lstrip("+"): value for key, value in current.items()}
    for key, value in requested.items():
        if key.startswith("+") and len(key) > 1:
            result[key[1:]] = value
        elif key.startswith("-") and len(key) > 1:
            result.pop(key[1:], None)
        else:
            result[key] = value
    return result


class SubscriptionGroupManager:
    def __init__(self, config: BrokerConfig, on_change: Callable[[], None] | None = None) -> None:
        self.config = config
        self.table: dict[str, SubscriptionGroupConfig] = {
            g: SubscriptionGroupConfig(g) for g in SYSTEM_GROUPS
        }
        self.forbidden: dict[str, dict[str, int]] = {}
        self.data_version = DataVersion(timestamp=int(time.time() * 1000))
        self.on_change = on_change

    def find(self, group: str, *, create: bool = True) -> SubscriptionGroupConfig | None:
        """The group's config, auto-created when allowed and the name is valid
        (``autoCreateSubscriptionGroup``, as ``SubscriptionGroupManager.findSubscriptionGroupConfig``)."""
        found = self.table.get(group)
        if found is not None or not create:
            return found
        if not (self.config.auto_create_subscription_group or group in SYSTEM_GROUPS) or not is_valid_group(
            group
        ):
            return None
        found = SubscriptionGroupConfig(group)
        self.table[group] = found
        logger.info("auto-created subscription group %s", group)
        self._changed()
        return found

    def update(self, group: SubscriptionGroupConfig) -> None:
        self.table[group.group_name] = group
        self._changed()

    def delete(self, group: str) -> bool:
        removed = self.table.pop(group, None) is not None
        if removed:
            self._changed()
        return removed

    def _changed(self) -> None:
        v = self.data_version
        self.data_version = DataVersion(v.state_version, int(time.time() * 1000), v.counter + 1)
        if self.on_change is not None:
            self.on_change()

    def to_obj(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_obj(),
            "forbiddenTable": self.forbidden,
            "subscriptionGroupTable": {name: g.to_obj() for name, g in self.table.items()},
        }

    def load_obj(self, obj: Any) -> None:
        if not isinstance(obj, dict):
            return
        for name, raw in (obj.get("subscriptionGroupTable") or {}).items():
            self.table[str(name)] = SubscriptionGroupConfig.from_obj(raw)
        forbidden = obj.get("forbiddenTable")
        if isinstance(forbidden, dict):
            self.forbidden = {str(g): {str(t): int(v) for t, v in m.items()} for g, m in forbidden.items()}
        if isinstance(obj.get("dataVersion"), dict):
            self.data_version = DataVersion.from_obj(obj["dataVersion"])
