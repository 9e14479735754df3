"""``readStream.format("rocketmq")`` follows a live store: appends (across segment rolls) show up,
a record still being written is never emitted, and a restart from the checkpoint neither loses nor
repeats a message.

Two ways a record is half-written at the end of the log are covered: our store's (every byte but
TOTALSIZE, which is written last) while :class:`store.message_store.MessageStore` keeps appending,
and a Java broker's (the record copied front to back into a zero-filled file), by copying a finished
store's bytes into a live directory the way the broker's put would.
"""

from __future__ import annotations

import itertools
import logging
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from codec.message import MESSAGE_MAGIC_CODE_V1, decode_record
from spark.layout import list_segments, open_map
from spark.options import parse_options
from spark.records import walk
from spark.source import MESSAGE_SCHEMA, StoreStreamReader
from store.message_store import MessageStore
from tests.spark.stores import SEGMENT, Clock, build_store, small_config, write_messages

logger = logging.getLogger(__name__)

PARTITION_BYTES = "16384"  # several partitions per micro-batch


# PythonStreamingSourceRunner starts the stream reader's Python process through
# PythonWorkerFactory.createSimpleWorker, which waits a hard-coded 10 s for it to connect back.
# On the loaded CI machine (JVM brokers of other suites on 2 cores) that start has taken longer
# and the query died while INITIALIZING, before reading anything. Such a query is started again
# from its checkpoint (what a user's scheduler would do), at most START_ATTEMPTS times.
START_ATTEMPTS = 3
CONNECT_BACK_FAILURE = "Python worker failed to connect back"


class Stream:
    """A query copying the stream's keys into Parquet files under ``out`` (an exactly-once sink)."""

    def __init__(self, session: SparkSession, root: Path, out: Path, checkpoint: Path, **options: str):
        self.session, self.root, self.out, self.checkpoint = session, root, out, checkpoint
        self.options = {"maxBytesPerPartition": PARTITION_BYTES, **options}
        self.query: StreamingQuery | None = None

    def start(self) -> None:
        self.query = (
            self.session.readStream.format("rocketmq")
            .options(**self.options)
            .load(str(self.root))
            .select("uniq_key", "commit_log_offset", "topic")
            .writeStream.format("parquet")
            .option("path", str(self.out))
            .option("checkpointLocation", str(self.checkpoint))
            .start()
        )

    def process_all_available(self) -> None:
        for attempt in range(1, START_ATTEMPTS + 1):
            assert self.query is not None
            try:
                self.query.processAllAvailable()
                return
            except StreamingQueryException as err:
                never_ran = self.query.lastProgress is None
                if attempt == START_ATTEMPTS or not never_ran or CONNECT_BACK_FAILURE not in str(err):
                    raise
            logger.warning("query died initializing (attempt %d): %s", attempt, CONNECT_BACK_FAILURE)
            self.start()

    def stop(self) -> None:
        if self.query is not None:
            self.query.stop()


@contextmanager
def running(stream: Stream) -> Iterator[Stream]:
    stream.start()
    try:
        yield stream
    finally:
        stream.stop()


def written(session: SparkSession, out: Path) -> list[str | None]:
    """Every key the sink committed (Parquet files listed in its ``_spark_metadata`` log), sorted;
    a row with no UNIQ_KEY (a record emitted with its properties cut short) shows as None."""
    keys = [r[0] for r in session.read.parquet(str(out)).select("uniq_key").collect()]
    return sorted(keys, key=lambda k: (k is not None, k or ""))


def tear_tail(store: MessageStore) -> None:
    """Our store's torn record at the end of the log: magic and fields written, TOTALSIZE still 0."""
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
        with running(Stream(session, root, out, checkpoint)) as query:
            query.process_all_available()
            assert written(session, out) == sorted(e["uniq_key"] for e in expected)
            expected += write_messages(store, clock, 50, 150)
            assert store.max_phy_offset > SEGMENT  # the query ran while the log rolled a segment
            tear_tail(store)
            query.process_all_available()
            assert written(session, out) == sorted(e["uniq_key"] for e in expected)
        expected += write_messages(store, clock, 200, 120)  # the first overwrites the torn bytes
        assert store.max_phy_offset > 2 * SEGMENT  # and another roll while the query was stopped
    finally:
        store.close()
    with running(Stream(session, root, out, checkpoint)) as query:
        query.process_all_available()
    got = written(session, out)
    assert len(got) == len(set(got)) == 320
    assert got == sorted(e["uniq_key"] for e in expected)


def record_spans(root: Path) -> list[tuple[int, int]]:
    """``(start, end)`` of every record of a closed one-segment store."""
    (seg,) = list_segments(str(root))
    mm = open_map(seg.path)
    assert mm is not None
    starts, end, _ = walk(mm, 0, len(mm))
    bounds = [*starts, end]
    return list(itertools.pairwise(bounds))


def copier(source: Path, live: Path) -> tuple[bytes, Path]:
    """The source store's segment bytes and an empty, zero-filled live segment of the same size."""
    (seg,) = list_segments(str(source))
    data = Path(seg.path).read_bytes()
    (live / "commitlog").mkdir(parents=True)
    target = live / "commitlog" / Path(seg.path).name
    target.write_bytes(bytes(len(data)))
    return data, target


def copy_to(data: bytes, target: Path, begin: int, end: int) -> None:
    with target.open("r+b") as f:
        f.seek(begin)
        f.write(data[begin:end])


def test_record_copied_front_to_back_is_emitted_only_when_complete(
    session: SparkSession, tmp_path: Path
) -> None:
    source, live = tmp_path / "source", tmp_path / "live"
    expected = build_store(source, count=30)
    orders = [e["uniq_key"] for e in expected if e["topic"] == "Orders"]
    spans = record_spans(source)
    data, target = copier(source, live)
    start, end = spans[29]  # Orders message 29, the last Orders record
    props_len = len(decode_record(data, start).properties.encode())
    in_body, in_props = start + 120, end - props_len // 2
    copy_to(data, target, 0, in_body)
    # includeBody=false: checkCRC is off for the read, but the tail's BODYCRC is still checked.
    options = {"includeBody": "false"}
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    with running(Stream(session, live, out, checkpoint, **options)) as query:
        query.process_all_available()
        assert written(session, out) == orders[:29]
        copy_to(data, target, in_body, in_props)  # lengths and body in place, properties half
        query.process_all_available()
        assert written(session, out) == orders[:29]
        copy_to(data, target, in_props, end)
        query.process_all_available()
        assert written(session, out) == orders


# Records cut at every byte: the first, a compressed body (3), an IPv6 born host (5), the last.
CUT_RECORDS = (0, 3, 5, -1)


def test_offsets_never_end_inside_a_record_being_written(tmp_path: Path) -> None:
    """Every cut of a record copied front to back, and our store's every-byte-but-TOTALSIZE, leave
    the stream's latest offset at that record's start; the whole record moves it to its end."""
    source, live = tmp_path / "source", tmp_path / "live"
    build_store(source, count=12)
    spans = record_spans(source)
    data, target = copier(source, live)
    reader = StoreStreamReader([str(live)], parse_options({"includeBody": "false"}), MESSAGE_SCHEMA)
    path = str(live)

    def latest() -> int:
        return int(reader.latestOffset({"offsets": {path: 0}})["offsets"][path])

    for start, end in sorted(spans[k] for k in CUT_RECORDS):
        copy_to(data, target, 0, start)  # the records before it are complete
        for cut in range(start + 1, end):
            copy_to(data, target, start, cut)
            assert latest() == start, f"record [{start}, {end}) copied up to {cut}"
            copy_to(bytes(len(data)), target, start, cut)
        copy_to(data, target, start + 4, end)  # our store: TOTALSIZE last
        assert latest() == start
        copy_to(data, target, start, start + 4)
        assert latest() == end
