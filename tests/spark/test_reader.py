"""``format("rocketmq")`` batch reads: every column against what was written, the real 5.3.3 broker's
store against what its producer sent, options and their errors, pushdown, pruning, partitions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrameReader, Row, SparkSession
from pyspark.sql import functions as F

from spark.scan import DEFAULT_MAX_BYTES_PER_PARTITION
from tests.spark.stores import BASE_MS, Expected

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "store" / "real-5.3.3"


def by_offset(rows: list[Row]) -> dict[tuple[int, int], dict[str, Any]]:
    return {(r["queue_id"], r["queue_offset"]): r.asDict() for r in rows}


def test_real_broker_store_matches_what_was_sent(session: SparkSession) -> None:
    sent = json.loads((GOLDEN / "sent.json").read_text())["sent"]
    rows = by_offset(session.read.format("rocketmq").load(str(GOLDEN)).collect())
    assert len(rows) == len(sent) == 163
    for kind, i, qid, qoffset, uniq, offset_id, keys, tags in sent:
        row = rows[(int(qid), int(qoffset))]
        assert (row["topic"], row["keys"], row["tags"], row["msg_id"]) == (
            "StoreCompatReal",
            keys,
            tags,
            offset_id,
        )
        # A batch's inner messages carry the batch's UNIQ_KEY last, which is what Java reads.
        assert kind == "BATCH" or row["uniq_key"] == uniq
        assert row["properties"]["UNIQ_KEY"] == row["uniq_key"]
        assert row["body"].decode().startswith(f"message-{i} ")
        assert row["body_crc"] >= 0
        assert row["size"] > len(row["body"])
        assert row["store_host"] == "127.0.0.1:" + str(int(offset_id[8:16], 16))
        assert row["store_timestamp"] >= row["born_timestamp"]


def test_our_store_every_column(session: SparkSession, our_store: tuple[Path, list[Expected]]) -> None:
    root, expected = our_store
    df = session.read.format("rocketmq").load(str(root))
    assert df.schema.fieldNames()[:3] == ["broker", "topic", "queue_id"]
    rows = {r["uniq_key"]: r.asDict() for r in df.collect()}
    assert len(rows) == len(expected) == 320  # the system topic is left out by default
    for e in expected:
        r = rows[e["uniq_key"]]
        assert r["broker"] == str(root.resolve())
        assert (r["topic"], r["queue_id"], r["queue_offset"], r["commit_log_offset"]) == (
            e["topic"], e["queue_id"], e["queue_offset"], e["commit_log_offset"],
        )  # fmt: skip
        assert r["body"] == e["body"]  # compressed ones inflated
        assert (r["keys"], r["tags"], r["properties"]["color"]) == (e["keys"], e["tags"], e["color"])
        assert (r["flag"], r["reconsume_times"], r["sys_flag"] & 1) == (
            e["flag"],
            e["reconsume_times"],
            e["sys_flag"],
        )
        assert r["store_timestamp"] == datetime.fromtimestamp(e["store_ms"] / 1000, UTC).replace(tzinfo=None)
        assert r["born_timestamp"] == datetime.fromtimestamp(e["born_ms"] / 1000, UTC).replace(tzinfo=None)
        assert r["born_host"] == ("[::1]" if e["born_v6"] else "10.0.0.7") + f":{e['born_port']}"
        assert r["msg_id"] == f"7F000001{10911:08X}{e['commit_log_offset']:016X}"


def test_options_select_rows(session: SparkSession, our_store: tuple[Path, list[Expected]]) -> None:
    root, expected = our_store

    def read() -> DataFrameReader:  # a DataFrameReader keeps its options: one per query
        return session.read.format("rocketmq")

    assert read().option("topics", "Audit").load(str(root)).count() == 20
    assert read().option("includeSystemTopics", "true").load(str(root)).count() == 325
    assert read().option("topics", "Audit,rmq_sys_internal").load(str(root)).count() == 25
    start = datetime.fromtimestamp((BASE_MS + 10_000) / 1000, UTC).isoformat()
    windowed = (
        session.read.format("rocketmq").option("startTime", start).option("endTime", str(BASE_MS + 20_000))
        .load(str(root)).select("uniq_key").collect()
    )  # fmt: skip
    assert sorted(r[0] for r in windowed) == [f"UNIQ{i:08d}" for i in range(10, 20)]
    no_body = session.read.format("rocketmq").option("includeBody", "false").load(str(root))
    assert no_body.filter(F.col("body").isNotNull()).count() == 0
    assert no_body.count() == len(expected)


def test_partitions_split_segments_at_record_boundaries(
    session: SparkSession, our_store: tuple[Path, list[Expected]]
) -> None:
    root, _expected = our_store
    whole = session.read.format("rocketmq").load(str(root))
    split = session.read.format("rocketmq").option("maxBytesPerPartition", "4096").load(str(root))
    assert whole.rdd.getNumPartitions() < split.rdd.getNumPartitions()
    # Every segment is cut into 4 KiB ranges up to its last non-zero byte; the zero-filled rest of
    # the live segment gets no partition.
    written = [len(p.read_bytes().rstrip(b"\0")) for p in (root / "commitlog").iterdir()]
    assert split.rdd.getNumPartitions() == sum(-(-n // 4096) for n in written) >= 16 * (len(written) - 1)
    key = ["commit_log_offset", "uniq_key", "body"]
    assert sorted(split.select(key).collect()) == sorted(whole.select(key).collect())
    assert DEFAULT_MAX_BYTES_PER_PARTITION == 128 * 1024 * 1024


def test_pushed_filters_and_pruned_columns(
    session: SparkSession, our_store: tuple[Path, list[Expected]]
) -> None:
    root, expected = our_store
    pushed = session.read.format("rocketmq").option("pushFilters", "true").load(str(root))
    plain = session.read.format("rocketmq").load(str(root))
    middle = sorted(e["commit_log_offset"] for e in expected)[150]
    for condition in (
        (F.col("topic") == "Orders") & (F.col("queue_id").isin(1, 2)),
        (F.col("commit_log_offset") >= middle) & (F.col("queue_offset") < 40),
        F.col("store_timestamp")
        >= datetime.fromtimestamp((BASE_MS + 100_000) / 1000, UTC).replace(tzinfo=None),
        F.col("topic") == "rmq_sys_internal",  # left out unless asked, pushed or not
    ):
        got = sorted(pushed.filter(condition).select("uniq_key").collect())
        assert got == sorted(plain.filter(condition).select("uniq_key").collect())
    assert (
        pushed.filter(F.col("commit_log_offset") >= middle).rdd.getNumPartitions()
        < plain.rdd.getNumPartitions()
    )
    pruned = session.read.format("rocketmq").schema("topic string, size int").load(str(root))
    sizes = {r["topic"]: r["sum(size)"] for r in pruned.groupBy("topic").sum("size").collect()}
    assert set(sizes) == {"Orders", "Audit"}
    assert all(v > 0 for v in sizes.values())


def test_several_stores_by_list_and_glob(
    session: SparkSession, our_store: tuple[Path, list[Expected]]
) -> None:
    root, expected = our_store
    both = session.read.format("rocketmq").load([str(root), str(GOLDEN)])
    assert both.select("broker").distinct().count() == 2
    assert both.count() == len(expected) + 163
    assert session.read.format("rocketmq").load(str(root.parent / "broker-*")).count() == len(expected)


@pytest.mark.parametrize(
    ("options", "path", "message"),
    [
        ({}, "/nonexistent/store", "rocketmq: store directory '/nonexistent/store' does not exist"),
        ({}, str(GOLDEN / "config"), "is not a RocketMQ store directory (it has no commitlog/)"),
        ({}, "/nonexistent/*/x", "rocketmq: no store directory matches"),
        ({"maxBytesPerPartition": "big"}, str(GOLDEN), "option maxbytesperpartition must be an integer"),
        ({"includeBody": "yes"}, str(GOLDEN), "option includebody must be true or false"),
        ({"startTime": "yesterday"}, str(GOLDEN), "option starttime must be ISO-8601 or epoch ms"),
        ({"topicz": "x"}, str(GOLDEN), "rocketmq: unknown option 'topicz'"),
    ],
)
def test_option_and_path_errors_are_one_line(
    session: SparkSession, options: dict[str, str], path: str, message: str
) -> None:
    with pytest.raises(Exception, match="PYTHON_DATA_SOURCE") as info:
        session.read.format("rocketmq").options(**options).load(path).count()
    text = str(info.value)
    assert message in text
    assert text.count('File "') <= 1  # at most the one frame that raises the user-facing error
