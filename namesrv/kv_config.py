"""NameServer KV configuration (mirrors ``KVConfigManager``), persisted to ``kvConfig.json``.

File: ``{"configTable":{namespace:{key:value}}}``, written to a temp file and renamed, with the
previous version kept as ``.bak`` and read when the main file is missing or unreadable.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from codec import fastjson
from codec.errors import BodyError

logger = logging.getLogger(__name__)


class KVConfigManager:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        if self.path is None:
            return
        for candidate in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                doc = fastjson.loads(candidate.read_bytes())
            except FileNotFoundError:
                continue
            except (OSError, BodyError) as err:
                logger.warning("cannot read %s: %s", candidate, err)
                continue
            table = doc.get("configTable") if isinstance(doc, dict) else None
            if isinstance(table, dict):
                self.table = {str(ns): {str(k): str(v) for k, v in kv.items()} for ns, kv in table.items()}
                logger.info("loaded %d KV namespaces from %s", len(self.table), candidate)
                return

    def persist(self) -> None:
        if self.path is None or (not self.table and not self.path.exists()):
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(fastjson.dumps({"configTable": self.table}))
        if self.path.exists():
            os.replace(self.path, self.path.with_name(self.path.name + ".bak"))
        os.replace(tmp, self.path)

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
