"""Topic attributes: the ``+key=value,-key`` modifications of a topic create or update.

Mirrors ``org.apache.rocketmq.common.TopicAttributes`` (the four known attributes),
``attribute.AttributeParser.parseToMap`` (the modification text to a map whose keys keep their
``+``/``-`` sign), ``attribute.AttributeUtil.alterCurrentAttributes`` (validation and the merge
into a topic's current attributes, called from ``TopicConfigManager.updateTopicConfig``) and the
``verify`` of ``EnumAttribute`` and ``LongRangeAttribute``. Every refusal carries the Java
exception's message, which the real broker answers as the remark of a SYSTEM_ERROR; the one
check the Java processor makes itself (``message.type=MIXED`` while ``enableMixedMessageType`` is
off, its default) answers INVALID_PARAMETER.

Two values Java accepts are refused here, since this store has neither the batch consume queue
nor the compaction store: ``queue.type=BatchCQ`` and ``cleanup.policy=COMPACTION``. Their remark
names the attribute and the value. A ``topics.json`` entry that carries one is still loaded (and
written back unchanged), with one ERROR line, so a file of the Java broker keeps its configuration.

``message.type`` is kept and answered as Java does; the broker itself checks it only for MIXED
(Java's Proxy is the component that compares a message with its topic's type). It also takes
``PRIORITY`` (RocketMQ 5.4+, :mod:`broker.priority`) and ``LITE`` (5.5, :mod:`broker.lite`), while
a refusal lists the set of the release ``brokerVersion`` follows (:mod:`broker.followed_version`):
5.3.3's by default, 5.5.0's (with ``PRIORITY`` and ``LITE``) under ``brokerVersion=5.5.0``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from broker.followed_version import MESSAGE_TYPES_533
from codec.bodies.register import TopicConfig
from codec.errors import RocketMQError

SYSTEM_ERROR = 1  # ResponseCode.SYSTEM_ERROR: how AdminBrokerProcessor answers an attribute error
INVALID_PARAMETER = 29  # ResponseCode.INVALID_PARAMETER
JAVA_LONG_MAX = 2**63 - 1
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")  # what Long.parseLong(value, 10) reads

QUEUE_TYPE = "queue.type"
CLEANUP_POLICY = "cleanup.policy"
MESSAGE_TYPE = "message.type"
RESERVE_TIME = "reserve.time"


def _java_hash(text: str) -> int:
    """``String.hashCode`` (UTF-16 code units, 32-bit wrap-around)."""
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def java_hash_set_text(values: tuple[str, ...]) -> str:
    """``Sets.newHashSet(values).toString()``: Java's HashSet iteration order.

    Guava sizes the set for ``len(values)`` (``Maps.capacity``: n + 1 below 3, else
    ceil(n / 0.75)), HashMap rounds the table up to a power of two and iterates bucket by bucket,
    each bucket in insertion order.
    """
    capacity = len(values) + 1 if len(values) < 3 else math.ceil(len(values) / 0.75)
    table = 1
    while table < capacity:
        table *= 2
    buckets: dict[int, list[str]] = {}
    for value in values:
        h = _java_hash(value)
        buckets.setdefault((h ^ (h >> 16)) & (table - 1), []).append(value)
    ordered = [v for index in sorted(buckets) for v in buckets[index]]
    return "[" + ", ".join(ordered) + "]"


@dataclass(frozen=True, slots=True)
class Attribute:
    """``EnumAttribute`` (``universe`` set) or ``LongRangeAttribute`` (``universe`` empty)."""

    name: str
    changeable: bool
    universe: tuple[str, ...] = ()
    minimum: int = 0
    maximum: int = 0
    newer: tuple[str, ...] = ()  # values of later Java versions, accepted but not listed

    def verify(self, value: str, listed: tuple[str, ...] | None = None) -> None:
        """``listed``: the universe a refusal prints, when not this attribute's own."""
        if self.universe:
            if value not in self.universe and value not in self.newer:
                raise RocketMQError(f"value is not in set: {java_hash_set_text(listed or self.universe)}")
            return
        number = int(value) if _JAVA_LONG.fullmatch(value) else None
        if number is None or not -(2**63) <= number <= JAVA_LONG_MAX:
            raise RocketMQError(f'For input string: "{value}"')
        if not self.minimum <= number <= self.maximum:
            raise RocketMQError(f"value is not in range({self.minimum}, {self.maximum})")


#: ``TopicAttributes.ALL``.
TOPIC_ATTRIBUTES: dict[str, Attribute] = {
    QUEUE_TYPE: Attribute(QUEUE_TYPE, False, ("BatchCQ", "SimpleCQ")),
    CLEANUP_POLICY: Attribute(CLEANUP_POLICY, False, ("DELETE", "COMPACTION")),
    MESSAGE_TYPE: Attribute(
        MESSAGE_TYPE,
        True,
        MESSAGE_TYPES_533,
        newer=("PRIORITY", "LITE"),
    ),
    RESERVE_TIME: Attribute(RESERVE_TIME, True, minimum=-1, maximum=JAVA_LONG_MAX),
}

#: Values Java accepts that need a store this broker does not have (module docstring).
UNSUPPORTED_VALUES = {QUEUE_TYPE: "BatchCQ", CLEANUP_POLICY: "COMPACTION"}
TOPIC_DEFAULTS = {QUEUE_TYPE: "SimpleCQ", CLEANUP_POLICY: "DELETE"}
_STORE_OF = {QUEUE_TYPE: "batch consume queue", CLEANUP_POLICY: "compaction store"}


def parse_modification(text: str | None) -> dict[str, str]:
    """``AttributeParser.parseToMap``: ``+k=v,-k`` to ``{"+k": "v", "-k": ""}``.

    Splits as ``String.split`` does (trailing empty parts dropped). Raises RocketMQError with
    Java's message for a malformed entry.
    """
    if not text:
        return {}
    result: dict[str, str] = {}
    for kv in _java_split(text, ","):
        if "=" in kv:
            parts = _java_split(kv, "=")
            key = parts[0] if parts else ""
            if len(parts) < 2:
                raise RocketMQError(f"Index 1 out of bounds for length {len(parts)}")
            value = parts[1]
            if "+" not in key:
                raise RocketMQError(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = kv, ""
            if "-" not in key:
                raise RocketMQError(f"delete attribute format is wrong: {key}")
        if key in result:
            raise RocketMQError(f"key duplication: {key}")
        result[key] = value
    return result


def _java_split(text: str, sep: str) -> list[str]:
    parts = text.split(sep)
    while parts and not parts[-1]:
        parts.pop()
    return parts


def alter_attributes(
    create: bool,
    current: Mapping[str, str],
    new: Mapping[str, str],
    message_types: tuple[str, ...] = MESSAGE_TYPES_533,
) -> dict[str, str]:
    """``AttributeUtil.alterCurrentAttributes`` over :data:`TOPIC_ATTRIBUTES`, then the refusal of
    :data:`UNSUPPORTED_VALUES`; returns the topic's new attributes. ``message_types``: the
    ``message.type`` values a refusal lists (the followed release's). Raises RocketMQError."""
    init: dict[str, str] = {}
    add: dict[str, str] = {}
    delete: list[str] = []
    seen: set[str] = set()
    for key, value in new.items():
        real = key[1:]
        if not real or "+" in real or "-" in real:
            raise RocketMQError("kv string format wrong.")
        if real in seen:
            raise RocketMQError(f"alter duplication key. key: {real}")
        seen.add(real)
        if create:
            if not key.startswith("+"):
                raise RocketMQError(f"only add attribute is supported while creating topic. key: {real}")
            init[real] = value
        elif key.startswith("+"):
            add[real] = value
        elif key.startswith("-"):
            if real not in current:
                raise RocketMQError(f"attempt to delete a nonexistent key: {real}")
            delete.append(real)
        else:
            raise RocketMQError(f"wrong format key: {real}")
    changes: list[tuple[str, str | None, bool]] = [(k, v, True) for k, v in init.items()]
    changes += [(k, v, False) for k, v in add.items()]
    changes += [(k, None, False) for k in delete]
    for real, checked, initial in changes:
        attribute = TOPIC_ATTRIBUTES.get(real)
        if attribute is None:
            raise RocketMQError(f"unsupported key: {real}")
        if not initial and not attribute.changeable:
            raise RocketMQError(f"attempt to update an unchangeable attribute. key: {real}")
        if checked is not None:
            attribute.verify(checked, message_types if real == MESSAGE_TYPE else None)
    for real, value in (init | add).items():
        if UNSUPPORTED_VALUES.get(real) == value:
            raise RocketMQError(
                f"{real}={value} is not supported by this broker "
                f"(only {real}={TOPIC_DEFAULTS[real]}): it has no {_STORE_OF[real]}"
            )
    result = {**current, **init, **add}
    for real in delete:
        result.pop(real, None)
    return result


def requested_attributes(
    modification: str | Mapping[str, str] | None,
    existing: TopicConfig | None,
    message_types: tuple[str, ...] = MESSAGE_TYPES_533,
) -> dict[str, str]:
    """The attributes a topic has after a create (``existing`` None) or update request whose
    modification is ``CreateTopicRequestHeader.attributes`` (text) or the signed map of a
    ``TopicConfig`` in ``CreateTopicListRequestBody``; ``message_types`` as for
    :func:`alter_attributes`. Raises RocketMQError as the Java broker answers: INVALID_PARAMETER
    for MIXED, SYSTEM_ERROR for the rest."""
    if modification is None or isinstance(modification, str):
        modification = parse_modification(modification)
    if modification.get("+" + MESSAGE_TYPE) == "MIXED":
        raise RocketMQError("MIXED message type is not supported.", response_code=INVALID_PARAMETER)
    current = existing.attributes if existing is not None else {}
    return alter_attributes(existing is None, current, modification, message_types)


def unsupported_attributes(attributes: Mapping[str, str]) -> list[str]:
    """The ``key=value`` pairs of stored attributes this broker does not implement."""
    return [f"{k}={v}" for k, v in attributes.items() if UNSUPPORTED_VALUES.get(k) == v]
