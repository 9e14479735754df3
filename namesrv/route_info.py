"""The NameServer's route tables (mirrors ``RouteInfoManager``).

Topics → queue data per broker name; broker names → addresses by broker id; clusters → broker
names; live brokers → last registration time and connection. Plain state, no I/O; ``now_ms`` is
passed in so expiry is testable.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from codec.bodies.register import PERM_READ, PERM_WRITE, DataVersion, TopicConfig
from codec.bodies.route import BrokerData, ClusterInfo, QueueData, TopicRouteData

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class LiveBroker:
    cluster: str
    broker_name: str
    broker_id: int
    last_update_ms: int
    data_version: DataVersion
    connection_id: int | None
    ha_server_addr: str = ""
    timeout_ms: int = 120_000


@dataclass(slots=True)
class RouteInfo:
    topic_queues: dict[str, dict[str, QueueData]] = field(default_factory=dict)
    brokers: dict[str, BrokerData] = field(default_factory=dict)
    clusters: dict[str, set[str]] = field(default_factory=dict)
    live: dict[str, LiveBroker] = field(default_factory=dict)  # by broker address
    #: Broker names taken out of the routes by a test tool: still registered and kept alive, left
    #: out of topic routes and cluster info as if they had not registered.
    withheld: set[str] = field(default_factory=set)

    def register_broker(
        self,
        cluster: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topics: dict[str, TopicConfig],
        data_version: DataVersion,
        now_ms: int,
        connection_id: int | None,
        timeout_ms: int = 120_000,
    ) -> tuple[str | None, str | None]:
        """Record a registration; returns (haServerAddr, masterAddr) for a slave, else (None, None)."""
        self.clusters.setdefault(cluster, set()).add(broker_name)
        data = self.brokers.get(broker_name)
        if data is None:
            data = self.brokers[broker_name] = BrokerData(cluster, broker_name, {})
        for bid, addr in list(data.broker_addrs.items()):  # the same address under another id
            if addr == broker_addr and bid != broker_id:
                del data.broker_addrs[bid]
        data.broker_addrs[broker_id] = broker_addr
        previous = self.live.get(broker_addr)
        if broker_id == 0 and (previous is None or previous.data_version != data_version or len(topics) >= 1):
            for topic in topics.values():
                self.topic_queues.setdefault(topic.topic_name, {})[broker_name] = QueueData(
                    broker_name,
                    topic.read_queue_nums,
                    topic.write_queue_nums,
                    topic.perm,
                    topic.topic_sys_flag,
                )
        self.live[broker_addr] = LiveBroker(
            cluster, broker_name, broker_id, now_ms, data_version, connection_id, ha_server_addr, timeout_ms
        )
        if previous is None:
            logger.info(
                "new broker registered: %s (%s, id %d, cluster %s)",
                broker_addr,
                broker_name,
                broker_id,
                cluster,
            )
        if broker_id != 0:
            master = data.broker_addrs.get(0)
            if master is not None and master in self.live:
                return self.live[master].ha_server_addr, master
        return None, None

    def unregister_broker(self, cluster: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        self.live.pop(broker_addr, None)
        data = self.brokers.get(broker_name)
        if data is not None and data.broker_addrs.get(broker_id) == broker_addr:
            del data.broker_addrs[broker_id]
        if data is not None and not data.broker_addrs:
            del self.brokers[broker_name]
            names = self.clusters.get(cluster)
            if names is not None:
                names.discard(broker_name)
                if not names:
                    del self.clusters[cluster]
            for topic in list(self.topic_queues):
                self.topic_queues[topic].pop(broker_name, None)
                if not self.topic_queues[topic]:
                    del self.topic_queues[topic]
        logger.info("broker %s (%s, id %d) unregistered", broker_addr, broker_name, broker_id)

    def expire(self, now_ms: int) -> list[str]:
        """Drop brokers whose last registration is older than their timeout; returns their addresses."""
        gone = [addr for addr, b in self.live.items() if now_ms - b.last_update_ms > b.timeout_ms]
        for addr in gone:
            b = self.live[addr]
            logger.warning("broker %s expired after %d ms without registration", addr, b.timeout_ms)
            self.unregister_broker(b.cluster, addr, b.broker_name, b.broker_id)
        return gone

    def drop_connection(self, connection_id: int) -> list[str]:
        gone = [addr for addr, b in self.live.items() if b.connection_id == connection_id]
        for addr in gone:
            b = self.live[addr]
            self.unregister_broker(b.cluster, addr, b.broker_name, b.broker_id)
        return gone

    def route(self, topic: str) -> TopicRouteData | None:
        queues = self.topic_queues.get(topic)
        if not queues:
            return None
        brokers = [
            self.brokers[name] for name in queues if name in self.brokers and name not in self.withheld
        ]
        if not brokers:
            return None
        return TopicRouteData(
            broker_datas=[BrokerData(b.cluster, b.broker_name, dict(b.broker_addrs)) for b in brokers],
            queue_datas=[q for name, q in queues.items() if name not in self.withheld],
        )

    def touch(self, broker_addr: str, now_ms: int) -> bool:
        """Refresh a broker's liveness (QUERY_DATA_VERSION, BROKER_HEARTBEAT); False if unknown."""
        live = self.live.get(broker_addr)
        if live is None:
            return False
        live.last_update_ms = now_ms
        return True

    def register_topic(self, topic: str, queues: list[QueueData]) -> None:
        """REGISTER_TOPIC_IN_NAMESRV: merge queue data of already registered brokers."""
        for queue in queues:
            if queue.broker_name in self.brokers:
                self.topic_queues.setdefault(topic, {})[queue.broker_name] = queue

    def cluster_info(self) -> ClusterInfo:
        withheld = self.withheld
        return ClusterInfo(
            broker_addr_table={n: b for n, b in self.brokers.items() if n not in withheld},
            cluster_addr_table={c: sorted(names - withheld) for c, names in self.clusters.items()},
        )

    def topics(self, cluster: str | None = None) -> list[str]:
        if cluster is None:
            return list(self.topic_queues)
        names = self.clusters.get(cluster, set())
        return [t for t, q in self.topic_queues.items() if names & set(q)]

    def delete_topic(self, topic: str, cluster: str | None = None) -> None:
        if cluster is None:
            self.topic_queues.pop(topic, None)
            return
        queues = self.topic_queues.get(topic, {})
        for name in self.clusters.get(cluster, set()):
            queues.pop(name, None)
        if not queues:
            self.topic_queues.pop(topic, None)

    def change_write_perm(self, broker_name: str, wipe: bool) -> int:
        count = 0
        for queues in self.topic_queues.values():
            queue = queues.get(broker_name)
            if queue is not None:
                queue.perm = queue.perm & ~PERM_WRITE if wipe else PERM_READ | PERM_WRITE
                count += 1
        return count
