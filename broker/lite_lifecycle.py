"""The life of lite topics: where a new subscription starts reading, and when a lite topic expires.

Mirrors org.apache.rocketmq.broker.lite.AbstractLiteLifecycleManager and LiteLifecycleManager
(5.5.0, the file consume queue flavour), and ``LiteSubscriptionRegistryImpl.resetOffset``:

* **Expiry.** Every ``liteTtlCheckInterval`` (120 s) the broker walks its LMQ queues of lite
  topics (``%LMQ%$P$t``) and deletes those of a LITE parent topic whose ``lite.topic.expiration``
  (minutes; unset, -1 or 0: never) has passed since the queue's last message, and at least
  ``minLiteTTl`` (15 min) has: the queue and its files, every bound group's committed offset and
  orderly-consumption record of it, and every client's subscription to it
  (``cleanSubscription``, without telling the clients). A later message of that lite topic
  creates its queue afresh, from offset 0. Nothing expires in the broker's first ``minLiteTTl``
  (a restarted broker does not know when clients last used their lite topics): until then the
  check comes back every 20 s. A queue without messages (next offset 0) is deleted only after it
  was found so more than 5 times in a row (``MAX_INVALID_SCAN_COUNT``).
* **OffsetOption** of a PARTIAL_ADD: for each lite topic added, the group's committed offset moves
  to the option's target (:meth:`broker.lite.OffsetOption.target`) and its orderly-consumption
  record of the queue goes, as ``assignResetOffset`` and ``consumerOrderInfoManager.remove`` do.
* **Exclusive groups** (``lite.sub.model=Exclusive``): a PARTIAL_ADD takes each lite topic from
  the group's other clients (``excludeClientByLmqName``: the registry does it, and tells each
  client once through its listeners, over remoting or over Telemetry), resetting the group's
  offset there to 0 when ``lite.sub.reset.offset.exclusive`` is true; and with
  ``lite.sub.reset.offset.unsubscribe`` a PARTIAL_REMOVE resets it to 0 (``removeTopicGroup``).

No Trio here: :meth:`LiteLifecycleManager.run_once` does one round and says when the next is due;
the broker's app wiring sleeps in between. The clock is the broker's ``now_ms``.
"""

from __future__ import annotations

import logging

from broker.controller import BrokerController
from broker.lite import (
    LITE_SUB_RESET_OFFSET_EXCLUSIVE,
    LITE_SUB_RESET_OFFSET_UNSUBSCRIBE,
    OFFSET_POLICY,
    POLICY_MIN,
    LiteSubscriptionRegistry,
    OffsetOption,
    group_flag,
    is_lite_sub_exclusive,
    is_lite_topic,
    lite_bind_topic,
    lite_topic_expiration,
    split_lmq_name,
)
from broker.pop.order_info import ConsumerOrderInfoManager
from broker.pop.state import PopState
from codec.extra_info import polling_key

logger = logging.getLogger(__name__)

MAX_INVALID_SCAN_COUNT = 5  # AbstractLiteLifecycleManager: rounds an empty LMQ queue survives
STARTUP_RECHECK_MS = 20 * 1000  # AbstractLiteLifecycleManager.run: the wait within minLiteTTl of start
MINUTE_MS = 60 * 1000
TO_MIN = OffsetOption(OFFSET_POLICY, POLICY_MIN)  # the reset of exclusive and unsubscribe modes


class LiteLifecycleManager:
    """Expiry of lite topics and the offset option of new lite subscriptions (module docstring).

    ``orders`` and ``pop_state`` are the consume service's orderly-consumption records and POP
    state (None where nothing pops: there is nothing of them to forget then)."""

    def __init__(
        self,
        broker: BrokerController,
        registry: LiteSubscriptionRegistry,
        orders: ConsumerOrderInfoManager | None = None,
        pop_state: PopState | None = None,
    ) -> None:
        self.broker = broker
        self.registry = registry
        self.orders = orders
        self.pop_state = pop_state
        self.started_ms = broker.now_ms()  # BrokerController.getShouldStartTime
        self.invalid_scan_counts: dict[str, int] = {}
        self.expired_total = 0

    # -- queues ----------------------------------------------------------------------------------

    def max_offset(self, lmq_name: str) -> int:
        """``getMaxOffsetInQueue``: the queue's next offset, 0 when there is no such queue."""
        return max(self.broker.store.get_max_offset_in_queue(lmq_name, 0), 0)

    def _lite_queues(self) -> list[tuple[str, str]]:
        """(parent topic, LMQ name) of every lite topic's queue in the store."""
        found = []
        for cq in self.broker.store.queues:
            names = split_lmq_name(cq.topic)
            if names is not None and cq.queue_id == 0:
                found.append((names[0], cq.topic))
        return found

    def _ttl_minutes(self) -> dict[str, int]:
        """``LiteMetadataUtil.getTopicTtlMap``: each LITE topic's ``lite.topic.expiration``."""
        return {
            name: lite_topic_expiration(config.attributes)
            for name, config in self.broker.topics.table.items()
            if is_lite_topic(config.attributes)
        }

    def _bound_groups(self) -> dict[str, set[str]]:
        """``LiteMetadataUtil.getSubscriberGroupMap``: the lite groups by their bound topic."""
        found: dict[str, set[str]] = {}
        for name, group in self.broker.groups.table.items():
            bound = lite_bind_topic(group.attributes)
            if bound is not None:
                found.setdefault(bound, set()).add(name)
        return found

    # -- expiry ----------------------------------------------------------------------------------

    def is_expired(self, parent: str, lmq_name: str, max_offset: int, ttl_minutes: dict[str, int]) -> bool:
        """``isLiteTopicExpired`` at the broker's now."""
        if max_offset <= 0:
            count = self.invalid_scan_counts.get(lmq_name, 0) + 1
            logger.warning("lite queue %s without messages, scan %d", lmq_name, count)
            if count > MAX_INVALID_SCAN_COUNT:
                self.invalid_scan_counts.pop(lmq_name, None)
                return True
            self.invalid_scan_counts[lmq_name] = count
            return False
        self.invalid_scan_counts.pop(lmq_name, None)
        latest = self.broker.store.get_message_store_timestamp(lmq_name, 0, max_offset - 1)
        inactive_ms = self.broker.now_ms() - latest
        if inactive_ms < self.broker.config.min_lite_ttl:
            return False
        minutes = ttl_minutes.get(parent)
        if minutes is None or minutes <= 0:  # the parent is gone or not LITE, or no expiry
            return False
        return inactive_ms > minutes * MINUTE_MS

    def collect_expired(self) -> list[tuple[str, str]]:
        """``collectExpiredLiteTopic``: (parent topic, LMQ name) of each expired lite topic."""
        ttl_minutes = self._ttl_minutes()
        return [
            (parent, lmq_name)
            for parent, lmq_name in self._lite_queues()
            if self.is_expired(parent, lmq_name, self.max_offset(lmq_name), ttl_minutes)
        ]

    def delete_lmq(self, parent: str, lmq_name: str, groups: set[str]) -> None:
        """``deleteLmq``: the queue, the offsets and orderly records of the parent's groups on it,
        and its subscriptions."""
        broker = self.broker
        for group in groups:
            key = broker.offsets.key(lmq_name, group)
            if broker.offsets.table.pop(key, None) is not None:
                broker.offsets.dirty = True
            self._forget_pop_state(lmq_name, group)
        broker.store.delete_topics({lmq_name})
        dropped = self.registry.clean_subscription(lmq_name)
        logger.info("lite topic %s of %s deleted, %d subscriptions dropped", lmq_name, parent, len(dropped))

    def clean_expired(self) -> list[str]:
        """``cleanExpiredLiteTopic``: delete every expired lite topic; their LMQ names."""
        expired = self.collect_expired()
        if not expired:
            return []
        groups = self._bound_groups()
        for parent, lmq_name in expired:
            self.delete_lmq(parent, lmq_name, groups.get(parent, set()))
        self.expired_total += len(expired)
        return [lmq_name for _parent, lmq_name in expired]

    def clean_by_parent_topic(self, parent: str) -> list[str]:
        """``cleanByParentTopic``: every lite topic of a LITE parent topic (one being deleted)."""
        config = self.broker.topics.table.get(parent)
        if config is None or not is_lite_topic(config.attributes):
            return []
        groups = self._bound_groups().get(parent, set())
        names = [lmq_name for owner, lmq_name in self._lite_queues() if owner == parent]
        for lmq_name in names:
            self.delete_lmq(parent, lmq_name, groups)
        return names

    def run_once(self) -> int:
        """One turn of the service thread's loop: the ms to wait before the next. Within
        ``minLiteTTl`` of the start, nothing is checked and the next turn is in 20 s."""
        config = self.broker.config
        if self.broker.now_ms() - self.started_ms < config.min_lite_ttl:
            return STARTUP_RECHECK_MS
        self.clean_expired()
        return max(config.lite_ttl_check_interval, 1)

    # -- offsets ---------------------------------------------------------------------------------

    def _forget_pop_state(self, lmq_name: str, group: str) -> None:
        """``consumerOrderInfoManager.remove``, and the POP service's newest popped offset."""
        if self.orders is not None:
            self.orders.clear_block(lmq_name, group, 0)
        if self.pop_state is not None:
            self.pop_state.clear_latest_offset(polling_key(lmq_name, group, 0))

    def reset_offset(self, lmq_name: str, group: str, option: OffsetOption) -> int | None:
        """``LiteSubscriptionRegistryImpl.resetOffset``: move the group's offset on a lite topic
        as the option says; the new offset, None when it stays."""
        offsets = self.broker.offsets
        current = offsets.query(group, lmq_name, 0)
        target = option.target(current, self.max_offset(lmq_name))
        logger.info(
            "lite offset of %s on %s: %s, current %d, target %s", group, lmq_name, option, current, target
        )
        if target is None:
            return None
        offsets.commit(group, lmq_name, 0, target)
        self._forget_pop_state(lmq_name, group)
        return target

    # -- subscribing -----------------------------------------------------------------------------

    def _group_attributes(self, group: str) -> dict[str, str]:
        config = self.broker.groups.find(group, create=False)
        return dict(config.attributes) if config is not None else {}

    def subscribe_partial(
        self, client_id: str, group: str, topic: str, lite_topics: list[str], option: OffsetOption | None
    ) -> list[tuple[str, str]]:
        """``addPartialSubscription`` with the group's settings, the one path of both doors: the
        registry's PARTIAL_ADD (in an exclusive group, the takeover, whose clients the registry's
        listeners tell), the exclusive mode's resets, the offset option; the (client, LMQ name)
        pairs taken from other clients. Raises :class:`broker.lite.LiteQuotaError`."""
        attributes = self._group_attributes(group)
        added, excluded = self.registry.add_partial(
            client_id,
            group,
            topic,
            lite_topics,
            exclusive=is_lite_sub_exclusive(attributes),
            max_count=self.broker.config.max_lite_subscription_count,  # read each time, as Java
        )
        if excluded and group_flag(attributes, LITE_SUB_RESET_OFFSET_EXCLUSIVE):
            for lmq_name in dict.fromkeys(name for _client, name in excluded):
                self.reset_offset(lmq_name, group, TO_MIN)
        for other, lmq_name in excluded:
            logger.info("exclusive lite group %s: %s taken from %s by %s", group, lmq_name, other, client_id)
        if option is not None:
            for lmq_name in added:
                self.reset_offset(lmq_name, group, option)
        return excluded

    def unsubscribe_partial(self, client_id: str, group: str, topic: str, lite_topics: list[str]) -> None:
        """``removePartialSubscription``: the registry's PARTIAL_REMOVE, and the group's offset on
        each lite topic left back to 0 with ``lite.sub.reset.offset.unsubscribe``."""
        removed = self.registry.remove_partial(client_id, group, topic, lite_topics)
        if removed and group_flag(self._group_attributes(group), LITE_SUB_RESET_OFFSET_UNSUBSCRIBE):
            for lmq_name in sorted(removed):
                self.reset_offset(lmq_name, group, TO_MIN)

    def statistics(self) -> dict[str, int]:
        return {"expired": self.expired_total, "empty_queues_seen": len(self.invalid_scan_counts)}
