"""A full disk: puts are refused with a status and a log line (never a SIGBUS), the store opens on a
full disk serving reads and refusing writes, every acknowledged message survives, and the cleaner
says what it deletes to make room.

The store lives on a small ext4 image loop-mounted for the test (CI runs as root). The store work
runs in a subprocess, so that a SIGBUS from a write into an unreserved page would fail the test
instead of killing the test run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SIZE_MIB = 16

SCENARIO = r"""
import json, logging, sys
from pathlib import Path
from codec.message import MessageRecord, iter_records
from store.config import StoreConfig
from store.message_store import MessageStore
from store.results import GetMessageStatus

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
root = Path(sys.argv[1])
props = {
    "storePathRootDir": str(root),
    "mappedFileSizeCommitLog": str(1024 * 1024),
    "mappedFileSizeConsumeQueue": str(2000 * 20),
    "maxHashSlotNum": "1024",
    "maxIndexNum": "4096",
}
config, _ = StoreConfig.from_properties(props)

def read_all(store):
    out, offset = [], 0
    while True:
        got = store.get_message("Full", 0, offset, 32, 1 << 30)
        if got.status is not GetMessageStatus.FOUND:
            return out
        out += [r.body for r in iter_records(got.body())]
        offset = got.next_begin_offset

acked, refused = [], None
with MessageStore(config) as store:
    for i in range(100_000):
        body = (f"message {i} ".encode() * 100)[:1000]
        keys = "KEYS\x01k%d\x02" % i
        result = store.put_message(MessageRecord(topic="Full", queue_id=0, body=body, properties=keys))
        if not result.ok:
            refused = result.status.name
            break
        acked.append(body)
    store.flush()
    after_full = store.put_message(MessageRecord(topic="Full", queue_id=0, body=b"z" * 1000)).status.name
print("PHASE reopen", file=sys.stderr, flush=True)
with MessageStore(config) as store:
    reopened_writable = store.writable
    served = read_all(store)
    refused_after_reopen = store.put_message(MessageRecord(topic="Full", queue_id=0, body=b"y")).status.name
    print("PHASE clean", file=sys.stderr, flush=True)
    deleted = store.clean(manual=True)
print(json.dumps({
    "acked": len(acked), "refused": refused, "after_full": after_full,
    "reopened_writable": reopened_writable, "served_all": served == acked,
    "refused_after_reopen": refused_after_reopen, "deleted": deleted,
}))
"""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB ext4 file system on a loop device. Not a tmpfs: tmpfs gives a page to every read
    of a hole in a shared map, so on a full tmpfs merely reading past the data raises SIGBUS, which
    no disk file system does."""
    mount = tmp_path / "disk"
    mount.mkdir()
    image = tmp_path / "disk.img"
    with image.open("wb") as f:
        f.truncate(SIZE_MIB * 2**20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], check=True, capture_output=True)
    loop = subprocess.run(["mount", "-o", "loop", str(image), str(mount)], capture_output=True)
    assert loop.returncode == 0, f"cannot loop-mount a small file system (root needed): {loop.stderr!r}"
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)


def test_a_full_disk_refuses_writes_loudly_and_keeps_every_acknowledged_message(small_disk: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCENARIO, str(small_disk / "store")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    log = proc.stderr
    assert result["acked"] > 5000  # most of the 16 MiB was used before the refusal
    assert result["refused"] in ("CREATE_MAPPED_FILE_FAILED", "SERVICE_NOT_AVAILABLE")
    assert result["after_full"] in ("CREATE_MAPPED_FILE_FAILED", "SERVICE_NOT_AVAILABLE")
    assert "put refused" in log
    assert "MiB free" in log
    # Started again on the full disk: it serves every acknowledged message and refuses writes.
    assert result["reopened_writable"] is False
    assert result["served_all"] is True
    assert result["refused_after_reopen"] == "SERVICE_NOT_AVAILABLE"
    reopen_log = log.split("PHASE reopen", 1)[1]
    assert "disk full:" in reopen_log
    # The cleaner makes room and says what it deletes.
    clean_log = log.split("PHASE clean", 1)[1]
    assert result["deleted"] >= 1
    assert "deleting" in clean_log
    assert "message(s)" in clean_log
