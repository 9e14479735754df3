"""``BrokerConfig``: the broker's settings, keyed as in RocketMQ's ``broker.conf``.

Mirrors the parts of ``org.apache.rocketmq.common.BrokerConfig`` (and ``NettyServerConfig``'s
``listenPort``) that this broker implements. Store settings (``storePathRootDir``,
``flushDiskType``, ``mappedFileSizeCommitLog``, ``maxMessageSize`` …) live in the store's config;
:meth:`BrokerConfig.from_properties` keeps the keys it does not know in ``extra`` for it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from broker.followed_version import DEFAULT, FollowedVersion, followed_version
from codec.config_fields import apply_properties, to_properties

logger = logging.getLogger(__name__)

MESSAGE_DELAY_LEVEL = (
    "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"  # MessageStoreConfig default
)

# Java keys whose spelling the snake_case field names cannot reproduce.
JAVA_KEY_ALIASES = {"transactionTimeOut": "transactionTimeout", "minLiteTTl": "minLiteTtl"}


@dataclasses.dataclass(slots=True)
class BrokerConfig:
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = "broker-a"
    broker_id: int = 0  # 0 = master
    broker_ip1: str = "127.0.0.1"  # advertised address: registered, and written into records' store host
    broker_ip2: str = "127.0.0.1"
    listen_port: int = 10911
    ha_listen_port: int = 10912
    namesrv_addr: str = ""  # ';'-separated
    store_path_root_dir: str = "./data"
    broker_permission: int = 6
    default_topic_queue_nums: int = 8
    auto_create_topic_enable: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    trace_topic_enable: bool = False
    auto_create_subscription_group: bool = True
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    reject_transaction_message: bool = False
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    notify_consumer_ids_changed_enable: bool = True
    enable_property_filter: bool = False  # SQL92 subscriptions accepted (broker/filter/)
    filter_support_retry: bool = False  # SQL92 on a retry topic: judged by the original topic's filter
    lite_pull_message_enable: bool = True
    register_name_server_period: int = 30000  # ms, clamped to 10 s .. 60 s as Java does
    register_broker_timeout_mills: int = 24000
    channel_expired_timeout: int = 120000  # ms without a heartbeat before a client channel is dropped
    flush_consumer_offset_interval: int = 5000  # ms
    transaction_timeout: int = 6000  # ms before a half message is first checked
    transaction_check_max: int = 15
    transaction_check_interval: int = 30000  # ms
    message_delay_level: str = MESSAGE_DELAY_LEVEL
    max_message_size: int = 4 * 1024 * 1024  # MessageStoreConfig.maxMessageSize
    default_query_max_num: int = 32
    store_reply_message_enable: bool = True  # SEND_REPLY_MESSAGE also stores the reply
    recall_message_enable: bool = False  # RECALL_MESSAGE accepted (5.3.x; off by default, as in Java)
    allow_recall_when_broker_not_writeable: bool = True
    timer_wheel_enable: bool = True  # MessageStoreConfig: 5.x timer messages accepted
    timer_max_delay_sec: int = 3600 * 24 * 3  # MessageStoreConfig: farthest due time accepted
    timer_precision_ms: int = 1000  # MessageStoreConfig: due times are rounded down to this
    slave_read_enable: bool = False  # a master may send slow consumers to a slave (suggestWhichBrokerId)
    metrics_exporter_type: str = "DISABLE"  # MetricsExporterType: DISABLE, or PROM for the HTTP endpoint
    metrics_prom_exporter_host: str = ""  # empty: all interfaces, as Java's exporter
    metrics_prom_exporter_port: int = 5557  # BrokerConfig.metricsPromExporterPort
    max_lite_subscription_count: int = 100000  # (client, lite topic) subscriptions the broker holds
    lite_ttl_check_interval: int = 120_000  # ms between lite topic expiry rounds (LiteLifecycleManager)
    min_lite_ttl: int = 15 * 60 * 1000  # ms before a lite topic may expire (from start, its last message)
    # The RocketMQ release followed where 5.3.3 and 5.5.0 differ (broker.followed_version); no Java key.
    broker_version: str = DEFAULT
    extra: dict[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        """Build from ``broker.conf`` keys; raises ``ValueError`` for a malformed value."""
        config = cls()
        renamed = {JAVA_KEY_ALIASES.get(k, k): v for k, v in props.items()}
        config.extra = apply_properties(config, renamed)
        followed_version(config.broker_version)
        return config

    @property
    def followed(self) -> FollowedVersion:
        """The release named by ``brokerVersion``; raises ``ValueError`` for an unknown one."""
        return followed_version(self.broker_version)

    @property
    def broker_addr(self) -> str:
        """``brokerIP1:listenPort``, what clients connect to and what records name as store host."""
        return f"{self.broker_ip1}:{self.listen_port}"

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    def delay_levels_ms(self) -> list[int]:
        """Delay per level (level 1 is index 0) from ``messageDelayLevel``; raises ``ValueError``."""
        units = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
        levels = []
        for item in self.message_delay_level.split():
            number, unit = item[:-1], item[-1]
            if unit not in units or not number.isdigit():
                raise ValueError(f"messageDelayLevel: bad level {item!r}")
            levels.append(int(number) * units[unit])
        return levels

    def to_properties(self) -> dict[str, str]:
        props = to_properties(
            self,
            {
                "broker_ip1": "brokerIP1",
                "broker_ip2": "brokerIP2",
                "transaction_timeout": "transactionTimeOut",
                "min_lite_ttl": "minLiteTTl",
            },
        )
        props.pop("extra", None)
        props.update(self.extra)
        return props
