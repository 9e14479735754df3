"""Recovery after a crash reads the data, not the unused tail of a mapped file, and stays safe:
stale bytes past the recovered end (a torn record, a whole record of an older run, stray units of
a consume queue) are cleared, so neither the next append nor the next load takes them for data.

A writer subprocess fills a store whose commit-log file is 256 MiB and is killed with SIGKILL;
stale bytes are then planted past the ends of the commit log and of the consume queue, the page
cache of the store files is dropped, and the store is opened here. Which pages of each file the
recovery brought into the page cache is read with ``mincore`` (through ``ctypes``) on a fresh
mapping: the page cache is the file's, so a page read by ``pread`` or through a mapping shows.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from codec.message import PHYSICAL_OFFSET_POS, MessageRecord, iter_records
from store import mapped_file
from store.config import CQ_STORE_UNIT_SIZE, StoreConfig
from store.mapped_file import PAGE_SIZE, MappedFile
from store.message_store import MessageStore
from store.results import GetMessageStatus
from tests.store.helpers import small_config

REPO = Path(__file__).resolve().parents[2]
TOPIC = "Tail"
COUNT = 400
COMMIT_LOG_SIZE = 256 * 1024 * 1024
CONSUME_QUEUE_SIZE = 300_000 * CQ_STORE_UNIT_SIZE  # the default: 6 MB
FAR = 64 * 1024 * 1024  # a stray page this far past the end of the commit log
TAIL_BOUND = 8 * 1024 * 1024  # resident bytes past the end of the data allowed (reservation, read-ahead)

OVERRIDES = {
    "mappedFileSizeCommitLog": str(COMMIT_LOG_SIZE),
    "mappedFileSizeConsumeQueue": str(CONSUME_QUEUE_SIZE),
    "maxHashSlotNum": "4096",
    "maxIndexNum": "16384",
}

WRITER = """
import os, sys
from pathlib import Path
import pytest

from codec.message import MessageRecord
from store.message_store import MessageStore
from tests.store.helpers import small_config

root, count, overrides = Path(sys.argv[1]), int(sys.argv[2]), dict(a.split("=") for a in sys.argv[3:])
store = MessageStore(small_config(root, **overrides)).open()
for i in range(count):
    keys = "KEYS\\x01k%05d\\x02" % i
    record = MessageRecord(topic="Tail", queue_id=0, body=b"%05d" % i * 50, properties=keys)
    result = store.put_message(record)
    assert result.ok, result
    if i == count // 2:
        store.flush()
os.kill(os.getpid(), 9)
"""

_UNIT = struct.Struct(">qiq")


def config(root: Path) -> StoreConfig:
    return small_config(root, **OVERRIDES)


def body_of(i: int) -> bytes:
    return b"%05d" % i * 50


def write_and_kill(root: Path) -> None:
    argv = [sys.executable, "-c", WRITER, str(root), str(COUNT)] + [f"{k}={v}" for k, v in OVERRIDES.items()]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, timeout=60)
    assert proc.returncode == -9, proc.stderr.decode()
    assert (root / "abort").exists()


def evict_page_cache(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def resident_bytes(path: Path, start: int) -> int:
    """Bytes of ``path`` from ``start`` on that are in the page cache (``mincore``)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    size = path.stat().st_size
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
    finally:
        os.close(fd)
    try:
        pages = -(-size // PAGE_SIZE)
        vec = (ctypes.c_ubyte * pages)()
        assert libc.mincore(addr, size, vec) == 0, os.strerror(ctypes.get_errno())
        return sum(PAGE_SIZE for i in range(start // PAGE_SIZE, pages) if vec[i] & 1)
    finally:
        libc.munmap(addr, size)


def plant_stale_bytes(root: Path) -> tuple[Path, int, Path, int]:
    """Stale bytes past the ends: in the commit log a torn copy of the last record (TOTALSIZE 0)
    at the end, a whole copy fixed up for the offset right after it and a stray page far on; in
    the consume queue a copy of unit 0 one unit past its end. Returns (commit-log file, its data
    end, consume-queue file, its data end)."""
    commit_log = root / "commitlog" / f"{0:020d}"
    queue = root / "consumequeue" / TOPIC / "0" / f"{0:020d}"
    with open(commit_log, "r+b") as f:
        (size,) = struct.unpack(">i", f.read(4))
        end = COUNT * size  # every record has the same size
        f.seek(end - size)
        last = bytearray(f.read(size))
        assert struct.unpack_from(">q", last, PHYSICAL_OFFSET_POS) == (end - size,)
        torn = bytes(4) + last[4:]
        whole = bytearray(last)
        struct.pack_into(">q", whole, PHYSICAL_OFFSET_POS, end + size)
        f.seek(end)
        f.write(torn + whole)
        f.seek(end + FAR)
        f.write(random.Random(7).randbytes(PAGE_SIZE))
    with open(queue, "r+b") as f:
        unit0 = f.read(CQ_STORE_UNIT_SIZE)
        assert _UNIT.unpack(unit0)[1] == size
        queue_end = COUNT * CQ_STORE_UNIT_SIZE
        f.seek(queue_end + CQ_STORE_UNIT_SIZE)
        f.write(unit0)
    return commit_log, end, queue, queue_end


def read_all(store: MessageStore) -> list[bytes]:
    out: list[bytes] = []
    offset = 0
    while True:
        got = store.get_message(TOPIC, 0, offset, 32, 1 << 30)
        if got.status is not GetMessageStatus.FOUND:
            return out
        out += [r.body for r in iter_records(got.body())]
        offset = got.next_begin_offset


def test_recovery_clears_stale_tail_bytes_reading_only_a_bounded_part(tmp_path: Path) -> None:
    write_and_kill(tmp_path)
    commit_log, end, queue, queue_end = plant_stale_bytes(tmp_path)
    evict_page_cache(tmp_path)

    store = MessageStore(config(tmp_path)).open()
    try:
        assert resident_bytes(commit_log, end) < TAIL_BOUND
        assert resident_bytes(queue, queue_end) < TAIL_BOUND
        for index_file in (tmp_path / "index").iterdir():
            assert resident_bytes(index_file, 0) < TAIL_BOUND
        assert store.commit_log.max_offset == end
        assert read_all(store) == [body_of(i) for i in range(COUNT)]
        with open(commit_log, "rb") as f:
            f.seek(end)
            assert f.read(COMMIT_LOG_SIZE - end).count(0) == COMMIT_LOG_SIZE - end
        with open(queue, "rb") as f:
            f.seek(queue_end)
            assert f.read(CONSUME_QUEUE_SIZE - queue_end).count(0) == CONSUME_QUEUE_SIZE - queue_end
        # The next append lands where the torn record was, and the planted whole record would
        # follow it exactly: had it survived, the next load would take it for a message.
        record = MessageRecord(topic=TOPIC, queue_id=0, body=body_of(COUNT), properties="KEYS\x01k99999\x02")
        result = store.put_message(record)
        assert result.ok
        assert result.append_result is not None
        assert result.append_result.wrote_offset == end
    finally:
        store.close()

    with MessageStore(config(tmp_path)).open() as reopened:
        assert read_all(reopened) == [body_of(i) for i in range(COUNT + 1)]
        assert reopened.commit_log.max_offset == end + (end // COUNT)


def test_data_ranges_never_miss_a_written_byte(tmp_path: Path) -> None:
    """Whatever was written, sparse or reserved, lies in a range :meth:`MappedFile.data_ranges`
    reports; what it leaves out reads as zeros."""
    size = 16 * 1024 * 1024
    rng = random.Random(11)
    mf = MappedFile.create(str(tmp_path), 0, size)
    try:
        mf.reserve(3 * 1024 * 1024)
        written = sorted(rng.randrange(size - 100) for _ in range(40))
        for pos in written:
            mf.mm[pos : pos + 100] = b"\x01" * 100
        ranges = mf.data_ranges(0, size)
        assert all(any(a <= pos and pos + 100 <= b for a, b in ranges) for pos in written)
        outside = bytearray(mf.mm[:])
        for a, b in ranges:
            outside[a:b] = bytes(b - a)
        assert outside == bytes(size)
        mf.zero(0, size)
        assert mf.read_data(0, size) == bytes(size)
        assert mf.mm[:] == bytes(size)
    finally:
        mf.destroy()


@pytest.mark.parametrize("punch", [True, False])
def test_a_tail_of_real_zero_blocks_is_cleared(
    tmp_path: Path, punch: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose tail holds blocks of zeros (preallocated by writing zeros, or copied without
    holes) and stray bytes: clearing it keeps the data before the cut, leaves zeros after it, and
    reads none of the tail when the file system can punch holes (``False``: the fallback that
    reads and rewrites only non-zero pages)."""
    if not punch:
        monkeypatch.setattr(mapped_file, "_FALLOCATE", None)
    size = 64 * 1024 * 1024
    cut = 5 * 1024 * 1024 + 123
    mf = MappedFile.create(str(tmp_path), 0, size)
    try:
        chunk = bytes(1 << 20)
        for pos in range(0, size, len(chunk)):
            mf.write_at(pos, chunk)
        data = random.Random(3).randbytes(cut)
        mf.write_at(0, data)
        for pos in (cut, cut + PAGE_SIZE * 3, 40 * 1024 * 1024, size - 10):
            mf.write_at(pos, b"stale")
        evict_page_cache(tmp_path)
        mf.zero(cut, size - cut)
        if punch:
            assert resident_bytes(Path(mf.path), cut + PAGE_SIZE) < TAIL_BOUND
        assert mf.read_data(0, cut) == data
        assert mf.read_data(cut, size - cut) == bytes(size - cut)
        assert mf.mm[cut:] == bytes(size - cut)
    finally:
        mf.destroy()
