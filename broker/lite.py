"""Lite topics (RocketMQ 5.5): many small topics under one parent topic, one queue each.

Mirrors what the 5.5.0 broker and Proxy do with them:

* ``LiteUtil``: a lite topic ``t`` of the parent topic ``P`` is stored in the LMQ queue
  ``%LMQ%$P$t`` (one queue, id 0). A parent topic is a topic whose ``message.type`` is LITE.
* ``GrpcValidator.validateLiteTopic``: a lite topic is not blank, at most ``maxLiteTopicSize``
  UTF-8 bytes (64) and made of ASCII letters, digits, ``-`` and ``_``; else ILLEGAL_LITE_TOPIC.
* ``SubscriptionGroupConfig``: a lite consumer group names its parent topic in the attribute
  ``lite.bind.topic`` and its per-client quota in ``lite.sub.client.quota`` (default 2000), which
  the settings carry to the client as ``lite_subscription_quota``.
* ``ClientProcessor.validateLiteSubscriptionQuota``: a SyncLiteSubscription naming more lite
  topics than the quota plus a buffer of 300 is refused LITE_SUBSCRIPTION_QUOTA_EXCEEDED (the
  client checks its own running count against the quota before it asks).
* ``LiteSubscriptionRegistryImpl``: per client, its group, parent topic and set of LMQ names,
  changed by the four actions of SyncLiteSubscription (``LiteSubscriptionCtlProcessor``).

This module holds the names and the registry, without Trio or sockets; the gRPC adapter is
:mod:`broker.grpc.lite`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

LITE_TYPE = "LITE"  # TopicMessageType.LITE
PROPERTY_LITE_TOPIC = "__LITE_TOPIC"  # MessageConst.PROPERTY_LITE_TOPIC
LITE_TOPIC_PREFIX = "%LMQ%$"  # LiteUtil.LITE_TOPIC_PREFIX
SEPARATOR = "$"  # LiteUtil.SEPARATOR
LITE_BIND_TOPIC = "lite.bind.topic"  # SubscriptionGroupAttributes.LITE_BIND_TOPIC_ATTRIBUTE
LITE_SUB_CLIENT_QUOTA = "lite.sub.client.quota"  # SubscriptionGroupAttributes.LITE_SUB_CLIENT_QUOTA_ATTRIBUTE
LITE_SUB_MODEL = "lite.sub.model"  # SubscriptionGroupAttributes.LITE_SUB_MODEL_ATTRIBUTE
LITE_SUB_EXCLUSIVE = "Exclusive"  # LiteSubModel.Exclusive (the default: Shared)
DEFAULT_LITE_SUB_CLIENT_QUOTA = 2000
MAX_LITE_TOPIC_SIZE = 64  # ProxyConfig.maxLiteTopicSize, UTF-8 bytes
QUOTA_BUFFER = 300  # ClientProcessor.validateLiteSubscriptionQuota
_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def to_lmq_name(parent_topic: str, lite_topic: str) -> str:
    """``LiteUtil.toLmqName``: the queue a lite topic's messages are stored in."""
    return f"{LITE_TOPIC_PREFIX}{parent_topic}{SEPARATOR}{lite_topic}"


def split_lmq_name(lmq_name: str) -> tuple[str, str] | None:
    """``LiteUtil.getParentTopic`` / ``getLiteTopic``: (parent, lite topic), None for a name
    that is not a lite queue's."""
    if not lmq_name.startswith(LITE_TOPIC_PREFIX):
        return None
    rest = lmq_name[len(LITE_TOPIC_PREFIX) :]
    parent, sep, lite = rest.partition(SEPARATOR)
    if not sep or not parent or not lite or SEPARATOR in lite:
        return None
    return parent, lite


def is_lite_topic(topic_attributes: Mapping[str, str] | None) -> bool:
    """``TopicConfig.getTopicMessageType() == LITE`` (the attribute under its plain or ``+`` name)."""
    attributes = topic_attributes or {}
    return (attributes.get("message.type") or attributes.get("+message.type")) == LITE_TYPE


def _attribute(attributes: Mapping[str, str], name: str) -> str | None:
    """A group attribute under its plain name or the ``+`` form an update request gives it."""
    value = attributes.get(name)
    return value if value is not None else attributes.get("+" + name)


def lite_bind_topic(group_attributes: Mapping[str, str]) -> str | None:
    """``SubscriptionGroupConfig.getLiteBindTopic``."""
    return _attribute(group_attributes, LITE_BIND_TOPIC)


def lite_sub_client_quota(group_attributes: Mapping[str, str]) -> int:
    """``SubscriptionGroupConfig.getLiteSubClientQuota``: the attribute, else (or unreadable) 2000."""
    text = _attribute(group_attributes, LITE_SUB_CLIENT_QUOTA)
    try:
        return int(text) if text is not None else DEFAULT_LITE_SUB_CLIENT_QUOTA
    except ValueError:
        return DEFAULT_LITE_SUB_CLIENT_QUOTA


def is_lite_sub_exclusive(group_attributes: Mapping[str, str]) -> bool:
    """``SubscriptionGroupConfig.isLiteSubExclusive``: ``lite.sub.model`` is ``Exclusive``."""
    return _attribute(group_attributes, LITE_SUB_MODEL) == LITE_SUB_EXCLUSIVE


#: Told of a subscription the broker dropped itself: (client id, group, LMQ name).
UnsubscribeListener = Callable[[str, str, str], None]


def lite_topic_problem(lite_topic: str, max_size: int = MAX_LITE_TOPIC_SIZE) -> str | None:
    """``GrpcValidator.validateLiteTopic``: the refusal's text, None for a valid lite topic."""
    if not lite_topic.strip():
        return "lite topic cannot be the char sequence of whitespace"
    if len(lite_topic.encode()) > max_size:
        return f"lite topic exceed the max size {max_size}"
    if not all(ch in _ALLOWED for ch in lite_topic):
        return "lite topic can only contain alphanumeric characters, hyphens(-), and underscores(_)"
    return None


def quota_problem(requested: int, quota: int) -> str | None:
    """``ClientProcessor.validateLiteSubscriptionQuota``: the refusal's text, None within quota."""
    if requested > quota + QUOTA_BUFFER:
        return f"lite subscription quota exceeded: {quota}"
    return None


@dataclass
class LiteSubscription:
    """One client's lite subscription (``LiteSubscription``): its group, parent topic, LMQ names."""

    group: str
    topic: str
    lmq_names: set[str] = field(default_factory=set)


class LiteSubscriptionRegistry:
    """The lite subscriptions by client id (``LiteSubscriptionRegistryImpl``'s
    ``client2Subscription``), and by LMQ name the (client, group) pairs subscribed to it
    (``liteTopic2Group``), and when each client last asked for messages (``LiteEventDispatcher``'s
    ``ClientEventSet.lastAccessTime``, which the lite admin requests show). Single-threaded; the
    gRPC adapter changes it, the lite admin processor reads it."""

    def __init__(self) -> None:
        self.by_client: dict[str, LiteSubscription] = {}
        self.by_lmq: dict[str, set[tuple[str, str]]] = {}
        self.last_access_ms: dict[str, int] = {}
        #: Told of each subscription the broker drops itself (:meth:`exclude_others`).
        self.unsubscribe_listeners: list[UnsubscribeListener] = []

    def _subscription(self, client_id: str, group: str, topic: str) -> LiteSubscription:
        """``getOrCreateLiteSubscription``: a client's new group or topic replaces its old one."""
        found = self.by_client.get(client_id)
        if found is not None and (found.group, found.topic) == (group, topic):
            return found
        if found is not None:
            self.remove_complete(client_id)
        created = LiteSubscription(group, topic)
        self.by_client[client_id] = created
        return created

    def _link(self, client_id: str, group: str, lmq_name: str) -> None:
        self.by_lmq.setdefault(lmq_name, set()).add((client_id, group))

    def _unlink(self, client_id: str, group: str, lmq_name: str) -> None:
        members = self.by_lmq.get(lmq_name)
        if members is None:
            return
        members.discard((client_id, group))
        if not members:
            del self.by_lmq[lmq_name]

    def add_partial(self, client_id: str, group: str, topic: str, lite_topics: Iterable[str]) -> None:
        """PARTIAL_ADD: these lite topics too."""
        subscription = self._subscription(client_id, group, topic)
        for lite in lite_topics:
            name = to_lmq_name(topic, lite)
            subscription.lmq_names.add(name)
            self._link(client_id, group, name)

    def remove_partial(self, client_id: str, group: str, topic: str, lite_topics: Iterable[str]) -> set[str]:
        """PARTIAL_REMOVE: no longer these lite topics; the LMQ names that were subscribed."""
        subscription = self._subscription(client_id, group, topic)
        removed = set()
        for lite in lite_topics:
            name = to_lmq_name(topic, lite)
            if name in subscription.lmq_names:
                subscription.lmq_names.discard(name)
                removed.add(name)
            self._unlink(client_id, group, name)
        return removed

    def add_complete(self, client_id: str, group: str, topic: str, lite_topics: Iterable[str]) -> set[str]:
        """COMPLETE_ADD: exactly these lite topics; the LMQ names dropped."""
        subscription = self._subscription(client_id, group, topic)
        wanted = {to_lmq_name(topic, lite) for lite in lite_topics}
        dropped = subscription.lmq_names - wanted
        for name in dropped:
            self._unlink(client_id, group, name)
        for name in wanted:
            self._link(client_id, group, name)
        subscription.lmq_names = wanted
        return dropped

    def remove_complete(self, client_id: str) -> None:
        """COMPLETE_REMOVE (and a client gone): forget the client's subscription."""
        self.last_access_ms.pop(client_id, None)
        subscription = self.by_client.pop(client_id, None)
        if subscription is None:
            return
        for name in subscription.lmq_names:
            self._unlink(client_id, subscription.group, name)

    def lmq_names_of(self, client_id: str) -> list[str]:
        """The LMQ names a client reads, sorted (a receive walks them from a rotating start)."""
        subscription = self.by_client.get(client_id)
        return sorted(subscription.lmq_names) if subscription is not None else []

    def subscribers_of(self, lmq_name: str) -> set[tuple[str, str]]:
        return set(self.by_lmq.get(lmq_name, ()))

    def open_events(self, client_id: str, now_ms: int) -> None:
        """A client subscribed: its event set exists from now on (``LiteEventDispatcher`` creates
        a ``ClientEventSet``, its ``lastAccessTime`` the creation time, when the registration is
        dispatched to it)."""
        if client_id in self.by_client:
            self.last_access_ms.setdefault(client_id, now_ms)

    def touch(self, client_id: str, now_ms: int) -> None:
        """A subscribed client asked for messages (``ClientEventSet.poll``)."""
        if client_id in self.by_client:
            self.last_access_ms[client_id] = now_ms

    def active_count(self) -> int:
        """``getActiveSubscriptionNum``: the (client, lite topic) pairs subscribed."""
        return sum(len(members) for members in self.by_lmq.values())

    def clients_of_group(self, group: str) -> list[str]:
        """``getAllClientIdByGroup``."""
        return [client for client, sub in self.by_client.items() if sub.group == group]

    def statistics(self) -> dict[str, int]:
        return {
            "clients": len(self.by_client),
            "subscriptions": sum(len(s.lmq_names) for s in self.by_client.values()),
            "lite_topics": len(self.by_lmq),
        }

    def exclude_others(self, client_id: str, group: str, topic: str, lite_topics: Iterable[str]) -> None:
        """An exclusive group's PARTIAL_ADD (``excludeClientByLmqName``): the group's other
        clients subscribed to these lite topics lose them (a client left with none is forgotten),
        and the listeners are told of each, which tell the client (NOTIFY_UNSUBSCRIBE_LITE).
        The subscribing client itself is left alone: 5.5.0 notifies and drops it too, then
        links it again."""
        for lite in lite_topics:
            name = to_lmq_name(topic, lite)
            for other, other_group in sorted(self.by_lmq.get(name, ())):
                if other_group != group or other == client_id:
                    continue
                subscription = self.by_client.get(other)
                if subscription is not None:
                    subscription.lmq_names.discard(name)
                    if not subscription.lmq_names:
                        del self.by_client[other]
                        self.last_access_ms.pop(other, None)
                self._unlink(other, other_group, name)
                for listener in self.unsubscribe_listeners:
                    listener(other, other_group, name)
