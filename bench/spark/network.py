"""``python -m bench.spark.network``: network-mode read throughput, our gateway against the real
Apache RocketMQ 5.3.3 NameServer + broker serving the same messages.

Usage::

    python -m bench.spark.network [--messages 20000] [--body 1024] [--targets gateway,reference]
                                  [--out bench/results] [--name spark-network-<date>]

Per target (``compat_tests.targets``: ``rmq-gateway standalone`` in a subprocess, and the real
broker from the Maven Central jars): ``--messages`` bodies of ``--body`` bytes are sent one by one
over 4 queues of a topic the first send auto-creates, then measured: the pull loop alone in this
process (:func:`spark.pulling.pull_records` over every queue, one connection at a time), and
Spark ``count()`` of the network-mode DataFrame (``local[2]``; the second of two runs, the first
warming the Python workers). Prints a markdown table and writes ``<out>/<name>.md``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from compat_tests.targets import start_target
from spark.network import parse_network_options, plan_queues, subscription
from spark.pulling import pull_records
from spark.remote import PULL_BATCH, Connection, topic_routes
from spark.testing import local_session
from tests.spark.netdata import send

TOPIC = "BenchSparkNet"
QUEUES = 4


def fill(namesrv: str, messages: int, body: bytes) -> float:
    """Send ``messages`` to the topic's queues round-robin; returns the seconds taken."""
    broker = topic_routes(namesrv, "TBW102")[0]  # the auto-create template names the broker
    began = time.perf_counter()
    with Connection(broker.addr) as conn:
        for i in range(messages):
            send(conn, broker.broker, TOPIC, i % QUEUES, body, "bench", None)
    return time.perf_counter() - began


def pull_all(namesrv: str) -> tuple[int, float]:
    options = parse_network_options({"namesrvAddr": namesrv, "topics": TOPIC})
    began = time.perf_counter()
    count = sum(1 for r in plan_queues(options) for _ in pull_records(r, subscription(None), None, 10.0))
    return count, time.perf_counter() - began


def spark_count(namesrv: str) -> tuple[int, float]:
    session = local_session("local[2]", "bench-spark-network")
    df = session.read.format("rocketmq").option("namesrvAddr", namesrv).option("topics", TOPIC).load()
    df.count()
    began = time.perf_counter()
    count = df.count()
    return count, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--body", type=int, default=1024)
    parser.add_argument("--targets", default="gateway,reference")
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--name", default=f"spark-network-{datetime.now(UTC):%Y-%m-%d}")
    args = parser.parse_args()
    lines = [
        f"# Spark network mode: {args.messages} messages of {args.body} B, 4 queues, local[2]",
        "",
        "| target | send (msgs/s) | pull loop alone (msgs/s) | Spark count() (msgs/s) |",
        "|---|---|---|---|",
    ]
    load_before = os.getloadavg()[0]
    for name in args.targets.split(","):
        with tempfile.TemporaryDirectory(prefix=f"bench-net-{name}-") as work:
            target = start_target(name, Path(work))
            try:
                sent_s = fill(target.namesrv_addr, args.messages, b"x" * args.body)
                pulled, pull_s = pull_all(target.namesrv_addr)
                counted, count_s = spark_count(target.namesrv_addr)
            finally:
                target.stop()
        assert pulled == counted == args.messages, (name, pulled, counted)
        n = args.messages
        lines.append(f"| {name} | {n / sent_s:,.0f} | {n / pull_s:,.0f} | {n / count_s:,.0f} |")
        print(lines[-1], flush=True)
    lines += [
        "",
        f"{PULL_BATCH} messages asked per pull (each broker answers at most its own transfer limits). "
        f"Machine load (1-min average) at start and end: {load_before:.2f} and {os.getloadavg()[0]:.2f}.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"{args.name}.md").write_text(text)


if __name__ == "__main__":
    main()
