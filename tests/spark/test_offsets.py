"""``format("rocketmq.offsets")``: committed offsets (fastjson's unquoted keys) joined with queue maxima."""

from __future__ import annotations

import shutil
from pathlib import Path

from pyspark.sql import SparkSession

from tests.spark.stores import Expected


def test_offsets_and_lag(
    session: SparkSession, our_store: tuple[Path, list[Expected]], tmp_path: Path
) -> None:
    root = tmp_path / "store"
    shutil.copytree(our_store[0], root)
    per_queue: dict[int, int] = {}
    for e in our_store[1]:
        if e["topic"] == "Orders":
            per_queue[e["queue_id"]] = max(per_queue.get(e["queue_id"], 0), e["queue_offset"] + 1)
    (root / "config").mkdir(exist_ok=True)
    # What the Java broker writes: fastjson, integer map keys unquoted.
    (root / "config" / "consumerOffset.json").write_text(
        '{"offsetTable":{"Orders@billing":{0:10,1:75,2:0,3:3},"Audit@audit":{0:5},"Gone@old":{0:7}}}'
    )
    rows = {
        (r["group"], r["topic"], r["queue_id"]): r.asDict()
        for r in session.read.format("rocketmq.offsets").load(str(root)).collect()
    }
    assert len(rows) == 6
    for qid, committed in {0: 10, 1: 75, 2: 0, 3: 3}.items():
        row = rows[("billing", "Orders", qid)]
        assert (row["consumer_offset"], row["max_offset"]) == (committed, per_queue[qid])
        assert row["lag"] == per_queue[qid] - committed
    assert rows[("audit", "Audit", 0)]["max_offset"] == 5  # 20 Audit messages over 4 queues
    assert rows[("old", "Gone", 0)] | {"broker": ""} == {
        "broker": "", "group": "old", "topic": "Gone", "queue_id": 0,
        "consumer_offset": 7, "max_offset": 0, "lag": 0,
    }  # fmt: skip


def test_offsets_of_the_real_broker_store(session: SparkSession) -> None:
    golden = Path(__file__).resolve().parent.parent / "golden" / "store" / "real-5.3.3"
    assert session.read.format("rocketmq.offsets").load(str(golden)).count() == 0  # its table is empty
