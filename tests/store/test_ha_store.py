"""The store's side of replication (store/ha.py): what a master sends from an offset, a slave's
append of it, the records it dispatches, byte-identical files, and a restart in between."""

from __future__ import annotations

from pathlib import Path

import pytest

from codec.message import MessageRecord, iter_records
from codec.properties import KEYS, TAGS, UNIQ_KEY, encode_properties
from store.dispatch import DispatchRequest
from store.ha import ReplicaAppender, ReplicationError, transfer_data, transfer_start
from store.message_store import MessageStore
from store.results import GetMessageStatus, PutMessageStatus
from tests.store.helpers import SEGMENT, small_config

BATCH = 1000  # bytes per transfer: records (~250 bytes) are cut between transfers


def message(queue_id: int, i: int) -> MessageRecord:
    props = {TAGS: "TagA", KEYS: f"key-{i}", UNIQ_KEY: f"UNIQ{i:08d}"}
    return MessageRecord(
        topic="HaTopic",
        queue_id=queue_id,
        body=f"replicated body {i} ".encode() * 6,
        properties=encode_properties(props),
        born_timestamp=1_700_000_000_000 + i,
        born_port=1234,
        store_port=10911,
    )


def put(store: MessageStore, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        assert store.put_message(message(i % 2, i)).status is PutMessageStatus.PUT_OK


def replicate(
    master: MessageStore, slave: ReplicaAppender, limit: int | None = None, batch: int = BATCH
) -> int:
    """Run the transfer loop as the HA connection does; returns the number of transfers."""
    offset = transfer_start(master, slave.max_offset)
    transfers = 0
    while limit is None or transfers < limit:
        data = transfer_data(master, offset, batch)
        if data is None:
            break
        slave.append(offset, data)
        offset += len(data)
        transfers += 1
    return transfers


def commit_log_files(store: MessageStore) -> dict[str, bytes]:
    return {Path(mf.path).name: bytes(mf.mm[:]) for mf in store.commit_log.queue.files}


def pulled(store: MessageStore, queue_id: int) -> list[bytes]:
    result = store.get_message("HaTopic", queue_id, 0, 1000, max_total_msg_size=1 << 30)
    assert result.status is GetMessageStatus.FOUND
    return [r.body for r in iter_records(b"".join(result.buffers))]


@pytest.mark.parametrize("batch", [3, 1000, 32 * 1024])
def test_slave_files_are_byte_identical_and_serve_every_record(tmp_path: Path, batch: int) -> None:
    arrived: list[DispatchRequest] = []
    with (
        MessageStore(small_config(tmp_path / "m")) as master,
        MessageStore(
            small_config(tmp_path / "s", brokerRole="SLAVE"), on_arrival=lambda req, _p: arrived.append(req)
        ) as slave_store,
    ):
        slave = ReplicaAppender(slave_store)
        put(master, 10)
        replicate(master, slave, batch=batch)  # an empty slave (offset 0) gets the master's one file
        put(master, 590, start=10)  # ~150 KiB: three commit-log files of 64 KiB, two blank markers
        assert len(master.commit_log.queue.files) >= 3
        replicate(master, slave, batch=batch)
        assert slave.max_offset == master.max_phy_offset
        assert commit_log_files(slave_store) == commit_log_files(master)
        for queue_id in (0, 1):
            assert pulled(slave_store, queue_id) == pulled(master, queue_id)
        assert len(arrived) == 600
        assert slave_store.query_message("HaTopic", "key-17", 10, 0, 2**62).buffers
        assert slave_store.queue_offsets[("HaTopic", 0)] == 300
        refused = slave_store.put_message(message(0, 1))
        assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_a_cut_record_waits_for_its_rest_and_a_restart_resumes(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path / "m")) as master:
        put(master, 40)
        with MessageStore(small_config(tmp_path / "s", brokerRole="SLAVE")) as slave_store:
            slave = ReplicaAppender(slave_store)
            replicate(master, slave, limit=3)  # 3000 bytes: the 12th record is cut
            assert slave.max_offset == 3 * BATCH
            assert slave.dispatched < slave.max_offset
            whole = [r for r in master.commit_log.iter_records() if r[0] + r[1].store_size <= 3 * BATCH]
            assert slave.dispatched == whole[-1][0] + whole[-1][1].store_size
            assert len(pulled(slave_store, 0)) + len(pulled(slave_store, 1)) == len(whole)
            # Byte-identical but for the cut record's TOTALSIZE, which waits for the rest.
            cut = slave.dispatched
            mine, theirs = commit_log_files(slave_store), commit_log_files(master)
            name = next(iter(mine))
            assert mine[name][:cut] == theirs[name][:cut]
            assert mine[name][cut : cut + 4] == bytes(4)
            assert mine[name][cut + 4 : 3 * BATCH] == theirs[name][cut + 4 : 3 * BATCH]
        # Reopened (as after a crash) the store drops the cut record; the master resends it.
        with MessageStore(small_config(tmp_path / "s", brokerRole="SLAVE")) as slave_store:
            slave = ReplicaAppender(slave_store)
            resumed_at = slave.max_offset
            assert resumed_at < 3 * BATCH
            put(master, 10, start=40)
            replicate(master, slave)
            assert transfer_start(master, resumed_at) == resumed_at
            assert commit_log_files(slave_store) == commit_log_files(master)
            assert pulled(slave_store, 0) == pulled(master, 0)
            assert pulled(slave_store, 1) == pulled(master, 1)


def test_an_empty_slave_starts_at_the_masters_last_file_and_a_wrong_offset_is_refused(
    tmp_path: Path,
) -> None:
    with (
        MessageStore(small_config(tmp_path / "m")) as master,
        MessageStore(small_config(tmp_path / "s", brokerRole="SLAVE")) as slave_store,
    ):
        put(master, 400)
        last = master.commit_log.queue.files[-1].file_from_offset
        assert last >= SEGMENT
        assert transfer_start(master, 0) == last
        slave = ReplicaAppender(slave_store)
        slave.append(0, transfer_data(master, 0, BATCH) or b"")
        with pytest.raises(ReplicationError, match="SLAVE: 1000 MASTER: 2000"):
            slave.append(2000, b"x")
        assert transfer_data(master, master.max_phy_offset, BATCH) is None


def test_an_empty_slave_copies_the_masters_last_file_and_serves_its_records(tmp_path: Path) -> None:
    with (
        MessageStore(small_config(tmp_path / "m")) as master,
        MessageStore(small_config(tmp_path / "s", brokerRole="SLAVE")) as slave_store,
    ):
        put(master, 400)
        slave = ReplicaAppender(slave_store)
        replicate(master, slave)
        last = master.commit_log.queue.files[-1]
        assert commit_log_files(slave_store) == {Path(last.path).name: bytes(last.mm[:])}
        for queue_id in (0, 1):
            first = slave_store.get_min_offset_in_queue("HaTopic", queue_id)
            assert first > 0
            result = slave_store.get_message("HaTopic", queue_id, first, 1000, max_total_msg_size=1 << 30)
            theirs = master.get_message("HaTopic", queue_id, first, 1000, max_total_msg_size=1 << 30)
            assert result.buffers == theirs.buffers
