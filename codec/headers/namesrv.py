"""Headers of the NameServer requests, mirroring ``org.apache.rocketmq.remoting.protocol.header.namesrv``."""

from __future__ import annotations

from dataclasses import dataclass

from codec.headers.base import CustomHeader, wire


@dataclass(slots=True)
class RegisterBrokerRequestHeader(CustomHeader):
    broker_name: str = wire("brokerName")
    broker_addr: str = wire("brokerAddr")
    cluster_name: str = wire("clusterName")
    ha_server_addr: str = wire("haServerAddr")
    broker_id: int = wire("brokerId")
    heartbeat_timeout_millis: int | None = wire("heartbeatTimeoutMillis", required=False)
    enable_acting_master: bool | None = wire("enableActingMaster", required=False)  # absent: 4.x
    compressed: bool = wire("compressed", required=False, default=False)
    body_crc32: int = wire("bodyCrc32", required=False, default=0, int32=True)


@dataclass(slots=True)
class RegisterBrokerResponseHeader(CustomHeader):
    ha_server_addr: str | None = wire("haServerAddr", required=False)
    master_addr: str | None = wire("masterAddr", required=False)


@dataclass(slots=True)
class UnregisterBrokerRequestHeader(CustomHeader):
    broker_name: str = wire("brokerName")
    broker_addr: str = wire("brokerAddr")
    cluster_name: str = wire("clusterName")
    broker_id: int = wire("brokerId")


@dataclass(slots=True)
class BrokerHeartbeatRequestHeader(CustomHeader):
    cluster_name: str = wire("clusterName")
    broker_addr: str = wire("brokerAddr")
    broker_name: str = wire("brokerName")
    broker_id: int | None = wire("brokerId", required=False)
    epoch: int | None = wire("epoch", required=False, int32=True)
    max_offset: int | None = wire("maxOffset", required=False)
    confirm_offset: int | None = wire("confirmOffset", required=False)
    heartbeat_timeout_mills: int | None = wire("heartbeatTimeoutMills", required=False)
    election_priority: int | None = wire("electionPriority", required=False, int32=True)


@dataclass(slots=True)
class GetRouteInfoRequestHeader(CustomHeader):
    topic: str = wire("topic")
    accept_standard_json_only: bool | None = wire("acceptStandardJsonOnly", required=False)


@dataclass(slots=True)
class QueryDataVersionRequestHeader(CustomHeader):
    broker_name: str = wire("brokerName")
    broker_addr: str = wire("brokerAddr")
    cluster_name: str = wire("clusterName")
    broker_id: int = wire("brokerId")


@dataclass(slots=True)
class QueryDataVersionResponseHeader(CustomHeader):
    changed: bool = wire("changed")


@dataclass(slots=True)
class PutKVConfigRequestHeader(CustomHeader):
    namespace: str = wire("namespace")
    key: str = wire("key")
    value: str = wire("value")


@dataclass(slots=True)
class KVConfigKeyRequestHeader(CustomHeader):
    """GET_KV_CONFIG and DELETE_KV_CONFIG (``GetKVConfigRequestHeader``, ``DeleteKVConfigRequestHeader``)."""

    namespace: str = wire("namespace")
    key: str = wire("key")


@dataclass(slots=True)
class GetKVConfigResponseHeader(CustomHeader):
    value: str | None = wire("value", required=False)


@dataclass(slots=True)
class GetKVListByNamespaceRequestHeader(CustomHeader):
    namespace: str = wire("namespace")


@dataclass(slots=True)
class BrokerNameRequestHeader(CustomHeader):
    """WIPE_WRITE_PERM_OF_BROKER and ADD_WRITE_PERM_OF_BROKER requests."""

    broker_name: str = wire("brokerName")


@dataclass(slots=True)
class WipeWritePermOfBrokerResponseHeader(CustomHeader):
    wipe_topic_count: int = wire("wipeTopicCount", int32=True)


@dataclass(slots=True)
class AddWritePermOfBrokerResponseHeader(CustomHeader):
    add_topic_count: int = wire("addTopicCount", int32=True)


@dataclass(slots=True)
class DeleteTopicFromNamesrvRequestHeader(CustomHeader):
    topic: str = wire("topic")
    cluster_name: str | None = wire("clusterName", required=False)


@dataclass(slots=True)
class RegisterTopicRequestHeader(CustomHeader):
    topic: str = wire("topic")


@dataclass(slots=True)
class GetTopicsByClusterRequestHeader(CustomHeader):
    cluster: str = wire("cluster")


@dataclass(slots=True)
class GetBrokerMemberGroupRequestHeader(CustomHeader):
    cluster_name: str = wire("clusterName")
    broker_name: str = wire("brokerName")
