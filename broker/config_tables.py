"""The one owner of the broker's persisted tables in ``<storePathRootDir>/config/``.

Mirrors ``org.apache.rocketmq.common.ConfigManager`` and what ``BrokerController`` does with its
subclasses (``TopicConfigManager``, ``SubscriptionGroupManager``, ``ConsumerOffsetManager``,
``ScheduleMessageService``'s delay offsets, ``MessageRequestModeManager``,
``ConsumerOrderInfoManager``, the ACL metadata, the timer's progress). Each table is registered
once, by the manager that holds it, as a :class:`ConfigTable`: its file name, how to encode the
document (``encode``) and how to take a loaded one (``decode``, which may raise to refuse it).
:class:`ConfigTables` is the only code that reads or writes those files, through
:class:`store.metadata.ConfigFiles` (``.bak`` fallback on load, copy to ``.bak``, temp file,
fsync and rename on write).

When a table is written, as Java's brokers do:

* on change (topics, groups, message request modes, users, ACLs): the manager calls
  :meth:`ConfigTables.changed`, which writes at once;
* on a period (consumer offsets, delay offsets, orderly POP state, timer progress): the manager
  sets its own ``dirty`` flag (the table's ``source``) and the periodic flush calls
  :meth:`ConfigTables.persist_dirty`, which writes only the tables changed since their last write;
* at shutdown, :meth:`ConfigTables.persist_all` writes every changed table and, changed or not,
  those registered ``flush_at_shutdown`` (consumer and delay offsets). Java's ``shutdown``
  persists every manager unconditionally; writing an unchanged topics or groups table again would
  only rewrite the same bytes, so this owner skips it.

A write that fails is logged at ERROR (``ConfigManager.persist``) by :meth:`persist`, or raised
by :meth:`write` for the callers that answer a request with it (the ACL admin codes).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from codec.errors import RocketMQError
from store.errors import StoreError
from store.metadata import ConfigFiles

logger = logging.getLogger(__name__)


class ChangeFlag(Protocol):
    """A manager that records its own changes (``ConsumerOffsetManager.dirty`` and the like)."""

    dirty: bool


@dataclass(slots=True)
class ConfigTable:
    """One persisted table.

    ``encode()`` gives the document to write; ``decode(doc)`` takes a loaded one. ``strict``: a
    document ``decode`` refuses stops the broker's start (:class:`StoreError`); otherwise it is
    logged at ERROR and the table starts empty. ``source``: the manager's own change flag, read
    and cleared by the owner. ``flush_at_shutdown``: written at shutdown even when unchanged.
    """

    name: str
    encode: Callable[[], Any]
    decode: Callable[[Any], object]
    strict: bool = True
    source: ChangeFlag | None = None
    flush_at_shutdown: bool = False


class ConfigTables:
    """The registered tables of one broker's ``config/`` directory (module docstring)."""

    def __init__(self, files: ConfigFiles) -> None:
        self.files = files
        self._tables: dict[str, ConfigTable] = {}
        self._changed: set[str] = set()
        self.writes = 0

    def register(self, table: ConfigTable) -> None:
        """Raises ``ValueError`` when a table of that file name is registered already."""
        if table.name in self._tables:
            raise ValueError(f"config table {table.name} is registered twice")
        self._tables[table.name] = table

    def names(self) -> list[str]:
        return list(self._tables)

    def _table(self, name: str) -> ConfigTable:
        try:
            return self._tables[name]
        except KeyError:
            raise ValueError(f"no config table {name} is registered") from None

    # -- loading ---------------------------------------------------------------------------------

    def load(self, name: str) -> bool:
        """Read ``config/<name>`` (its ``.bak`` when the file is missing, empty or unparsable, with
        a WARNING) and hand it to the table's ``decode``; False when neither file has content.

        Raises :class:`StoreError` when content exists but neither file is usable, or when a
        strict table's ``decode`` refuses the document (a lenient one logs it and loads nothing).
        """
        table = self._table(name)
        doc = self.files.load(name)
        if doc is None:
            return False
        try:
            table.decode(doc)
        except (RocketMQError, ValueError, TypeError, AttributeError) as err:
            if table.strict:
                raise StoreError(f"config/{name} is malformed: {err}") from err
            logger.error("config/%s is malformed, starting empty: %s", name, err)
            return False
        return True

    def load_all(self, names: list[str]) -> None:
        """:meth:`load` each of ``names`` in order (the broker's start); raises as :meth:`load`."""
        for name in names:
            self.load(name)

    # -- changes ---------------------------------------------------------------------------------

    def mark_changed(self, name: str) -> None:
        """Record that ``name`` changed; the next :meth:`persist_dirty` writes it."""
        self._table(name)
        self._changed.add(name)

    def is_dirty(self, name: str) -> bool:
        source = self._table(name).source
        return name in self._changed or (source is not None and source.dirty)

    def dirty_names(self) -> list[str]:
        return [name for name in self._tables if self.is_dirty(name)]

    def changed(self, name: str) -> bool:
        """A table persisted on change changed: write it now (logging a failure, as
        :meth:`persist`)."""
        return self.persist(name)

    # -- writing ---------------------------------------------------------------------------------

    def write(self, name: str) -> None:
        """Encode and write ``config/<name>`` now; it is clean afterwards, even when the write
        fails (the next change marks it again). Raises :class:`StoreError` (``DiskFullError`` for
        ENOSPC); the previous file is then intact."""
        table = self._table(name)
        self._changed.discard(name)
        if table.source is not None:
            table.source.dirty = False
        self.files.persist(name, table.encode())
        self.writes += 1

    def persist(self, name: str) -> bool:
        """:meth:`write`, logging a failure at ERROR instead of raising; True when written."""
        try:
            self.write(name)
        except StoreError as err:
            logger.error("could not persist %s: %s", name, err)
            return False
        return True

    def persist_if_dirty(self, name: str) -> bool:
        """:meth:`persist` ``name`` when it changed since its last write; True when written."""
        return self.is_dirty(name) and self.persist(name)

    def persist_dirty(self) -> list[str]:
        """The periodic flush: :meth:`persist` every table changed since its last write; the names
        written."""
        return [name for name in self.dirty_names() if self.persist(name)]

    def persist_all(self) -> list[str]:
        """The shutdown flush: every changed table and every ``flush_at_shutdown`` one; the names
        written."""
        names = [n for n, t in self._tables.items() if t.flush_at_shutdown or self.is_dirty(n)]
        return [name for name in names if self.persist(name)]

    def statistics(self) -> dict[str, Any]:
        return {"tables": self.names(), "dirty": self.dirty_names(), "writes": self.writes}
