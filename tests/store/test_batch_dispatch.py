"""A put batch writes its consume-queue units and index entries as blocks
(``CommitLogDispatcher.dispatch_batch``); the files must hold the very bytes the record-by-record
dispatch writes. The oracle is recovery, which re-dispatches every record of the commit log one by
one: a store rebuilt from the same commit log has byte-identical consume queues and index files."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from codec.message import MessageRecord, MessageSysFlag
from codec.properties import KEYS, TAGS, UNIQ_KEY, encode_properties
from store.index_file import HEADER
from store.index_service import IndexService
from store.message_store import MessageStore
from store.results import PutMessageStatus
from tests.store.helpers import small_config

START_MS = 1_700_000_000_000
KINDS = (
    MessageSysFlag.TRANSACTION_NOT_TYPE,
    MessageSysFlag.TRANSACTION_PREPARED_TYPE,
    MessageSysFlag.TRANSACTION_COMMIT_TYPE,
    MessageSysFlag.TRANSACTION_ROLLBACK_TYPE,
)


class Clock:
    def __init__(self) -> None:
        self.now = START_MS

    def __call__(self) -> int:
        return self.now


def record(queue_id: int, i: int, keys: str, kind: int, shared_uniq: bool) -> MessageRecord:
    props = {TAGS: f"Tag{i % 3}", UNIQ_KEY: "BATCH" if shared_uniq else f"UNIQ{i:08d}"}
    if keys:
        props[KEYS] = keys
    return MessageRecord(
        topic="T",
        queue_id=queue_id,
        body=b"b" * (40 + i % 7),
        properties=encode_properties(props),
        born_timestamp=START_MS + i,
        sys_flag=kind,
    )


batch_st = st.tuples(
    st.integers(0, 1),  # queue id
    st.lists(
        st.tuples(
            st.sampled_from(["", "k1", "k1 k2", "  k3  k1 ", "shared"]),
            st.sampled_from(KINDS),
        ),
        min_size=1,
        max_size=24,
    ),
    st.booleans(),  # the records share one UNIQ_KEY
    st.integers(0, 3_000),  # ms since the previous batch
)


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def indexes(root: Path) -> list[bytes]:
    """The index files in order, not their names (the clock when each was created), without one
    that holds no entry: a put creates the file before it knows whether a record has keys."""
    return [data for data in files_under(root / "index").values() if HEADER.unpack_from(data)[5] > 1]


@settings(max_examples=25, deadline=None)
@given(batches=st.lists(batch_st, min_size=1, max_size=30))
def test_block_dispatch_writes_the_bytes_of_record_by_record_dispatch(
    batches: list[tuple[int, list[tuple[str, int]], bool, int]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        written, rebuilt = root / "written", root / "rebuilt"
        clock = Clock()
        i = 0
        with MessageStore(small_config(written), clock=clock) as store:
            for queue_id, entries, shared_uniq, gap_ms in batches:
                clock.now += gap_ms
                msgs = []
                for keys, kind in entries:
                    msgs.append(record(queue_id, i, keys, kind, shared_uniq))
                    i += 1
                assert store.put_messages(msgs).status == PutMessageStatus.PUT_OK
        shutil.copytree(written / "commitlog", rebuilt / "commitlog")
        (rebuilt / "abort").touch()  # no checkpoint, no queues, no index: everything re-dispatched
        clock.now = START_MS
        with MessageStore(small_config(rebuilt), clock=clock) as store:
            pass
        assert files_under(rebuilt / "consumequeue") == files_under(written / "consumequeue")
        assert indexes(rebuilt) == indexes(written)


def test_index_batch_rolls_to_a_new_file_mid_record_as_record_by_record(tmp_path: Path) -> None:
    """Keys of one record split across a full index file and the next, colliding slots."""

    def service(name: str) -> IndexService:
        index = IndexService(str(tmp_path / name), hash_slot_num=4, index_num=8, clock=lambda: START_MS)
        index.load()
        return index

    records = [([f"k{j}", "same", f"x{j % 2}"], 100 * j, START_MS + 700 * j) for j in range(1, 9)]
    one_by_one, batched = service("one"), service("batch")
    for keys, offset, ts in records:
        one_by_one.build("T", keys, offset, ts)
    batched.build_batch("T", records[:3])
    batched.build_batch("T", records[3:])
    one_by_one.close()
    batched.close()
    assert len(files_under(tmp_path / "batch")) == 4  # 24 keys, 7 entries a file (entry 0 unused)
    assert files_under(tmp_path / "batch") == files_under(tmp_path / "one")
