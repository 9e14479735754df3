"""A store directory written by the real Apache RocketMQ 5.3.3 broker (tests/golden/store/real-5.3.3,
recorded by ``RMQ_STORE_WRITE_GOLDEN=1 pytest compat_tests/test_store_compat.py``) opens in our
store with every message at its queue and physical offset, its tags code, and found by its keys."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from compat_tests.store_checks import check_real_store

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "store" / "real-5.3.3"


def test_real_broker_store_directory_opens_in_our_store(tmp_path: Path) -> None:
    copy = tmp_path / "store"
    shutil.copytree(GOLDEN, copy, ignore=shutil.ignore_patterns("sent.json"))
    sent = json.loads((GOLDEN / "sent.json").read_text())["sent"]
    assert len(sent) > 100
    check_real_store(copy, sent)
