"""Small helpers shared by the test modules."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from broker.config import BrokerConfig
from broker.registration import NamesrvRegistrar
from broker.topic_config_manager import TopicConfigManager


async def wait_until(predicate: Callable[[], object], seconds: float) -> None:
    """Poll ``predicate`` until it is true; fail the test after ``seconds``."""
    with trio.fail_after(seconds):
        while not predicate():  # noqa: ASYNC110 - polling plain state of an object under test
            await trio.sleep(0.01)


def small_store(root: Path) -> dict[str, str]:
    """``broker.conf`` store keys for tests: a store under ``root`` with small files."""
    return {
        "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
        "mappedFileSizeConsumeQueue": str(1000 * 20),
        "maxHashSlotNum": "1024",
        "maxIndexNum": "4096",
    }


def broker_config(root: Path, **fields: Any) -> BrokerConfig:
    """A broker config whose store lives under ``root`` (small files), ephemeral port unless given."""
    fields.setdefault("listen_port", 0)
    config = BrokerConfig(store_path_root_dir=str(root / "store"), **fields)
    config.extra.update(small_store(root))
    return config


def registrar_of(config: BrokerConfig) -> NamesrvRegistrar:
    """The NameServer registrar a broker with ``config`` and only its system topics would use."""
    return NamesrvRegistrar(config, TopicConfigManager(config))


async def read_ready_line(proc: subprocess.Popen[str], seconds: float) -> str:
    """The ``ready: …`` line an ``rmq-gateway`` process logs on stderr, read within ``seconds``
    (earlier lines, such as a warning, are skipped); fails if the process exits first."""
    assert proc.stderr is not None
    stderr = proc.stderr
    line = ""
    with trio.fail_after(seconds):
        while "ready: " not in line:
            line = await trio.to_thread.run_sync(stderr.readline)
            assert line, "process exited before ready"
    return line
