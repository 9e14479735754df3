"""``NamesrvConfig``: NameServer settings keyed as in RocketMQ's ``namesrv.conf``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from codec.config_fields import apply_properties, to_properties


@dataclasses.dataclass(slots=True)
class NamesrvConfig:
    rocketmq_home: str = ""
    kv_config_path: str = ""  # default: <home>/namesrv/kvConfig.json, resolved by the app
    order_message_enable: bool = False
    scan_not_active_broker_interval: int = 5000  # ms
    broker_channel_expired_time: int = 120_000  # ms without a registration before a broker is dropped
    enable_all_topic_list: bool = True
    enable_topic_list: bool = True
    return_order_topic_config_to_broker: bool = True
    extra: dict[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> NamesrvConfig:
        config = cls()
        config.extra = apply_properties(config, props)
        return config

    def to_properties(self) -> dict[str, str]:
        props = to_properties(self)
        props.pop("extra", None)
        props.update(self.extra)
        return props
