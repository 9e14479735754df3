"""``NamesrvConfig``: NameServer settings keyed as in RocketMQ's ``namesrv.conf``.

GET_NAMESRV_CONFIG reports every key a 5.3.3 NameServer reports (``NamesrvConfig`` and
``NettyServerConfig``): the values this NameServer uses, and Java's defaults (:data:`JAVA_DEFAULTS`)
for the settings it does not implement.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from codec.config_fields import apply_properties, to_properties

# Keys of a 5.3.3 NameServer's configuration that this one does not implement, with Java's defaults.
JAVA_DEFAULTS = {
    "clientRequestThreadPoolNums": "8",
    "clientRequestThreadPoolQueueCapacity": "50000",
    "clusterTest": "false",
    "configBlackList": "configBlackList;configStorePath;kvConfigPath",
    "defaultThreadPoolNums": "16",
    "defaultThreadPoolQueueCapacity": "10000",
    "deleteTopicWithBrokerRegistration": "false",
    "enableControllerInNamesrv": "false",
    "enableShutdownGracefully": "false",
    "needWaitForService": "false",
    "notifyMinBrokerIdChanged": "false",
    "productEnvName": "center",
    "serverAsyncSemaphoreValue": "64",
    "serverCallbackExecutorThreads": "0",
    "serverChannelMaxIdleTimeSeconds": "120",
    "serverNettyWorkerGroupEnable": "true",
    "serverOnewaySemaphoreValue": "256",
    "serverPooledByteBufAllocatorEnable": "true",
    "serverSelectorThreads": "3",
    "serverSocketBacklog": "1024",
    "serverSocketRcvBufSize": "0",
    "serverSocketSndBufSize": "0",
    "serverWorkerThreads": "8",
    "shutdownWaitTimeSeconds": "30",
    "supportActingMaster": "false",
    "unRegisterBrokerQueueCapacity": "3000",
    "useEpollNativeSelector": "false",
    "waitSecondsForService": "45",
    "writeBufferHighWaterMark": "0",
    "writeBufferLowWaterMark": "0",
    "listenPort": "9876",
    "bindAddress": "0.0.0.0",
    "configStorePath": "",
}


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

    def resolved_kv_config_path(self) -> str:
        """``kvConfigPath``, defaulting to ``<rocketmqHome or ~>/namesrv/kvConfig.json`` as Java."""
        return self.kv_config_path or os.path.join(
            self.rocketmq_home or os.path.expanduser("~"), "namesrv", "kvConfig.json"
        )

    def to_properties(self) -> dict[str, str]:
        """Every key Java reports: Java's defaults, overridden by this NameServer's settings."""
        props = dict(JAVA_DEFAULTS)
        props.update(to_properties(self))
        props.pop("extra", None)
        props["kvConfigPath"] = self.resolved_kv_config_path()
        props.update(self.extra)
        return props
