"""How a scenario ends other than by passing: the exceptions its body raises, and :func:`check`."""

from __future__ import annotations


class Failed(Exception):
    """The target answered, but not as RocketMQ does: the message says what differed."""


class Unsupported(Exception):
    """The target refused the feature the documented way (its remark is the message)."""


class NotRun(Exception):
    """The scenario could not be run here (no endpoint, no Java, setup failed): why."""


def check(condition: bool, reason: str) -> None:
    """Raise :class:`Failed` with ``reason`` unless ``condition``."""
    if not condition:
        raise Failed(reason)
