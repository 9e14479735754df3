"""The owner of the broker's persisted tables (:mod:`broker.config_tables`), without a broker."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from broker.config_tables import ConfigTable, ConfigTables
from store.errors import StoreError
from store.metadata import ConfigFiles, pretty_json


class Offsets:
    """A manager that records its own changes, as ``ConsumerOffsetManager`` does."""

    def __init__(self) -> None:
        self.table: dict[str, int] = {}
        self.dirty = False

    def commit(self, key: str, offset: int) -> None:
        self.table[key] = offset
        self.dirty = True

    def to_obj(self) -> dict[str, Any]:
        return {"offsetTable": dict(self.table)}

    def load_obj(self, doc: Any) -> None:
        self.table = {str(k): int(v) for k, v in doc["offsetTable"].items()}


def owner(tmp_path: Path) -> tuple[ConfigTables, Offsets, dict[str, Any]]:
    """Tables ``topics.json`` (written on change), ``consumerOffset.json`` (periodic, flushed at
    shutdown) and ``timer.json`` (periodic only)."""
    tables = ConfigTables(ConfigFiles(str(tmp_path / "config")))
    topics: dict[str, Any] = {"topicConfigTable": {}}
    offsets, timer = Offsets(), Offsets()
    tables.register(ConfigTable("topics.json", lambda: topics, topics.update))
    tables.register(
        ConfigTable(
            "consumerOffset.json", offsets.to_obj, offsets.load_obj, source=offsets, flush_at_shutdown=True
        )
    )
    tables.register(ConfigTable("timer.json", timer.to_obj, timer.load_obj, source=timer))
    return tables, offsets, topics


def test_a_change_is_written_at_once_in_the_files_layout(tmp_path: Path) -> None:
    tables, _offsets, topics = owner(tmp_path)
    topics["topicConfigTable"]["T"] = {"topicName": "T", "perm": 6}
    assert tables.changed("topics.json") is True
    path = tmp_path / "config" / "topics.json"
    assert path.read_text() == pretty_json(topics)
    assert tables.dirty_names() == []


def test_the_periodic_flush_writes_only_the_tables_changed_since_their_last_write(tmp_path: Path) -> None:
    tables, offsets, _topics = owner(tmp_path)
    assert tables.persist_dirty() == []
    offsets.commit("T@g", 5)
    assert tables.dirty_names() == ["consumerOffset.json"]
    assert tables.persist_dirty() == ["consumerOffset.json"]
    assert offsets.dirty is False
    assert tables.persist_dirty() == []
    tables.mark_changed("topics.json")
    assert tables.persist_dirty() == ["topics.json"]
    assert sorted(p.name for p in (tmp_path / "config").iterdir()) == ["consumerOffset.json", "topics.json"]
    assert json.loads((tmp_path / "config" / "consumerOffset.json").read_text()) == {
        "offsetTable": {"T@g": 5}
    }
    assert tables.writes == 2


def test_shutdown_writes_the_changed_tables_and_the_offsets_even_unchanged(tmp_path: Path) -> None:
    tables, _offsets, _topics = owner(tmp_path)
    assert tables.persist_all() == ["consumerOffset.json"]
    tables.mark_changed("timer.json")
    assert tables.persist_all() == ["consumerOffset.json", "timer.json"]
    assert not (tmp_path / "config" / "topics.json").exists()


def test_a_corrupt_file_loads_its_bak_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tables, offsets, _topics = owner(tmp_path)
    offsets.commit("T@g", 5)
    tables.persist("consumerOffset.json")
    offsets.commit("T@g", 6)
    tables.persist("consumerOffset.json")
    (tmp_path / "config" / "consumerOffset.json").write_text('{"offsetTable":{"T@g":')
    again, reloaded, _ = owner(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert again.load("consumerOffset.json") is True
    assert reloaded.table == {"T@g": 5}
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "consumerOffset.json.bak" in warnings[0].getMessage()
    assert reloaded.dirty is False


def test_a_missing_table_loads_nothing(tmp_path: Path) -> None:
    tables, offsets, _topics = owner(tmp_path)
    assert tables.load("consumerOffset.json") is False
    assert offsets.table == {}


def test_a_refused_document_stops_a_strict_table_and_is_logged_for_a_lenient_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tables, _offsets, _topics = owner(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "consumerOffset.json").write_text('{"offsetTable":{"T@g":"x"}}')
    with pytest.raises(StoreError, match=r"config/consumerOffset\.json is malformed"):
        tables.load("consumerOffset.json")
    lenient = ConfigTables(ConfigFiles(str(tmp_path / "config")))
    taken = Offsets()
    lenient.register(ConfigTable("consumerOffset.json", taken.to_obj, taken.load_obj, strict=False))
    with caplog.at_level(logging.ERROR):
        assert lenient.load("consumerOffset.json") is False
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        "config/consumerOffset.json is malformed, starting empty: invalid literal for int() with base 10: 'x'"
    ]
    assert taken.table == {}


def test_a_failed_write_is_logged_or_raised_and_leaves_the_table_clean(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "config").write_text("a file where the directory should be")
    tables, offsets, _topics = owner(tmp_path)
    offsets.commit("T@g", 5)
    with caplog.at_level(logging.ERROR):
        assert tables.persist_dirty() == []
    assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1
    assert tables.dirty_names() == []
    with pytest.raises(StoreError):
        tables.write("topics.json")


def test_a_table_is_registered_once_and_only_registered_ones_are_known(tmp_path: Path) -> None:
    tables, offsets, _topics = owner(tmp_path)
    with pytest.raises(ValueError, match="registered twice"):
        tables.register(ConfigTable("consumerOffset.json", offsets.to_obj, offsets.load_obj))
    with pytest.raises(ValueError, match="no config table"):
        tables.persist("users.json")
    assert tables.statistics() == {
        "tables": ["topics.json", "consumerOffset.json", "timer.json"],
        "dirty": [],
        "writes": 0,
    }
