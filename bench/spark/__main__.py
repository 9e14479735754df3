"""``python -m bench.spark``: Spark reader throughput against a raw read of the same commit log.

Usage::

    python -m bench.spark [--size-mib 1024] [--rounds 1] [--cores N] [--store DIR [--keep]]
                          [--no-cold] [--out bench/results] [--name spark-<date>]
                          [--network-messages 20000] [--network-targets gateway,reference]
                          [--no-network]

Builds a store of 1 KiB messages (:mod:`bench.spark.store`; in a temporary directory, removed
afterwards, unless ``--store`` names one: an existing benchmark store there of at least the size
asked is reused, and ``--keep`` keeps it), then measures in the same run, per round
(:mod:`bench.spark.cases`): the raw sequential read, cold (when root: page cache dropped) and
warm; the reader alone in one process; Spark ``count()`` and a full ``noop`` scan, each with
``includeBody`` false and true (warm), and cold: ``count()`` with and without bodies and the
full-row scan with bodies, each as a ratio of the cold raw read. Then network mode
(:mod:`bench.spark.network`, unless ``--no-network``): ``--network-messages`` messages of the same
shape, served by our gateway and by the real 5.3.3 broker, each read back by the pull loop alone
and by Spark ``count()``: 1 GiB sent one message at a time would take longer than the rest of the
run, so network mode reads fewer messages and is compared by rate and CPU per message. Prints
markdown tables and writes ``<out>/<name>.json`` and ``.md`` (:mod:`bench.spark.report`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.spark import cases, network
from bench.spark.report import markdown, summarize
from bench.spark.store import BODY_BYTES, QUEUES, TOPICS, BuiltStore, build_store

logger = logging.getLogger(__name__)

RESULTS = Path(__file__).resolve().parent.parent / "results"
MARKER = "bench-store.json"  # what build_store made, so a kept store can be reused


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.spark", description=__doc__.split("\n")[0])
    p.add_argument("--size-mib", type=int, default=1024, help="commit-log size to build (default 1024)")
    p.add_argument("--rounds", type=int, default=1, help="measurement rounds (default 1)")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="local[N] (default: CPU count)")
    p.add_argument("--store", type=Path, default=None, help="store directory to build in or reuse")
    p.add_argument("--keep", action="store_true", help="keep the store directory afterwards")
    p.add_argument("--no-cold", action="store_true", help="never drop the page cache")
    p.add_argument("--out", type=Path, default=RESULTS, help="directory of the .json and .md results")
    p.add_argument("--name", default=None, help="result file name (default spark-YYYY-MM-DD)")
    p.add_argument("--network-messages", type=int, default=20_000, help="messages per network target")
    p.add_argument(
        "--network-targets", default=",".join(network.TARGETS), help="comma-separated: gateway, reference"
    )
    p.add_argument("--no-network", action="store_true", help="skip network mode")
    args = p.parse_args(argv)
    if args.size_mib < 1 or args.rounds < 1 or args.cores < 1 or args.network_messages < 1:
        p.error("--size-mib, --rounds, --cores and --network-messages must be positive")
    targets = [t for t in args.network_targets.split(",") if t]
    if not targets or set(targets) - set(network.TARGETS):
        p.error(f"--network-targets: a comma-separated list of {', '.join(network.TARGETS)}")
    args.network_targets = targets
    return args


def obtain_store(root: Path, size_bytes: int) -> BuiltStore:
    """Reuse the benchmark store at ``root`` when it is at least ``size_bytes``, else build anew."""
    marker = root / MARKER
    if marker.is_file():
        meta = json.loads(marker.read_text())
        if meta["data_bytes"] >= size_bytes:
            segments = sorted((root / "commitlog").iterdir())
            logger.info("reusing the store in %s", root)
            return BuiltStore(root, meta["messages"], meta["data_bytes"], segments, meta["build_s"])
    if root.exists():
        shutil.rmtree(root)
    built = build_store(root, size_bytes)
    marker.write_text(
        json.dumps({"messages": built.messages, "data_bytes": built.data_bytes, "build_s": built.build_s})
    )
    return built


def measure(built: BuiltStore, rounds: int, cores: int, cold: bool) -> tuple[list[dict[str, Any]], str]:
    """Every case, ``rounds`` times; returns the rows and the Spark version."""
    session = cases.spark_session(cores)
    rows: list[dict[str, Any]] = []

    def keep(m: cases.Measure) -> None:
        if m.case != "raw read" and m.rows not in (-1, built.messages):
            raise RuntimeError(f"{m.case}: {m.rows} rows, expected {built.messages}")
        m.rows = built.messages if m.case != "raw read" else 0
        rows.append(m.row(built.data_bytes))
        logger.info("%s body=%s %s: %.2f s", m.case, m.include_body, m.cache, m.seconds)

    try:
        # Untimed: start Spark's Python workers and import the reader in this process too.
        session.read.format("rocketmq").load(str(built.root)).limit(1).collect()
        cases.warm_up_reader(built.root)
        for _ in range(rounds):
            if cold:
                keep(cases.raw_read(built.segments, built.data_bytes, cold=True))
            keep(cases.raw_read(built.segments, built.data_bytes, cold=False))
            for body in (False, True):
                keep(cases.reader_case(built.root, body, cold=False))
                keep(cases.spark_case(session, built.root, "count", body, cold=False))
                keep(cases.spark_case(session, built.root, "scan", body, cold=False))
            if cold:  # the goal's cases: each against the cold raw read of the same round
                for case, body in (("count", False), ("count", True), ("scan", True)):
                    keep(cases.spark_case(session, built.root, case, body, cold=True))
        version = str(session.version)
    finally:
        session.stop()
    return rows, version


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    cold = not args.no_cold and cases.can_drop_caches()
    load_before = os.getloadavg()[0]
    parent = None if args.store is not None else Path(tempfile.mkdtemp(prefix="rmq-spark-bench-"))
    root = args.store if args.store is not None else parent / "store"  # type: ignore[operator]
    try:
        built = obtain_store(root, args.size_mib * 2**20)
        rows, version = measure(built, args.rounds, args.cores, cold)
    finally:
        if parent is not None:
            shutil.rmtree(parent, ignore_errors=True)
        elif not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    net_rows = []
    if not args.no_network:
        net_rows = network.measure(args.network_targets, args.network_messages, BODY_BYTES, args.cores)
    date = time.strftime("%Y-%m-%d", time.gmtime())
    meta = {
        "date": date,
        "messages": built.messages,
        "body_bytes": BODY_BYTES,
        "data_bytes": built.data_bytes,
        "segments": len(built.segments),
        "topics": len(TOPICS),
        "queues": QUEUES,
        "build_s": built.build_s,
        "rounds": args.rounds,
        "cores": args.cores,
        "cpus": os.cpu_count(),
        "spark": version,
        "python": platform.python_version(),
        "load_avg_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],  # at start, at end
        "cache_note": (
            "cold rows read after `echo 1 > /proc/sys/vm/drop_caches`; "
            "warm rows with the files in the page cache."
            if cold
            else "warm only (not root, or --no-cold): the files were in the page cache."
        ),
    }
    summary = summarize(rows)
    text = markdown(meta, summary, network.markdown(net_rows, args.cores))
    args.out.mkdir(parents=True, exist_ok=True)
    name = args.name or f"spark-{date}"
    (args.out / f"{name}.json").write_text(
        json.dumps({"meta": meta, "summary": summary, "runs": rows, "network": net_rows}, indent=1)
    )
    (args.out / f"{name}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
