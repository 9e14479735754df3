"""NameServer bodies: routes, cluster info, topic lists and KV tables.

Mirrors ``TopicRouteData``, ``BrokerData``, ``QueueData``, ``ClusterInfo``, ``TopicList`` and
``KVTable`` of ``org.apache.rocketmq.remoting.protocol``. ``brokerAddrs`` is a
``Map<Long, String>``: written with quoted keys, read in either form (fastjson writes integer
keys unquoted; see :mod:`codec.fastjson`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codec.bodies.base import JsonBody, jfield

MASTER_ID = 0  # MixAll.MASTER_ID


@dataclass(slots=True)
class QueueData(JsonBody):
    broker_name: str = ""
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = 0


@dataclass(slots=True)
class BrokerData(JsonBody):
    cluster: str = ""
    broker_name: str = ""
    broker_addrs: dict[int, str] = jfield(factory=dict)
    zone_name: str | None = None
    enable_acting_master: bool = False

    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)


@dataclass(slots=True)
class TopicRouteData(JsonBody):
    broker_datas: list[BrokerData] = jfield(factory=list)
    queue_datas: list[QueueData] = jfield(factory=list)
    filter_server_table: dict[str, list[str]] = jfield(factory=dict)
    order_topic_conf: str | None = None
    topic_queue_mapping_by_broker: dict[str, Any] | None = None


@dataclass(slots=True)
class ClusterInfo(JsonBody):
    broker_addr_table: dict[str, BrokerData] = jfield(factory=dict)
    cluster_addr_table: dict[str, list[str]] = jfield(factory=dict)


@dataclass(slots=True)
class TopicList(JsonBody):
    topic_list: list[str] = jfield(factory=list)
    broker_addr: str | None = None


@dataclass(slots=True)
class KVTable(JsonBody):
    table: dict[str, str] = field(default_factory=dict)
