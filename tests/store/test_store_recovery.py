"""Recovery of damaged stores: a damaged record costs that record only, a torn tail is cut but kept
aside, damaged consume queues are rebuilt from the commit log, and a restart after a crash scans
only what was written since the last checkpoint.

Each store is written by a subprocess that is killed with SIGKILL (an unclean stop: the ``abort``
file stays), then damaged on purpose, then opened here.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codec.message import MessageRecord, iter_records
from store.commit_log import CommitLog
from store.message_store import MessageStore
from store.results import GetMessageStatus
from tests.store.helpers import small_config

REPO = Path(__file__).resolve().parents[2]
TOPIC = "Rec"
COUNT = 600

WRITER = """
import os, sys
from pathlib import Path
from codec.message import MessageRecord
from store.message_store import MessageStore
from tests.store.helpers import small_config

root, count, checkpoint_at = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
store = MessageStore(small_config(root, maxHashSlotNum="4096", maxIndexNum="16384")).open()
for i in range(count):
    body = f"<message {i:05d}>".encode() * 4
    keys = "KEYS\\x01k%d\\x02" % i
    result = store.put_message(MessageRecord(topic="Rec", queue_id=0, body=body, properties=keys))
    assert result.ok, result
    if i + 1 == checkpoint_at:
        store.flush()  # commit log, queues, index and the checkpoint: durable up to here
os.kill(os.getpid(), 9)
"""


def write_and_kill(root: Path, count: int = COUNT, checkpoint_at: int = 0) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", WRITER, str(root), str(count), str(checkpoint_at)],
        cwd=REPO,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -9, proc.stderr.decode()
    assert (root / "abort").exists()


def open_store(root: Path) -> MessageStore:
    return MessageStore(small_config(root, maxHashSlotNum="4096", maxIndexNum="16384")).open()


def read_all(store: MessageStore) -> list[tuple[int, bytes]]:
    """(queue offset, body) of every message a consumer of the queue gets."""
    out: list[tuple[int, bytes]] = []
    offset = 0
    while True:
        got = store.get_message(TOPIC, 0, offset, 32, 1 << 30)
        if got.status is not GetMessageStatus.FOUND:
            return out
        out += [(r.queue_offset, r.body) for r in iter_records(got.body())]
        offset = got.next_begin_offset


def body_of(i: int) -> bytes:
    return f"<message {i:05d}>".encode() * 4


def flip_byte_in_body(root: Path, i: int) -> None:
    """Change one byte of message ``i``'s body in its commit-log file (bit rot)."""
    marker = f"<message {i:05d}>".encode()
    for path in sorted((root / "commitlog").iterdir()):
        data = path.read_bytes()
        pos = data.find(marker)
        if pos >= 0:
            with open(path, "r+b") as f:
                f.seek(pos + 3)
                f.write(b"X")
            return
    raise AssertionError(f"message {i} not found")


def test_a_damaged_record_costs_that_record_only(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_and_kill(tmp_path)
    flip_byte_in_body(tmp_path, 300)
    with caplog.at_level(logging.ERROR, logger="store.recovery"), open_store(tmp_path) as store:
        got = read_all(store)
        assert got == [(i, body_of(i)) for i in range(COUNT) if i != 300]
        # The damaged message keeps its queue offset: the next put gets a new one.
        result = store.put_message(MessageRecord(topic=TOPIC, queue_id=0, body=b"after"))
        assert result.append_result is not None
        assert result.append_result.logics_offset == COUNT
    damage = [r.getMessage() for r in caplog.records if "commit log damaged" in r.getMessage()]
    assert len(damage) == 1, caplog.text
    kept = list((tmp_path / "damaged").glob("commitlog-*"))
    assert len(kept) == 1
    assert b"<message 00300>"[:3] in kept[0].read_bytes()


def test_a_torn_tail_is_cut_and_kept_aside(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_and_kill(tmp_path)
    with open_store(tmp_path) as store:
        end = store.max_phy_offset
        record = store.look_message_by_offset(store.min_phy_offset)
        assert record is not None
    # A record whose copy was interrupted: everything but TOTALSIZE (written last) is there.
    commit_log = CommitLog(small_config(tmp_path))
    commit_log.load()
    mf = commit_log.queue.find(end)
    assert mf is not None
    pos = end - mf.file_from_offset
    mf.mm[pos + 4 : pos + len(record)] = record[4:]
    commit_log.close()
    (tmp_path / "abort").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="store.recovery"), open_store(tmp_path) as store:
        assert store.max_phy_offset == end
        assert read_all(store) == [(i, body_of(i)) for i in range(COUNT)]
    assert "commit log torn at offset" in caplog.text
    assert list((tmp_path / "damaged").glob("commitlog-tail-*"))


def test_a_zeroed_consume_queue_is_rebuilt_from_the_commit_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with MessageStore(small_config(tmp_path)).open() as store:
        for i in range(COUNT):
            assert store.put_message(MessageRecord(topic=TOPIC, queue_id=0, body=body_of(i))).ok
    queue_dir = tmp_path / "consumequeue" / TOPIC / "0"
    files = sorted(queue_dir.iterdir())
    assert len(files) > 2
    middle = files[len(files) // 2]
    middle.write_bytes(bytes(middle.stat().st_size))  # a clean stop, then a zeroed file
    with (
        caplog.at_level(logging.WARNING, logger="store.recovery"),
        MessageStore(small_config(tmp_path)) as store,
    ):
        assert read_all(store) == [(i, body_of(i)) for i in range(COUNT)]
    assert f"consume queue {TOPIC}/0 is damaged" in caplog.text
    assert list((tmp_path / "damaged").glob(f"consumequeue-{TOPIC}-0-*"))


def test_a_restart_after_a_crash_scans_only_since_the_checkpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_and_kill(tmp_path, count=COUNT, checkpoint_at=COUNT - 20)
    # Read from the log rather than by patching CommitLog.scan: a compiled store calls its own
    # methods directly, past any monkeypatch (gateway/native.py).
    caplog.set_level(logging.DEBUG, logger="store.recovery")
    index_files_before = sorted(os.listdir(tmp_path / "index"))
    with open_store(tmp_path) as store:
        assert read_all(store) == [(i, body_of(i)) for i in range(COUNT)]
        assert store.checkpoint is not None
        bytes_per_message = store.max_phy_offset // COUNT
        # The scan began within the last 20 messages, not at the first file.
        logged = [r.getMessage() for r in caplog.records if r.name == "store.recovery"]
        starts = [int(m.rsplit(" ", 1)[1]) for m in logged if m.startswith("recovery scans")]
        assert len(starts) == 1
        assert store.max_phy_offset - starts[0] <= 21 * bytes_per_message
        for i in (0, COUNT - 1):
            found = store.query_message(TOPIC, f"k{i}", 32, 0, 1 << 62)
            assert len(found.offsets) == 1
    assert sorted(os.listdir(tmp_path / "index")) == index_files_before
