"""The broker's topics: system topics, auto-creation, retry/DLQ topics, persistence (topics.json).

Mirrors ``org.apache.rocketmq.broker.topic.TopicConfigManager`` and ``TopicValidator``.
Every change bumps the :class:`DataVersion` and calls ``on_change`` with the changed topics, so
the broker can persist ``topics.json`` and send an incremental registration to the NameServers.

Every topic that reaches the table from outside (an admin request, ``topics.json``) passes
:func:`validate_topic_config` first: a name ``TopicValidator`` accepts, queue counts within
``0..MAX_QUEUE_NUMS`` and a perm ``PermName.isValid`` accepts. Java's ``updateAndCreateTopic``
checks only the name and takes any ``int`` queue count, but every request that walks a topic's
queues (stats, consume stats, registration) then does work in proportion to it; the bound keeps one
request from taking the broker down. A ``topics.json`` entry that fails the check is left out with
an ERROR line instead of stopping start-up.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from broker.config import BrokerConfig
from broker.lite import LITE_TOPIC_PREFIX, is_lite_topic, split_lmq_name
from broker.topic_attributes import unsupported_attributes
from codec.bodies.register import PERM_INHERIT, PERM_READ, PERM_WRITE, DataVersion, TopicConfig
from codec.errors import BodyError, RocketMQError

logger = logging.getLogger(__name__)

_LITE_QUEUE_CACHE = 65536  # LMQ configs kept at most; a full cache starts again
DEFAULT_TOPIC = "TBW102"  # TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
BENCHMARK_TOPIC = "BenchmarkTest"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
ROCKSDB_OFFSET_TOPIC = "CHECKPOINT_TOPIC"
TIMER_TOPIC = "rmq_sys_wheel_timer"  # TimerMessageStore.TIMER_TOPIC
REVIVE_QUEUE_NUM = 8  # BrokerConfig.reviveQueueNum

#: ``TopicValidator.SYSTEM_TOPIC_SET`` as its static block fills it; the broker adds the topics it
#: creates at start (``TopicConfigManager.init`` calls ``addSystemTopic`` for each).
STATIC_SYSTEM_TOPICS = frozenset(
    {
        DEFAULT_TOPIC,
        SCHEDULE_TOPIC,
        BENCHMARK_TOPIC,
        TRANS_HALF_TOPIC,
        TRACE_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
        ROCKSDB_OFFSET_TOPIC,
    }
)

#: Topics a producer may not send to (SendMessageProcessor / TopicValidator.isNotAllowedSendTopic).
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)

_VALID_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")
TOPIC_MAX_LENGTH = 127
RETRY_OR_DLQ_TOPIC_MAX_LENGTH = 255
GROUP_MAX_LENGTH = 120
#: Most read or write queues a topic may have here. Java has no limit (any int); 1024 is the
#: largest count the Java broker itself gives a topic (``BenchmarkTest``), 128 times mqadmin's default 8.
MAX_QUEUE_NUMS = 1024
PERM_PRIORITY = 8  # PermName.PERM_PRIORITY: PermName.isValid(perm) is 0 <= perm < PERM_PRIORITY


class TopicValidationError(RocketMQError):
    response_code = 29  # ResponseCode.INVALID_PARAMETER


def validate_topic(topic: str) -> None:
    """Raise :class:`TopicValidationError` for a name Java's ``TopicValidator`` refuses."""
    if not topic or not topic.strip():
        raise TopicValidationError("The specified topic is blank.")
    if not _VALID_NAME.match(topic):
        raise TopicValidationError(
            f"The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        )
    limit = (
        RETRY_OR_DLQ_TOPIC_MAX_LENGTH
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))
        else TOPIC_MAX_LENGTH
    )
    if len(topic) > limit:
        raise TopicValidationError(f"The specified topic is longer than topic max length {limit}.")


def validate_topic_config(topic: TopicConfig) -> None:
    """Raise :class:`TopicValidationError` unless ``topic`` may enter the table (module docstring)."""
    validate_topic(topic.topic_name)
    for key, count in (("readQueueNums", topic.read_queue_nums), ("writeQueueNums", topic.write_queue_nums)):
        if not isinstance(count, int) or not 0 <= count <= MAX_QUEUE_NUMS:
            raise TopicValidationError(
                f"The {key} {count!r} of topic[{topic.topic_name}] is out of range 0..{MAX_QUEUE_NUMS}."
            )
    if not isinstance(topic.perm, int) or not 0 <= topic.perm < PERM_PRIORITY:
        raise TopicValidationError(f"The perm {topic.perm!r} of topic[{topic.topic_name}] is invalid.")
    if not isinstance(topic.topic_sys_flag, int) or not -(2**31) <= topic.topic_sys_flag < 2**31:
        raise TopicValidationError(
            f"The topicSysFlag {topic.topic_sys_flag!r} of topic[{topic.topic_name}] is not an int."
        )


def is_valid_group(group: str) -> bool:
    return bool(group) and len(group) <= GROUP_MAX_LENGTH and bool(_VALID_NAME.match(group))


def validate_group(group: str) -> None:
    """Raise :class:`TopicValidationError` (INVALID_PARAMETER) for a group name an admin request
    may not create (:func:`is_valid_group`)."""
    if not is_valid_group(group):
        raise TopicValidationError(f"invalid group name {group!r}")


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def _now_ms() -> int:
    return int(time.time() * 1000)


class TopicConfigManager:
    """The topic table; see the module docstring."""

    def __init__(
        self, config: BrokerConfig, on_change: Callable[[list[TopicConfig]], None] | None = None
    ) -> None:
        self.config = config
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion(timestamp=_now_ms())
        self.on_change = on_change
        self.system_topics: set[str] = set(STATIC_SYSTEM_TOPICS)
        self._lite_queues: dict[str, TopicConfig] = {}
        # brokerVersion is read at start only (broker.processors.broker_status), so this is fixed.
        self._not_allowed_send = NOT_ALLOWED_SEND_TOPICS | set(config.followed.extra_system_topics)
        self._init_system_topics()

    def _init_system_topics(self) -> None:
        """``TopicConfigManager.init``: every topic the 5.3.3 broker creates at start, with its
        queue counts and perm, each also added to the system topic set; under ``brokerVersion``
        5.5.0 also that release's two RocksDB transaction topics (:mod:`broker.followed_version`)."""
        c = self.config
        rw = PERM_READ | PERM_WRITE
        system = [
            TopicConfig(SELF_TEST_TOPIC, 1, 1, rw),
            TopicConfig(BENCHMARK_TOPIC, 1024, 1024, rw),
            TopicConfig(c.broker_cluster_name, 16, 16, PERM_INHERIT | (rw if c.cluster_topic_enable else 0)),
            TopicConfig(c.broker_name, 1, 1, PERM_INHERIT | (rw if c.broker_topic_enable else 0)),
            TopicConfig(OFFSET_MOVED_EVENT, 1, 1, rw),
            TopicConfig(SCHEDULE_TOPIC, 18, 18, rw),
            TopicConfig(f"{c.broker_cluster_name}_REPLY_TOPIC", 1, 1, rw),
            TopicConfig(TRANS_HALF_TOPIC, 1, 1, rw),
            TopicConfig(TRANS_OP_HALF_TOPIC, 1, 1, rw),
            TopicConfig(f"rmq_sys_REVIVE_LOG_{c.broker_cluster_name}", REVIVE_QUEUE_NUM, REVIVE_QUEUE_NUM),
            TopicConfig(f"rmq_sys_SYNC_BROKER_MEMBER_{c.broker_name}", 1, 1, PERM_INHERIT),
        ]
        system += [TopicConfig(name, 1, 1, rw) for name in c.followed.extra_system_topics]
        if c.timer_wheel_enable:
            system.append(TopicConfig(TIMER_TOPIC, 1, 1, rw))
        if c.auto_create_topic_enable:
            n = c.default_topic_queue_nums
            system.append(TopicConfig(DEFAULT_TOPIC, n, n, PERM_INHERIT | rw))
        if c.trace_topic_enable:
            system.append(TopicConfig(TRACE_TOPIC, 1, 1, rw))
        for topic in system:
            self.table[topic.topic_name] = topic
            self.system_topics.add(topic.topic_name)

    def is_not_allowed_send(self, topic: str) -> bool:
        """``TopicValidator.isNotAllowedSendTopic`` of the followed release."""
        return topic in self._not_allowed_send

    def is_system(self, topic: str) -> bool:
        """``TopicValidator.isSystemTopic`` with the topics this broker created at start."""
        return topic in self.system_topics or topic.startswith(SYSTEM_TOPIC_PREFIX)

    def refuse_system(self, topic: str) -> None:
        """Raise :class:`TopicValidationError` (INVALID_PARAMETER) for a system topic, with the
        remark ``AdminBrokerProcessor`` gives when an admin request would create or delete one."""
        if self.is_system(topic):
            raise TopicValidationError(f"The topic[{topic}] is conflict with system topic.")

    # -- persistence -----------------------------------------------------------------------------

    def to_obj(self) -> dict[str, Any]:
        """The topics.json document (``TopicConfigSerializeWrapper``)."""
        return {
            "dataVersion": self.data_version.to_obj(),
            "topicConfigTable": {name: t.to_obj() for name, t in self.table.items()},
        }

    def load_obj(self, obj: Any) -> None:
        """Merge a topics.json document over the system topics.

        An entry that does not parse or fails :func:`validate_topic_config` is left out with an
        ERROR line, so one bad entry cannot keep the broker from starting.
        """
        if not isinstance(obj, dict):
            return
        for name, raw in (obj.get("topicConfigTable") or {}).items():
            try:
                topic = TopicConfig.from_obj(raw)
                validate_topic_config(topic)
            except (BodyError, TopicValidationError) as err:
                logger.error("topics.json: topic %s left out: %s", name, err)
                continue
            unsupported = unsupported_attributes(topic.attributes)
            if unsupported:
                logger.error(
                    "topics.json: topic %s has %s, which this broker does not implement: kept as "
                    "written, served with the simple consume queue and time-based deletion",
                    name,
                    ", ".join(unsupported),
                )
            self.table[str(name)] = topic
        if isinstance(obj.get("dataVersion"), dict):
            self.data_version = DataVersion.from_obj(obj["dataVersion"])
        if not self.config.auto_create_topic_enable and DEFAULT_TOPIC in self.table:
            self.table[DEFAULT_TOPIC].perm &= ~PERM_INHERIT

    # -- queries ---------------------------------------------------------------------------------

    def select(self, topic: str) -> TopicConfig | None:
        """The topic's config; for the LMQ queue of a lite topic (:mod:`broker.lite`) under a
        LITE parent topic, a one-queue read-write config of its own, never in the table (so never
        registered with a NameServer), as the 5.5.0 broker keeps LMQ queues out of its table."""
        found = self.table.get(topic)
        if found is None and topic.startswith(LITE_TOPIC_PREFIX):
            return self._lite_queue(topic)
        return found

    def _lite_queue(self, lmq_name: str) -> TopicConfig | None:
        names = split_lmq_name(lmq_name)
        parent = self.table.get(names[0]) if names is not None else None
        if parent is None or not is_lite_topic(parent.attributes):
            return None
        config = self._lite_queues.get(lmq_name)
        if config is None:
            if len(self._lite_queues) >= _LITE_QUEUE_CACHE:
                self._lite_queues.clear()
            config = self._lite_queues[lmq_name] = TopicConfig(lmq_name, 1, 1, PERM_READ | PERM_WRITE)
        return config

    def is_order_topic(self, topic: str) -> bool:
        config = self.table.get(topic)
        return bool(config and config.order)

    # -- changes ---------------------------------------------------------------------------------

    def _changed(self, topics: Iterable[TopicConfig]) -> None:
        self.data_version = DataVersion(
            self.data_version.state_version, _now_ms(), self.data_version.counter + 1
        )
        if self.on_change is not None:
            self.on_change(list(topics))

    def update(self, topic: TopicConfig) -> None:
        """Create or replace a topic (admin UPDATE_AND_CREATE_TOPIC); raises
        :class:`TopicValidationError` (INVALID_PARAMETER) for a config that
        :func:`validate_topic_config` refuses."""
        validate_topic_config(topic)
        self.table[topic.topic_name] = topic
        logger.info("topic config updated: %s", topic)
        self._changed([topic])

    def delete(self, topic: str) -> bool:
        removed = self.table.pop(topic, None)
        if removed is not None:
            logger.info("topic deleted: %s", topic)
            self._changed([])
        return removed is not None

    def delete_many(self, topics: Iterable[str]) -> int:
        """Delete ``topics`` with one change notification; returns how many there were."""
        removed = [topic for topic in topics if self.table.pop(topic, None) is not None]
        if removed:
            logger.info("topics deleted: %d", len(removed))
            self._changed([])
        return len(removed)

    def create_in_send(
        self, topic: str, default_topic: str, queue_nums: int, topic_sys_flag: int
    ) -> TopicConfig | None:
        """Auto-create ``topic`` from ``default_topic`` (``createTopicInSendMessageMethod``).

        Only when the template exists and carries the INHERIT bit; queues =
        min(requested, template write queues), perm = template perm without INHERIT.
        """
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        template = self.table.get(default_topic)
        if template is None or not template.perm & PERM_INHERIT:
            return None
        if default_topic == DEFAULT_TOPIC and not self.config.auto_create_topic_enable:
            return None
        queues = max(1, min(queue_nums, template.write_queue_nums))
        created = TopicConfig(
            topic,
            queues,
            queues,
            template.perm & ~PERM_INHERIT,
            template.topic_filter_type,
            topic_sys_flag,
        )
        self.table[topic] = created
        logger.info("auto-created topic %s from %s: %s", topic, default_topic, created)
        self._changed([created])
        return created

    def create_if_absent(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0, order: bool = False
    ) -> TopicConfig:
        """Create a broker-owned topic (retry, DLQ, ...) if missing.

        Mirrors ``createTopicInSendMessageBackMethod``.
        """
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        created = TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=topic_sys_flag, order=order)
        self.table[topic] = created
        logger.info("created topic %s", created)
        self._changed([created])
        return created

    def statistics(self) -> dict[str, int]:
        return {"topics": len(self.table), "data_version": self.data_version.counter}
