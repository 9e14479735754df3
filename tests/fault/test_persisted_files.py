"""Regression tests for persisted files (writers sharing a temporary name once collided): writes
are atomic with a unique temporary name, so writers sharing a directory never collide; loads
validate and fall back to ``.bak`` with a WARNING."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from namesrv.kv_config import KVConfigManager
from store.errors import StoreCorruptionError
from store.metadata import load_json_file, persist_json_file

WRITERS = 8
ROUNDS = 50


def _race(work: Callable[[int], None]) -> list[BaseException]:
    """Run ``work(i)`` on ``WRITERS`` threads released together; the exceptions they raised."""
    barrier = threading.Barrier(WRITERS)
    failures: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            for _ in range(ROUNDS):
                work(i)
        except BaseException as err:
            failures.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return failures


def test_kv_config_writers_sharing_a_file_never_collide(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two NameServers sharing HOME persist kvConfig.json at the same moment (as at a joint stop)."""
    path = tmp_path / "namesrv" / "kvConfig.json"
    managers = [KVConfigManager(path) for _ in range(WRITERS)]

    def persist(i: int) -> None:
        managers[i].put("ns", f"k{i}", "v")

    caplog.set_level(logging.ERROR)
    assert _race(persist) == []
    assert [r.getMessage() for r in caplog.records] == []
    doc = json.loads(path.read_text())
    assert set(doc["configTable"]["ns"]) <= {f"k{i}" for i in range(WRITERS)}
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []
    loaded = KVConfigManager(path)
    loaded.load()
    assert loaded.table["ns"]


def test_metadata_writers_in_one_process_never_collide(tmp_path: Path) -> None:
    """Two gateways in one process (the test fixtures) persisting the same config file."""
    path = str(tmp_path / "config" / "consumerOffset.json")

    def persist(i: int) -> None:
        persist_json_file(path, {"offsetTable": {"T@g": {"0": i}}})

    assert _race(persist) == []
    doc = load_json_file(path)
    assert doc is not None
    assert doc["offsetTable"]["T@g"]["0"] in range(WRITERS)
    assert [p for p in (tmp_path / "config").iterdir() if p.name.endswith(".tmp")] == []


def test_corrupt_kv_config_falls_back_to_bak_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "kvConfig.json"
    manager = KVConfigManager(path)
    manager.put("ns", "a", "1")
    manager.put("ns", "b", "2")  # the first version is now in .bak
    path.write_text('{"configTable": 7}')  # parses, but is no configTable document
    caplog.set_level(logging.WARNING)
    loaded = KVConfigManager(path)
    loaded.load()
    assert loaded.table == {"ns": {"a": "1"}}
    assert any("kvConfig.json.bak" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


def test_metadata_load_validates_and_falls_back_to_bak(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = str(tmp_path / "topics.json")
    persist_json_file(path, {"topicConfigTable": {}, "n": 1})
    persist_json_file(path, {"topicConfigTable": {}, "n": 2})
    Path(path).write_bytes(b"\x00" * 64)  # a zeroed page after a crash

    def has_table(doc: object) -> None:
        if not isinstance(doc, dict) or "topicConfigTable" not in doc:
            raise ValueError("no topicConfigTable")

    caplog.set_level(logging.WARNING)
    doc = load_json_file(path, has_table)
    assert doc is not None
    assert doc["n"] == 1
    assert any("topics.json.bak" in r.getMessage() for r in caplog.records)
    Path(path + ".bak").write_text("[]")
    with pytest.raises(StoreCorruptionError):
        load_json_file(path, has_table)
