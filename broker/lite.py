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
  changed by the four actions of SyncLiteSubscription (``LiteSubscriptionCtlProcessor``); a
  PARTIAL_ADD when the broker already holds ``maxLiteSubscriptionCount`` (client, lite topic)
  subscriptions is refused ``LiteQuotaException``; its ``OffsetOption`` says where each added
  lite topic is read from (``resetOffset``); an exclusive group's (``lite.sub.model=Exclusive``)
  PARTIAL_ADD takes each lite topic from the group's other clients, each told once through the
  registry's listeners (``excludeClientByLmqName``, ``notifyUnsubscribeLite``); an expired lite
  topic's subscriptions go (``cleanSubscription``, nobody told).
* ``TopicConfig.getLiteTopicExpiration``: the parent topic's ``lite.topic.expiration`` (minutes).

This module holds the names and the registry, without Trio or sockets; the gRPC adapter is
:mod:`broker.grpc.lite`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from codec.codes import ResponseCode
from codec.errors import RocketMQError

logger = logging.getLogger(__name__)

LITE_TYPE = "LITE"  # TopicMessageType.LITE
PROPERTY_LITE_TOPIC = "__LITE_TOPIC"  # MessageConst.PROPERTY_LITE_TOPIC
LITE_TOPIC_PREFIX = "%LMQ%$"  # LiteUtil.LITE_TOPIC_PREFIX
SEPARATOR = "$"  # LiteUtil.SEPARATOR
LITE_BIND_TOPIC = "lite.bind.topic"  # SubscriptionGroupAttributes.LITE_BIND_TOPIC_ATTRIBUTE
LITE_SUB_CLIENT_QUOTA = "lite.sub.client.quota"  # SubscriptionGroupAttributes.LITE_SUB_CLIENT_QUOTA_ATTRIBUTE
LITE_SUB_MODEL = "lite.sub.model"  # SubscriptionGroupAttributes.LITE_SUB_MODEL_ATTRIBUTE: Shared, Exclusive
LITE_SUB_EXCLUSIVE = "Exclusive"  # LiteSubModel.Exclusive (the default: Shared)
LITE_SUB_RESET_OFFSET_EXCLUSIVE = "lite.sub.reset.offset.exclusive"  # boolean, default false
LITE_SUB_RESET_OFFSET_UNSUBSCRIBE = "lite.sub.reset.offset.unsubscribe"  # boolean, default false
DEFAULT_LITE_SUB_CLIENT_QUOTA = 2000
MAX_LITE_TOPIC_SIZE = 64  # ProxyConfig.maxLiteTopicSize, UTF-8 bytes
QUOTA_BUFFER = 300  # ClientProcessor.validateLiteSubscriptionQuota
DEFAULT_MAX_LITE_SUBSCRIPTION_COUNT = 100000  # BrokerConfig.maxLiteSubscriptionCount
_LITE_QUOTA_EXCEPTION = "org.apache.rocketmq.broker.lite.LiteQuotaException"
LITE_EXPIRATION = "lite.topic.expiration"  # TopicAttributes.LITE_EXPIRATION_ATTRIBUTE, minutes
# OffsetOption.Type, and the values of its POLICY type (OffsetOption.POLICY_*_VALUE).
OFFSET_POLICY, OFFSET_OFFSET, OFFSET_TAIL_N, OFFSET_TIMESTAMP = "POLICY", "OFFSET", "TAIL_N", "TIMESTAMP"
OFFSET_TYPES = (OFFSET_POLICY, OFFSET_OFFSET, OFFSET_TAIL_N, OFFSET_TIMESTAMP)
POLICY_LAST, POLICY_MIN, POLICY_MAX = 0, 1, 2
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


def lite_topic_expiration(topic_attributes: Mapping[str, str] | None) -> int:
    """``TopicConfig.getLiteTopicExpiration``: minutes, -1 when unset, unreadable or not LITE."""
    attributes = topic_attributes or {}
    if not is_lite_topic(attributes):
        return -1
    text = _attribute(attributes, LITE_EXPIRATION)
    try:
        return int(text) if text is not None else -1
    except ValueError:
        return -1


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


def group_flag(group_attributes: Mapping[str, str], name: str) -> bool:
    """A boolean group attribute (``Boolean.parseBoolean``: "true" in any case, else false), as
    ``isResetOffsetInExclusiveMode`` and ``isResetOffsetOnUnsubscribe`` read theirs."""
    return (_attribute(group_attributes, name) or "").lower() == "true"


#: Told of a subscription the broker dropped itself: (client id, group, LMQ name); answers
#: whether it reached the client (a listener that does not know the client answers False).
UnsubscribeListener = Callable[[str, str, str], bool | None]


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


class LiteQuotaError(RocketMQError):
    """``LiteQuotaException``: the broker holds ``maxLiteSubscriptionCount`` subscriptions already.
    Its text is the exception's ``toString``, which LITE_SUBSCRIPTION_CTL answers as its remark
    and the Proxy passes on to its gRPC client."""

    response_code = ResponseCode.LITE_SUBSCRIPTION_QUOTA_EXCEEDED

    def __init__(self, max_count: int) -> None:
        super().__init__(f"{_LITE_QUOTA_EXCEPTION}: lite subscription quota exceeded {max_count}")


@dataclass(frozen=True, slots=True)
class OffsetOption:
    """``OffsetOption``: where a lite topic added by PARTIAL_ADD is read from. ``kind`` is one of
    :data:`OFFSET_TYPES`; ``value`` the policy (LAST 0, MIN 1, MAX 2), the offset, the count of
    messages back, or a timestamp."""

    kind: str
    value: int

    def target(self, current: int, max_offset: int) -> int | None:
        """``LiteSubscriptionRegistryImpl.resetOffset``: the offset to reset the group to, None to
        leave it. ``current`` is the group's committed offset (-1: none), ``max_offset`` the queue's
        next offset. MIN is 0, MAX the queue's end; TAIL_N goes back from the committed offset
        (only when there is one); LAST and TIMESTAMP (disabled in 5.5.0) change nothing. A target
        equal to the current offset, or negative (``assignResetOffset`` ignores it), is None."""
        found: int | None = None
        if self.kind == OFFSET_POLICY:
            if self.value == POLICY_MIN:
                found = 0
            elif self.value == POLICY_MAX:
                found = max_offset
        elif self.kind == OFFSET_OFFSET:
            found = self.value
        elif self.kind == OFFSET_TAIL_N and current >= 0:
            found = max(0, current - self.value)
        if found is None or found == current or found < 0:
            return None
        return found


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
        #: Told of each subscription the broker drops itself (an exclusive group's takeover), in
        #: turn until one reaches the client: the remoting connections' notifier
        #: (:mod:`broker.lite_notify`) and the gRPC endpoint's Telemetry streams.
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

    def add_partial(
        self,
        client_id: str,
        group: str,
        topic: str,
        lite_topics: Iterable[str],
        exclusive: bool = False,
        max_count: int = DEFAULT_MAX_LITE_SUBSCRIPTION_COUNT,
    ) -> tuple[list[str], list[tuple[str, str]]]:
        """PARTIAL_ADD: these lite topics too; their LMQ names (for the caller to apply the
        request's offset option to), and with ``exclusive`` (the group's ``lite.sub.model``) the
        (client, LMQ name) pairs of the group's other clients it took these lite topics from
        (``excludeClientByLmqName``; a client left without lite topics is forgotten). Raises
        :class:`LiteQuotaError` when the broker holds ``max_count`` (``maxLiteSubscriptionCount``)
        subscriptions already (even if these are not new ones)."""
        if self.active_count() >= max_count:
            raise LiteQuotaError(max_count)
        subscription = self._subscription(client_id, group, topic)
        names = []
        excluded = []
        for lite in lite_topics:
            name = to_lmq_name(topic, lite)
            subscription.lmq_names.add(name)
            if exclusive:
                excluded += [(other, name) for other in self._exclude(client_id, group, name)]
            self._link(client_id, group, name)
            names.append(name)
        return names, excluded

    def exclude_others(
        self, client_id: str, group: str, topic: str, lite_topics: Iterable[str]
    ) -> list[tuple[str, str]]:
        """An exclusive group's takeover of these lite topics by ``client_id`` (what
        :meth:`add_partial` does with ``exclusive``, before linking the client): the (client, LMQ
        name) pairs taken, each client told through the listeners."""
        taken = []
        for lite in lite_topics:
            name = to_lmq_name(topic, lite)
            taken += [(other, name) for other in self._exclude(client_id, group, name)]
        return taken

    def _exclude(self, client_id: str, group: str, lmq_name: str) -> list[str]:
        """``excludeClientByLmqName``: the group's other clients on ``lmq_name`` lose it (a client
        left with none is forgotten), and each is told once (:meth:`_tell_unsubscribed`); their
        ids. The subscribing client itself is left alone: 5.5.0 drops and notifies it too, then
        links it again."""
        others = sorted(c for c, g in self.by_lmq.get(lmq_name, ()) if g == group and c != client_id)
        for other in others:
            found = self.by_client.get(other)
            if found is not None:
                found.lmq_names.discard(lmq_name)
                if not found.lmq_names:
                    del self.by_client[other]
            self._unlink(other, group, lmq_name)
            self._tell_unsubscribed(other, group, lmq_name)
        return others

    def _tell_unsubscribed(self, client_id: str, group: str, lmq_name: str) -> None:
        """``notifyUnsubscribeLite``: the listeners in turn until one reaches the client (its
        remoting connection or its Telemetry stream), so the client hears it once; none: logged,
        as Java logs a client without a channel."""
        for listener in self.unsubscribe_listeners:
            if listener(client_id, group, lmq_name):
                return
        logger.warning(
            "notifyUnsubscribeLite but channel is null, lmqName:%s, group:%s, clientId:%s",
            lmq_name,
            group,
            client_id,
        )

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

    def clean_subscription(self, lmq_name: str) -> set[tuple[str, str]]:
        """``cleanSubscription``: a lite topic gone (expired) is nobody's any more; the
        (client, group) pairs that were subscribed."""
        members = self.by_lmq.pop(lmq_name, set())
        for client_id, _group in members:
            subscription = self.by_client.get(client_id)
            if subscription is not None:
                subscription.lmq_names.discard(lmq_name)
        return members

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
