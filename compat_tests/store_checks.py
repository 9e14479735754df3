"""What a store directory written by the real Apache RocketMQ 5.3.3 broker must look like to our
:class:`store.message_store.MessageStore`, shared by the live test
(``compat_tests/test_store_compat.py``) and the Java-free test on the recorded directory
(``tests/store/test_golden_store.py``).

Both use small files (:data:`SMALL_STORE`) so that commit logs and consume queues roll. Also
:func:`offsets_file`, the persisted consumer offsets every target reads back from its store.
"""

from __future__ import annotations

from pathlib import Path

from codec.hashing import tags_code
from codec.message import decode_record
from codec.message_id import decode_offset_msg_id
from codec.properties import KEYS, TAGS, UNIQ_KEY, decode_properties
from store.config import StoreConfig
from store.message_store import MessageStore

SMALL_STORE = {  # broker.conf keys shared by both sides
    "mappedFileSizeCommitLog": "131072",
    "mappedFileSizeConsumeQueue": "4000",  # 200 units per file
    "maxHashSlotNum": "512",
    "maxIndexNum": "2048",
}
COUNT = 160  # ~130 KiB of records: the commit log rolls once
REAL_TOPIC = "StoreCompatReal"  # the topic the real producer fills


def store_config(root: Path) -> StoreConfig:
    """Our store's configuration for the directory ``root`` with :data:`SMALL_STORE`'s sizes."""
    config, unknown = StoreConfig.from_properties({"storePathRootDir": str(root), **SMALL_STORE})
    assert not unknown
    return config


def check_real_store(root: Path, sent: list[list[str]]) -> None:
    """Every message the real producer sent is where its SendResult says, and found by key.

    ``sent``: the ``SENT``/``BATCH`` rows of ``StoreScenario produce`` (kind, i, queue id, queue
    offset, UNIQ_KEY, offset message id, keys, tags).
    """
    with MessageStore(store_config(root)) as store:
        assert store.last_exit_ok
        assert len(store.commit_log.queue.files) >= 2  # rolled
        per_queue: dict[int, int] = {}
        for kind, i, qid, qoffset, uniq, offset_id, keys, tags in sent:
            got = store.get_message(REAL_TOPIC, int(qid), int(qoffset), 1)
            assert got.status.name == "FOUND", (i, got)
            record = decode_record(got.buffers[0])
            props = decode_properties(record.properties)
            assert (record.queue_id, record.queue_offset) == (int(qid), int(qoffset))
            assert (props[KEYS], props[TAGS]) == (keys, tags)
            # The real broker appends the batch's own properties to each inner message's, so the
            # last UNIQ_KEY (the one Java reads and indexes) is the batch's id.
            assert kind == "BATCH" or props[UNIQ_KEY] == uniq
            assert uniq in record.properties
            assert record.physical_offset == decode_offset_msg_id(offset_id)[2]
            assert record.body.decode().startswith(f"message-{i} ")
            cq = store.queues.find(REAL_TOPIC, int(qid))
            assert cq is not None
            unit = cq.get(int(qoffset))
            assert unit == (record.physical_offset, record.store_size, tags_code(tags))
            for key in (props[UNIQ_KEY], keys.split()[0]):
                found = store.query_message(REAL_TOPIC, key, 32, 0, 2**62)
                assert record.physical_offset in found.offsets, (key, found.offsets)
            per_queue[int(qid)] = max(per_queue.get(int(qid), 0), int(qoffset) + 1)
        for queue_id, count in per_queue.items():
            assert store.get_max_offset_in_queue(REAL_TOPIC, queue_id) == count
        assert len(store.query_message(REAL_TOPIC, "common-0", 64, 0, 2**62).offsets) == COUNT // 5


def offsets_file(store: Path) -> str:
    """``config/consumerOffset.json`` of the store at ``store`` ("" while it does not exist)."""
    path = store / "config" / "consumerOffset.json"
    return path.read_text() if path.is_file() else ""
