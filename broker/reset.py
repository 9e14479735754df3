"""Empty a running broker for the next test: what a fresh broker would show, in milliseconds.

A test tool, not a RocketMQ request. It does what the admin deletions do, for everything a client
made: every topic but the system ones is deleted with its consume queues
(``DefaultMessageStore.deleteTopics``: the queue files go, the next message of a topic of that
name is at queue offset 0 again), every group but the system ones is deleted, every consumer
offset goes, and the delay-level queues (``SCHEDULE_TOPIC_XXXX``) are emptied with their delivery
offsets, so no delayed message of a former test arrives later.

What stays: the commit log's bytes (no queue points at them any more; the store reclaims them
as it reclaims expired files) and so the key index (``QUERY_MESSAGE`` by key and a lookup by
offset message id can still find a former message), the system topics' queues other than the
delay levels (open transactions, timer-wheel messages, POP revive records), and the client
connections. Must run in the broker's own thread, between requests (the single-writer rule of
:mod:`store.message_store`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from broker.controller import BrokerController
from broker.subscription_group_manager import SYSTEM_GROUPS
from broker.topic_config_manager import SCHEDULE_TOPIC

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ResetReport:
    """What :func:`reset_broker` removed."""

    topics: int
    groups: int
    queues: int
    offsets: int

    def to_obj(self) -> dict[str, int]:
        return {"topics": self.topics, "groups": self.groups, "queues": self.queues, "offsets": self.offsets}


def reset_broker(controller: BrokerController) -> tuple[ResetReport, list[str]]:
    """Empty ``controller``'s broker as the module docstring says; returns the report and the
    names of the deleted topics (for the NameServer's route table)."""
    topics = controller.topics
    deleted = [name for name in topics.table if not topics.is_system(name)]
    topics.delete_many(deleted)
    groups = [name for name in controller.groups.table if name not in SYSTEM_GROUPS]
    for name in groups:
        controller.groups.delete(name)
    offsets = len(controller.offsets.table)
    controller.offsets.table.clear()
    controller.offsets.dirty = True
    queues = controller.store.delete_topics({*deleted, SCHEDULE_TOPIC})
    controller.schedule.offsets.clear()
    controller.schedule.dirty = True
    report = ResetReport(len(deleted), len(groups), queues, offsets)
    logger.info("broker reset: %s", report)
    return report, deleted
