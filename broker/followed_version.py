"""``brokerVersion``: the Apache RocketMQ release whose behaviour the broker follows where releases differ.

The broker implements 5.3.3 and the 5.4/5.5 features (priority, lite topics) on top of it. Where
the real 5.3.3 and 5.5.0 brokers answer the same request differently, ``brokerVersion`` in
``broker.conf`` chooses which one ours answers like: ``5.3.3`` (the default) or ``5.5.0``.
:class:`FollowedVersion` holds every such difference in one place, each read from the 5.5.0
sources:

* the ``MQVersion`` ordinal the broker reports: ``MQVersion.CURRENT_VERSION`` (``V5_3_3``,
  ``V5_5_0``) stamped on every remoting command the broker writes (``RemotingCommand``'s
  ``configVersion``: answers, registrations, requests to clients) and reported as
  ``brokerVersionDesc`` by GET_BROKER_RUNTIME_INFO (what ``clusterList`` prints); 5.3.3's
  ``AdminBrokerProcessor.prepareRuntimeInfo`` also puts the ordinal as ``brokerVersion``, 5.5.0's
  no longer does;
* the system topics created at start: 5.5.0's ``TopicConfigManager.init`` also creates
  ``TopicValidator.RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC`` and ``RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC``
  (one queue each, perm 6), which its ``TopicValidator`` also lists as not allowed to send to;
* the ``message.type`` values a refusal lists: ``TopicMessageType.topicMessageTypeSet`` (5.5.0
  adds ``PRIORITY`` and ``LITE``), printed in ``HashSet`` order by ``EnumAttribute.verify``;
* the keys GET_BROKER_CONFIG reports: 5.5.0's ``BrokerConfig`` and ``MessageStoreConfig`` have
  76 more fields, and ``BrokerConfig.transactionMetricFlushInterval`` defaults to 10000 ms (3000
  in 5.3.3) (``processors/java_broker_config_55.properties``: those keys with 5.5.0's defaults;
  no key of 5.3.3 is gone);
* the order a normal POP reads a topic's queues in: ``PopMessageProcessor.popMsgFromTopic``
  starts at its random ``randomQ`` and walks upward in 5.3.3; in 5.5.0, with
  ``BrokerConfig.priorityOrderAsc`` (default true), it walks ``readQueueNums - 1 - i + randomQ``,
  downward from ``randomQ - 1``.

The Proxy reports no version of its own over gRPC (``UA.version`` is the client's), so nothing
there follows the setting. The NameServer of ``rmq-gateway standalone`` is no broker: its frames
keep ``V5_3_3`` whatever the setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codec.java_properties import parse_properties
from codec.versions import V5_3_3, version_ordinal

DEFAULT = "5.3.3"
ROCKSDB_TRANS_HALF_TOPIC = "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC"  # TopicValidator (5.5.0)
ROCKSDB_TRANS_OP_HALF_TOPIC = "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC"  # TopicValidator (5.5.0)
#: ``TopicMessageType.topicMessageTypeSet()`` of 5.3.3, in its ``Sets.newHashSet`` argument order.
MESSAGE_TYPES_533 = ("UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED")
#: The same set in 5.5.0.
MESSAGE_TYPES_550 = ("UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "PRIORITY", "LITE", "MIXED")
CONFIG_55_FILE = Path(__file__).with_name("processors") / "java_broker_config_55.properties"


@dataclass(frozen=True, slots=True)
class FollowedVersion:
    """What one release does where 5.3.3 and 5.5.0 differ; see the module docstring."""

    name: str  # the brokerVersion value, e.g. "5.5.0"
    mq_version: int  # MQVersion.CURRENT_VERSION of that release (an ordinal)
    extra_system_topics: tuple[str, ...]  # created at start beyond 5.3.3's
    message_types: tuple[str, ...]  # TopicMessageType.topicMessageTypeSet, argument order
    pop_queues_descending: bool  # a normal POP walks the queues downward from its random start
    runtime_info_has_version: bool  # GET_BROKER_RUNTIME_INFO has the key brokerVersion (the ordinal)
    extra_config_file: Path | None  # GET_BROKER_CONFIG keys (and defaults) that differ from 5.3.3's

    def extra_config(self) -> dict[str, str]:
        """The GET_BROKER_CONFIG keys this release has beyond 5.3.3's, or with another default."""
        if self.extra_config_file is None:
            return {}
        return parse_properties(self.extra_config_file.read_text(encoding="utf-8"))

    def pop_queue_order(self, read_queue_nums: int, random_q: int) -> list[int]:
        """The queues a normal POP of a whole topic reads, in order, from its random ``random_q``
        (``PopMessageProcessor.popMsgFromTopic``)."""
        n = read_queue_nums
        if self.pop_queues_descending:
            return [(n - 1 - i + random_q) % n for i in range(n)]
        return [(random_q + i) % n for i in range(n)]


VERSIONS = {
    "5.3.3": FollowedVersion("5.3.3", V5_3_3, (), MESSAGE_TYPES_533, False, True, None),
    "5.5.0": FollowedVersion(
        "5.5.0",
        version_ordinal("V5_5_0"),
        (ROCKSDB_TRANS_HALF_TOPIC, ROCKSDB_TRANS_OP_HALF_TOPIC),
        MESSAGE_TYPES_550,
        True,
        False,
        CONFIG_55_FILE,
    ),
}


def followed_version(name: str) -> FollowedVersion:
    """The release named by ``brokerVersion``; raises ``ValueError`` for any other value."""
    try:
        return VERSIONS[name.strip()]
    except KeyError:
        known = ", ".join(VERSIONS)
        raise ValueError(f"brokerVersion: {name!r} is not one of {known}") from None
