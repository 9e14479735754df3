"""NameServer KV configuration (mirrors ``KVConfigManager``), persisted to ``kvConfig.json``.

File: ``{"configTable":{namespace:{key:value}}}``, written atomically through a temp file with a
unique name (:func:`store.metadata.write_atomically`), so two NameServers sharing ``HOME`` that
persist at the same moment cannot collide; the previous version is kept as ``.bak`` and read,
with a WARNING, when the main file is missing, unreadable or not a ``configTable`` document.
A failed write is logged and leaves the previous file intact; the table in memory stays current.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from codec import fastjson
from store.errors import StoreCorruptionError, StoreError
from store.metadata import load_json_file, write_atomically

logger = logging.getLogger(__name__)


class KVConfigManager:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        """Read the file (or its ``.bak``); an unusable pair is logged and the table starts empty."""
        if self.path is None:
            return
        try:
            doc = load_json_file(str(self.path), _table_of)
        except StoreError as err:
            logger.error("cannot load KV config, starting empty: %s", err)
            return
        if doc is not None:
            self.table = _table_of(doc)
            logger.info("loaded %d KV namespaces from %s", len(self.table), self.path)

    def persist(self) -> None:
        if self.path is None or (not self.table and not self.path.exists()):
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(str(self.path), fastjson.dumps({"configTable": self.table}))
        except (OSError, StoreError) as err:
            logger.error("could not persist %s: %s", self.path, err)

    def put(self, namespace: str, key: str, value: str) -> None:
        self.table.setdefault(namespace, {})[key] = value
        self.persist()

    def get(self, namespace: str, key: str) -> str | None:
        return self.table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        kv = self.table.get(namespace)
        if kv is not None and kv.pop(key, None) is not None:
            if not kv:
                del self.table[namespace]
            self.persist()

    def namespace(self, namespace: str) -> dict[str, str]:
        return dict(self.table.get(namespace, {}))


def _table_of(doc: Any) -> dict[str, dict[str, str]]:
    """The ``configTable`` of a parsed document; raises :class:`StoreCorruptionError` if it has none."""
    table = doc.get("configTable") if isinstance(doc, dict) else None
    if not isinstance(table, dict) or not all(isinstance(kv, dict) for kv in table.values()):
        raise StoreCorruptionError("no configTable object of namespace objects")
    return {str(ns): {str(k): str(v) for k, v in kv.items()} for ns, kv in table.items()}
