"""Config dataclasses from RocketMQ property files, and back.

Every component's config is a dataclass whose fields are the Java property keys in snake_case
(``brokerClusterName`` is ``broker_cluster_name``; an acronym such as ``brokerIP1`` becomes
``broker_ip1``). :func:`apply_properties` sets the fields named by a ``broker.conf`` /
``namesrv.conf`` mapping, converting each value to the type of the field's default, and returns
the keys it did not know, for the caller to hand on or log.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(key: str) -> str:
    """``brokerClusterName`` → ``broker_cluster_name``; ``brokerIP1`` → ``broker_ip1``."""
    return _CAMEL_BOUNDARY.sub("_", key).lower()


def camel_case(name: str) -> str:
    """The Java key of a field; acronyms as Java spells them are not recoverable (``brokerIp1``)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _convert(value: str, default: Any, key: str) -> Any:
    text = value.strip()
    if isinstance(default, bool):
        return text.lower() == "true"
    if isinstance(default, int):
        try:
            return int(text)
        except ValueError as err:
            raise ValueError(f"{key}: not an integer: {value!r}") from err
    if isinstance(default, float):
        try:
            return float(text)
        except ValueError as err:
            raise ValueError(f"{key}: not a number: {value!r}") from err
    return text


def apply_properties(config: Any, props: Mapping[str, str]) -> dict[str, str]:
    """Set the fields of ``config`` named in ``props``; return the unknown entries.

    Raises ``ValueError`` naming the key when a value cannot be converted.
    """
    fields = {f.name for f in dataclasses.fields(config)}
    unknown: dict[str, str] = {}
    for key, value in props.items():
        name = snake_case(key)
        if name not in fields:
            unknown[key] = value
            continue
        setattr(config, name, _convert(value, getattr(config, name), key))
    return unknown


def to_properties(config: Any, java_keys: Mapping[str, str] | None = None) -> dict[str, str]:
    """The config as Java-keyed strings; ``java_keys`` maps field names whose key camel_case gets wrong."""
    out: dict[str, str] = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        key = (java_keys or {}).get(field.name) or camel_case(field.name)
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out
