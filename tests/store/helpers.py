"""Helpers shared by the store's test modules (and by the crash test's writer subprocess)."""

from __future__ import annotations

from pathlib import Path

from store.config import StoreConfig

SEGMENT = 64 * 1024  # commit-log file size of small_config: a few KiB of records roll it


def small_config(root: Path, **extra: str) -> StoreConfig:
    """A store under ``root`` with small files, so that commit logs, consume queues and index
    files roll within a test; ``extra``: more broker.conf keys."""
    config, unknown = StoreConfig.from_properties(
        {
            "storePathRootDir": str(root),
            "mappedFileSizeCommitLog": str(SEGMENT),
            "mappedFileSizeConsumeQueue": str(100 * 20),
            "maxHashSlotNum": "64",
            "maxIndexNum": "256",
            **extra,
        }
    )
    assert not unknown
    return config
