"""``readStream.format("rocketmq")`` follows a live store: appends (across segment rolls) show up,
a half-written record is never emitted, and a restart from the checkpoint neither loses nor repeats."""

from __future__ import annotations

import struct
from pathlib import Path

from pyspark.sql import SparkSession

from codec.message import MESSAGE_MAGIC_CODE_V1
from store.message_store import MessageStore
from tests.spark.stores import SEGMENT, Clock, small_config, write_messages


def start_query(session: SparkSession, root: Path, out: Path, checkpoint: Path):  # noqa: ANN201 - StreamingQuery
    stream = session.readStream.format("rocketmq").option("maxBytesPerPartition", "16384").load(str(root))
    return (
        stream.select("uniq_key", "commit_log_offset", "topic")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .start()
    )


def written(session: SparkSession, out: Path) -> list[str]:
    return [r[0] for r in session.read.parquet(str(out)).select("uniq_key").collect()]


def tear_tail(store: MessageStore) -> None:
    """Bytes of a record being copied at the end of the log: magic and fields, TOTALSIZE still 0."""
    end = store.max_phy_offset
    path = Path(store.config.commit_log_dir) / f"{end - end % SEGMENT:020d}"
    with path.open("r+b") as f:
        f.seek(end % SEGMENT)
        f.write(struct.pack(">iI", 0, MESSAGE_MAGIC_CODE_V1) + b"\x11" * 52)


def test_stream_follows_appends_exactly_once_across_restart(session: SparkSession, tmp_path: Path) -> None:
    root, out, checkpoint = tmp_path / "live", tmp_path / "out", tmp_path / "checkpoint"
    clock = Clock()
    store = MessageStore(small_config(root), clock=clock)
    store.open()
    try:
        expected = write_messages(store, clock, 0, 50)
        query = start_query(session, root, out, checkpoint)
        try:
            query.processAllAvailable()
            assert sorted(written(session, out)) == sorted(e["uniq_key"] for e in expected)
            expected += write_messages(store, clock, 50, 120)  # rolls at least one segment
            tear_tail(store)
            query.processAllAvailable()
            assert sorted(written(session, out)) == sorted(e["uniq_key"] for e in expected)
        finally:
            query.stop()
        expected += write_messages(store, clock, 170, 40)  # overwrites the torn bytes
    finally:
        store.close()
    assert len(list((root / "commitlog").iterdir())) >= 3
    query = start_query(session, root, out, checkpoint)
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    got = written(session, out)
    assert len(got) == len(set(got)) == 210
    assert sorted(got) == sorted(e["uniq_key"] for e in expected)
