"""Network-mode read throughput: our gateway against the real Apache RocketMQ 5.3.3 NameServer +
broker serving the same messages. Part of ``python -m bench.spark`` (:func:`measure`, its
``--network-*`` options), and runnable alone::

    python -m bench.spark.network [--messages 20000] [--body 1024] [--targets gateway,reference]
                                  [--cores 2] [--out bench/results] [--name spark-network-<date>]

Per target (``compat_tests.targets``: ``rmq-gateway standalone`` in a subprocess, and the real
broker from the Maven Central jars): ``messages`` bodies of ``body`` bytes, the file-mode store's
shape (``TAGS``, ``KEYS`` and ``UNIQ_KEY`` properties, plus the producer's ``WAIT``), are sent one by
one over 4 queues of a topic the first send auto-creates, then measured: the pull loop alone in
this process (:func:`spark.pulling.pull_records` over every queue, one connection at a time), and
Spark ``count()`` of the network-mode DataFrame (``local[cores]``; the second of two runs, the first
warming the Python workers), with the CPU time of Spark's JVM and Python workers per message as
in file mode (:func:`bench.spark.cases.process_tree_cpu`; the broker's own CPU is not in it).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.spark import cases
from compat_tests.targets import start_target
from spark.network import parse_network_options, plan_queues, subscription
from spark.pulling import pull_records
from spark.remote import PULL_BATCH, Connection, topic_routes
from tests.spark.netdata import send

TOPIC = "BenchSparkNet"
QUEUES = 4
TARGETS = ("gateway", "reference")


def fill(namesrv: str, messages: int, body: bytes) -> float:
    """Send ``messages`` to the topic's queues round-robin; returns the seconds taken."""
    broker = topic_routes(namesrv, "TBW102")[0]  # the auto-create template names the broker
    began = time.perf_counter()
    with Connection(broker.addr) as conn:
        for i in range(messages):
            send(conn, broker.broker, TOPIC, i % QUEUES, body, f"Tag{i % 8}", f"order-{i}")
    return time.perf_counter() - began


def pull_all(namesrv: str) -> tuple[int, float]:
    options = parse_network_options({"namesrvAddr": namesrv, "topics": TOPIC})
    began = time.perf_counter()
    count = sum(1 for r in plan_queues(options) for _ in pull_records(r, subscription(None), None, 10.0))
    return count, time.perf_counter() - began


def spark_count(session: Any, namesrv: str) -> cases.Measure:
    """``count()`` of the topic through the network reader: the second of two runs, with CPU."""
    df = session.read.format("rocketmq").option("namesrvAddr", namesrv).option("topics", TOPIC).load()
    df.count()
    jvm = cases.jvm_pid(session)
    before = cases.process_tree_cpu(jvm)
    began = time.perf_counter()
    count = df.count()
    measure = cases.Measure("network count", True, "network", time.perf_counter() - began, count)
    cases.add_cpu(measure, jvm, before, cases.process_tree_cpu(jvm))
    return measure


def measure_target(session: Any, name: str, messages: int, body: int) -> dict[str, Any]:
    """Serve ``messages`` from a fresh ``name`` target and read them back; one result row."""
    with tempfile.TemporaryDirectory(prefix=f"bench-net-{name}-") as work:
        target = start_target(name, Path(work))
        try:
            sent_s = fill(target.namesrv_addr, messages, b"x" * body)
            pulled, pull_s = pull_all(target.namesrv_addr)
            counted = spark_count(session, target.namesrv_addr)
        finally:
            target.stop()
    if not pulled == counted.rows == messages:
        raise RuntimeError(f"{name}: sent {messages}, pulled {pulled}, Spark counted {counted.rows}")
    cpu = {"jvm_cpu_us_per_row": None, "python_cpu_us_per_row": None, "cores_busy": None}
    if counted.jvm_cpu_s is not None and counted.python_cpu_s is not None:
        cpu = {
            "jvm_cpu_us_per_row": counted.jvm_cpu_s / messages * 1e6,
            "python_cpu_us_per_row": counted.python_cpu_s / messages * 1e6,
            "cores_busy": (counted.jvm_cpu_s + counted.python_cpu_s) / counted.seconds,
        }
    return {
        "target": name,
        "messages": messages,
        "body_bytes": body,
        "send_per_s": messages / sent_s,
        "pull_per_s": messages / pull_s,
        "count_seconds": counted.seconds,
        "count_per_s": messages / counted.seconds,
        **cpu,
    }


def measure(targets: list[str], messages: int, body: int, cores: int) -> list[dict[str, Any]]:
    """One row per target, all read by one ``local[cores]`` session."""
    session = cases.spark_session(cores)
    try:
        return [measure_target(session, name, messages, body) for name in targets]
    finally:
        session.stop()


def markdown(rows: list[dict[str, Any]], cores: int) -> list[str]:
    """The network-mode table (lines), for this module's report and ``bench.spark``'s."""
    if not rows:
        return []
    first = rows[0]
    lines = [
        f"Network mode: {first['messages']:,} messages of {first['body_bytes']} B over {QUEUES} queues, "
        f"sent one by one, then read back by PULL_MESSAGE ({PULL_BATCH} asked per pull; each broker "
        f"answers at most its own transfer limits); Spark `local[{cores}]`.",
        "",
        "| target | send (msgs/s) | pull loop alone (msgs/s) | Spark count() (msgs/s) "
        "| CPU µs/msg JVM + Python | cores busy |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cpu, busy = "-", "-"
        if r["jvm_cpu_us_per_row"] is not None:
            cpu = f"{r['jvm_cpu_us_per_row']:.1f} + {r['python_cpu_us_per_row']:.1f}"
            busy = f"{r['cores_busy']:.2f}"
        lines.append(
            f"| {r['target']} | {r['send_per_s']:,.0f} | {r['pull_per_s']:,.0f} | {r['count_per_s']:,.0f} "
            f"| {cpu} | {busy} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--body", type=int, default=1024)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--name", default=f"spark-network-{datetime.now(UTC):%Y-%m-%d}")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = measure(args.targets.split(","), args.messages, args.body, args.cores)
    lines = [f"# Spark network mode, {datetime.now(UTC):%Y-%m-%d}", "", *markdown(rows, args.cores), ""]
    load_after = os.getloadavg()[0]
    lines.append(f"Machine load (1-min average) at start and end: {load_before:.2f} and {load_after:.2f}.")
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"{args.name}.md").write_text(text)


if __name__ == "__main__":
    main()
