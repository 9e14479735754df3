"""Topics and consumer groups declared up front, created before the gateway says ``ready``.

Four ways to declare them, all parsed here (Trio-free) and applied by
:meth:`gateway.launcher.Gateway.run` once the broker runs:

* ``--topic NAME[:QUEUES[:TYPE]]`` (repeatable): QUEUES read and write queues (default 8, as
  ``mqadmin updateTopic``), TYPE the ``+message.type`` attribute: NORMAL, FIFO, DELAY or
  TRANSACTION (MIXED is refused, as the 5.3.3 broker refuses it);
* ``--group NAME[:KEY=VALUE,...]`` (repeatable): KEY a ``SubscriptionGroupConfig`` field as
  ``mqadmin updateSubGroup`` sets it (``retryMaxTimes=3``, ``consumeMessageOrderly=true``, ...);
* ``-f resources.toml`` (:func:`load_resource_file`)::

      [topics.orders]
      queues = 8
      type = "FIFO"
      attributes = { "+delete.policy" = "NORMAL" }   # any other topic attribute

      [topics.audit]                                 # 8 queues, no type

      [groups.billing]
      retryMaxTimes = 3
      consumeMessageOrderly = true

* the environment: ``RMQ_GATEWAY_TOPICS=orders:8:FIFO,audit`` (comma-separated topic specs) and
  ``RMQ_GATEWAY_GROUPS=billing:retryMaxTimes=3;audit`` (semicolon-separated group specs).

Every refusal is a :class:`ResourceSpecError` (a ``ValueError``) naming the spec and what is
wrong, raised before anything listens.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.subscription_group_manager import SubscriptionGroupConfig, SubscriptionGroupManager
from broker.topic_attributes import MESSAGE_TYPE, requested_attributes
from broker.topic_config_manager import (
    STATIC_SYSTEM_TOPICS,
    SYSTEM_TOPIC_PREFIX,
    TopicConfigManager,
    TopicValidationError,
    is_valid_group,
    validate_topic_config,
)
from codec.bodies.register import PERM_READ, PERM_WRITE, TopicConfig
from codec.errors import RocketMQError

DEFAULT_QUEUES = 8  # mqadmin updateTopic's -r / -w default
MESSAGE_TYPES = ("NORMAL", "FIFO", "DELAY", "TRANSACTION")  # TopicMessageType a topic may declare
TOPICS_ENV = "RMQ_GATEWAY_TOPICS"
GROUPS_ENV = "RMQ_GATEWAY_GROUPS"


class ResourceSpecError(ValueError):
    """A topic or group declaration that cannot be created; the message says which and why."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


#: The group settings a declaration may set, by their Java (JSON) names, with their Python types.
GROUP_SETTINGS: dict[str, tuple[str, type]] = {
    _camel(f.name): (f.name, bool if f.type in ("bool", bool) else int)
    for f in dataclasses.fields(SubscriptionGroupConfig)
    if f.type in ("bool", "int", bool, int)
}


@dataclass(frozen=True, slots=True)
class Resources:
    """The topics and groups to create; :meth:`merged` adds another declaration's (later wins)."""

    topics: tuple[TopicConfig, ...] = ()
    groups: tuple[SubscriptionGroupConfig, ...] = field(default=())

    def merged(self, other: Resources) -> Resources:
        topics = {t.topic_name: t for t in (*self.topics, *other.topics)}
        groups = {g.group_name: g for g in (*self.groups, *other.groups)}
        return Resources(tuple(topics.values()), tuple(groups.values()))

    def __bool__(self) -> bool:
        return bool(self.topics or self.groups)


def topic_config(
    name: str, queues: int = DEFAULT_QUEUES, message_type: str | None = None,
    attributes: Mapping[str, str] | None = None, *, spec: str | None = None,
) -> TopicConfig:  # fmt: skip
    """A checked topic declaration; raises :class:`ResourceSpecError` (``spec`` names it)."""
    where = spec if spec is not None else name
    modification: dict[str, str] = {}
    for key, value in (attributes or {}).items():
        if not isinstance(value, str) or not key.startswith("+") or len(key) < 2:
            raise ResourceSpecError(f"topic {where!r}: attribute {key!r} must be '+name' with a text value")
        modification[key] = value
    if message_type is not None:
        kind = message_type.strip().upper()
        if kind not in MESSAGE_TYPES:
            raise ResourceSpecError(
                f"topic {where!r}: message type {message_type!r} is not one of {', '.join(MESSAGE_TYPES)}"
            )
        modification["+" + MESSAGE_TYPE] = kind
    try:
        attrs = requested_attributes(modification, None)
    except RocketMQError as err:
        raise ResourceSpecError(f"topic {where!r}: {err}") from err
    if name in STATIC_SYSTEM_TOPICS or name.startswith(SYSTEM_TOPIC_PREFIX):
        raise ResourceSpecError(f"topic {where!r}: {name} is a system topic")
    if not isinstance(queues, int) or isinstance(queues, bool) or queues < 1:
        raise ResourceSpecError(f"topic {where!r}: queues must be a number from 1, not {queues!r}")
    config = TopicConfig(name, queues, queues, PERM_READ | PERM_WRITE, attributes=attrs)
    try:
        validate_topic_config(config)
    except TopicValidationError as err:
        raise ResourceSpecError(f"topic {where!r}: {err}") from err
    return config


def parse_topic_spec(spec: str) -> TopicConfig:
    """``NAME[:QUEUES[:TYPE]]``; raises :class:`ResourceSpecError`."""
    parts = spec.strip().split(":")
    if len(parts) > 3 or not parts[0]:
        raise ResourceSpecError(f"topic {spec!r}: expected NAME[:QUEUES[:TYPE]]")
    queues = DEFAULT_QUEUES
    if len(parts) > 1 and parts[1]:
        if not parts[1].isdigit():
            raise ResourceSpecError(f"topic {spec!r}: queues {parts[1]!r} is not a number")
        queues = int(parts[1])
    return topic_config(parts[0], queues, parts[2] if len(parts) == 3 else None, spec=spec)


def group_config(
    name: str, settings: Mapping[str, object], *, spec: str | None = None
) -> SubscriptionGroupConfig:
    """A checked group declaration (``settings`` by Java name, values typed or as text);
    raises :class:`ResourceSpecError`."""
    where = spec if spec is not None else name
    if not is_valid_group(name):
        raise ResourceSpecError(f"group {where!r}: {name!r} is not a valid group name")
    group = SubscriptionGroupConfig(name)
    for key, raw in settings.items():
        if key not in GROUP_SETTINGS:
            raise ResourceSpecError(
                f"group {where!r}: unknown setting {key!r} (one of {', '.join(sorted(GROUP_SETTINGS))})"
            )
        attr, kind = GROUP_SETTINGS[key]
        setattr(group, attr, _typed(raw, kind, f"group {where!r}: {key}"))
    return group


def _typed(raw: object, kind: type, what: str) -> object:
    if kind is bool:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
            return raw.strip().lower() == "true"
        raise ResourceSpecError(f"{what} must be true or false, not {raw!r}")
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lstrip("-").isdigit():
        return int(raw)
    raise ResourceSpecError(f"{what} must be a whole number, not {raw!r}")


def parse_group_spec(spec: str) -> SubscriptionGroupConfig:
    """``NAME[:KEY=VALUE,...]``; raises :class:`ResourceSpecError`."""
    name, _, rest = spec.strip().partition(":")
    settings: dict[str, object] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ResourceSpecError(f"group {spec!r}: expected KEY=VALUE, not {item!r}")
        settings[key.strip()] = value.strip()
    return group_config(name, settings, spec=spec)


def parse_specs(topics: Iterable[str] = (), groups: Iterable[str] = ()) -> Resources:
    """The declarations of ``--topic`` / ``--group`` flags (or marker arguments)."""
    return Resources(tuple(map(parse_topic_spec, topics)), tuple(map(parse_group_spec, groups)))


def resources_from_env(env: Mapping[str, str]) -> Resources:
    """``RMQ_GATEWAY_TOPICS`` (comma-separated) and ``RMQ_GATEWAY_GROUPS`` (semicolon-separated)."""
    topics = [s for s in env.get(TOPICS_ENV, "").split(",") if s.strip()]
    groups = [s for s in env.get(GROUPS_ENV, "").split(";") if s.strip()]
    return parse_specs(topics, groups)


def load_resource_file(path: str | Path) -> Resources:
    """The ``[topics.NAME]`` and ``[groups.NAME]`` tables of a TOML file (module docstring);
    raises :class:`ResourceSpecError` for a file that cannot be read or parsed, or a bad entry."""
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise ResourceSpecError(f"resource file {path}: {err.strerror or err}") from err
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ResourceSpecError(f"resource file {path}: not TOML: {err}") from err
    unknown = set(doc) - {"topics", "groups"}
    if unknown:
        raise ResourceSpecError(f"resource file {path}: unknown table(s) {', '.join(sorted(unknown))}")
    topics = [_file_topic(path, name, entry) for name, entry in _tables(path, doc, "topics")]
    groups = [
        group_config(name, entry, spec=f"{path}: groups.{name}")
        for name, entry in _tables(path, doc, "groups")
    ]
    return Resources(tuple(topics), tuple(groups))


def _tables(path: str | Path, doc: dict[str, Any], kind: str) -> list[tuple[str, dict[str, Any]]]:
    section = doc.get(kind, {})
    if not isinstance(section, dict) or not all(isinstance(v, dict) for v in section.values()):
        raise ResourceSpecError(f"resource file {path}: [{kind}] must hold one table per name, [{kind}.NAME]")
    return list(section.items())


def _file_topic(path: str | Path, name: str, entry: dict[str, Any]) -> TopicConfig:
    where = f"{path}: topics.{name}"
    unknown = set(entry) - {"queues", "type", "attributes"}
    if unknown:
        raise ResourceSpecError(f"topic {where!r}: unknown key(s) {', '.join(sorted(unknown))}")
    attributes = entry.get("attributes", {})
    message_type = entry.get("type")
    if not isinstance(attributes, dict) or (message_type is not None and not isinstance(message_type, str)):
        raise ResourceSpecError(f"topic {where!r}: attributes must be a table and type a string")
    return topic_config(name, entry.get("queues", DEFAULT_QUEUES), message_type, attributes, spec=where)


def apply_resources(
    topics: TopicConfigManager, groups: SubscriptionGroupManager, resources: Resources
) -> None:
    """Create (or replace) every declared topic and group, as the admin requests would."""
    for topic in resources.topics:
        topics.update(dataclasses.replace(topic, attributes=dict(topic.attributes)))
    for group in resources.groups:
        groups.update(dataclasses.replace(group))
