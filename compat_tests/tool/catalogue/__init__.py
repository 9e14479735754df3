"""The scenario catalogue of ``rmq-compat``: one module per feature family, each with a
``scenarios()`` list, and the selection ``--only`` / ``--exclude`` / ``--quick`` make of it.

To add a scenario: write a function of a :class:`~compat_tests.tool.model.Context` (and, for the
remoting clients, the client line) in the family's module that creates its topic and group through
``ctx.topic()`` / ``ctx.group()``, runs a client program and ``check``s one thing a user would see;
list it in that module's ``scenarios()`` (``per_line`` makes one row per remoting client line).
"""

from __future__ import annotations

from collections.abc import Iterable

from compat_tests.tool.catalogue import consume, filtering, grpc, ops, pop, send, timing
from compat_tests.tool.model import Scenario

FAMILIES = (send, filtering, timing, consume, pop, ops, grpc)


def catalogue() -> list[Scenario]:
    """Every scenario, in report order (feature families, then client lines)."""
    found = [scenario for family in FAMILIES for scenario in family.scenarios()]
    keys = [s.key for s in found]
    duplicates = {k for k in keys if keys.count(k) > 1}
    if duplicates:
        raise ValueError(f"duplicate scenario keys: {sorted(duplicates)}")
    return found


def all_tags(scenarios: Iterable[Scenario]) -> list[str]:
    return sorted({tag for s in scenarios for tag in s.tags} | {s.client for s in scenarios})


def _tags(text: str | None) -> set[str]:
    return {t.strip() for t in (text or "").split(",") if t.strip()}


def select(
    scenarios: list[Scenario], only: str | None = None, exclude: str | None = None, quick: bool = False
) -> list[Scenario]:
    """The scenarios that carry any tag of ``only`` (a tag or a client name; all when empty), none
    of ``exclude``, and with ``quick`` only each feature's pick. ``ValueError`` for an unknown tag."""
    wanted, unwanted = _tags(only), _tags(exclude)
    known = set(all_tags(scenarios))
    unknown = sorted((wanted | unwanted) - known)
    if unknown:
        raise ValueError(f"unknown tag(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")

    def labels(s: Scenario) -> set[str]:
        return {*s.tags, s.client}

    chosen = [s for s in scenarios if (not wanted or labels(s) & wanted) and not labels(s) & unwanted]
    if quick:
        seen: set[str] = set()
        picked = []
        for s in sorted(chosen, key=lambda s: not s.quick):  # each feature's pick first
            if s.feature not in seen:
                seen.add(s.feature)
                picked.append(s)
        chosen = [s for s in chosen if s in picked]
    return chosen
