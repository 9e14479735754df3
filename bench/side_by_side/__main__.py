"""Side-by-side benchmark: ours against the real Apache RocketMQ 5.3.3, in alternation.

::

    python -m bench.side_by_side                         # every case, 3 rounds (~15 min)
    python -m bench.side_by_side --cases sync16,batch --rounds 2 --duration 5
    python -m bench.side_by_side --targets ours --ours-source HEAD~3   # one commit of ours only
    python -m bench.side_by_side --cases grpc_send1,grpc_send --before 10085c3   # three targets

Each round starts each target afresh (temporary store and HOME), alternating which goes first,
times its start-up, reads its idle memory and runs the selected cases with our Java load driver
(bench/java, built on first use); SYNC_FLUSH cases get a server of their own, and so do the gRPC
cases (the reference's broker then inside the 5.3.3 Proxy in local mode), whose start-up and idle
memory are the ``grpc_startup`` and ``grpc_memory`` rows. ``--before REV`` adds a third target,
ours at REV (both of ours then run their modules from source), alternated with the other two.
Before each measured window the benchmark waits for the machine to settle (settle.py: the
1-minute load under --max-load, other processes under --max-other-cores, or --settle-timeout), and
every window is judged for noise (calibration.py): a row measured while other processes loaded the
machine, or after a wait that timed out, is marked LOADED, and so is the top of the markdown. Results go to
``bench/results/<date>.json`` with a markdown table (also printed) and a PNG chart beside it.
See docs/benchmarks.md for what each case measures and how to read the figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import logging
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.side_by_side.calibration import LOADED, LoadWatch, Thresholds, calibrate
from bench.side_by_side.cases import CASES, DEFAULT_CASES, GRPC_WARMUP_MSGS, Case, Params, idle_memory
from bench.side_by_side.driver import build_driver
from bench.side_by_side.report import render_chart, render_table, summarize
from bench.side_by_side.servers import (
    REPO,
    Ours,
    Reference,
    describe_source,
    export_revision,
    first_grpc_send,
)
from bench.side_by_side.settle import SETTLE_TIMEOUT_S, OtherCpu, Settle, wait_until_quiet

logger = logging.getLogger("bench.side_by_side")
# Measured on every server start (the grpc_ ones on the gRPC set-up), selectable like the others.
SERVER_CASES = ("startup", "memory", "grpc_startup", "grpc_memory")
GRPC_SERVER_CASES = ("grpc_startup", "grpc_memory")
REFERENCE_VERSION = "5.3.3"
CLIENT_VERSION = "5.3.3"
GRPC_CLIENT_VERSION = "5.0.8"


def _shown(path: Path) -> str:
    """A path as the results file records it: relative to the repository when inside it, so a
    result committed from one machine names no directory of that machine."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return path.name


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.side_by_side", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--cases",
        default=",".join((*SERVER_CASES, *DEFAULT_CASES)),
        help=f"comma-separated, from: {', '.join((*SERVER_CASES, *CASES))} (default: all)",
    )
    p.add_argument("--targets", default="ours,reference", help="ours, reference or both (default both)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per target (default 3)")
    p.add_argument("--duration", type=float, default=8.0, help="measured seconds per timed case (default 8)")
    p.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds before it (default 3)")
    p.add_argument(
        "--grpc-warmup-msgs",
        type=int,
        default=GRPC_WARMUP_MSGS,
        help=f"gRPC cases: messages the warm-up lasts at least, beside --warmup ({GRPC_WARMUP_MSGS:,})",
    )
    p.add_argument(
        "--max-load",
        type=float,
        default=Thresholds.max_load,
        help="mark a row LOADED when other processes' 1-minute load before its window exceeds this "
        f"(default {Thresholds.max_load})",
    )
    p.add_argument(
        "--max-other-cores",
        type=float,
        default=Thresholds.max_other_cores,
        help="mark a row LOADED when other processes used more cores in its window "
        f"(default {Thresholds.max_other_cores})",
    )
    p.add_argument(
        "--settle-timeout",
        type=float,
        default=SETTLE_TIMEOUT_S,
        metavar="S",
        help="before each measured window, wait at most S seconds for the 1-minute load to fall under "
        "--max-load and other processes under --max-other-cores; 0: read the load once, no wait "
        f"(default {SETTLE_TIMEOUT_S:.0f})",
    )
    p.add_argument("--size", type=int, default=1024, help="message body bytes (default 1024)")
    p.add_argument("--backlog", type=int, default=100_000, help="messages the consumer drains (100,000)")
    p.add_argument(
        "--ours-source",
        default="worktree",
        help="'worktree' (default) or a git revision of ours to export and run",
    )
    p.add_argument(
        "--before",
        default=None,
        metavar="REV",
        help="a third target: ours at git revision REV, beside the other two (its own column)",
    )
    p.add_argument("--out", type=Path, default=REPO / "bench" / "results", help="results directory")
    p.add_argument("--name", default=None, help="file name stem (default: today's date)")
    p.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="py-spy record ours during each producer case's measured phase into this directory",
    )
    p.add_argument("--no-chart", action="store_true", help="skip the PNG (matplotlib not needed)")
    args = p.parse_args(argv)
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = set(args.cases) - set(CASES) - set(SERVER_CASES)
    if unknown:
        p.error(f"unknown cases: {', '.join(sorted(unknown))}")
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if not set(args.targets) <= {"ours", "reference"} or not args.targets:
        p.error("--targets takes ours and/or reference")
    if args.before:
        for rev in {args.before, args.ours_source} - {"worktree"}:
            known = subprocess.run(
                ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                capture_output=True,
            )
            if known.returncode != 0:
                p.error(f"not a revision of this repository: {rev}")
        args.targets.append("before")
    return args


def machine() -> dict[str, Any]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "java": java[0] if java else "?",
        "loadavg_at_start": Path("/proc/loadavg").read_text().split()[:3],
    }


def run_server(
    target_name: str,
    setup: tuple[bool, bool],
    cases: list[Case],
    args: argparse.Namespace,
    sources: dict[str, Path],
    rnd: int,
    watch: LoadWatch | None = None,
) -> list[dict[str, Any]]:
    """Start one server set-up (``setup`` = (sync_flush, grpc)) of ``target_name`` (ours, before:
    ours from ``sources[target_name]``; reference), measure start-up and memory, run ``cases`` on it
    (each window judged with ``watch``), stop it."""
    sync_flush, grpc = setup
    target: Ours | Reference = (
        Reference(sync_flush, grpc)
        if target_name == "reference"
        else Ours(sources[target_name], sync_flush, name=target_name, pure=bool(args.before))
    )
    thresholds = Thresholds(args.max_load, args.max_other_cores)
    rows: list[dict[str, Any]] = []
    base = {"round": rnd, "target": target_name, "flush": "SYNC_FLUSH" if sync_flush else "ASYNC_FLUSH"}
    if grpc:
        base["endpoint"] = "grpc"
    startup, memory = ("grpc_startup", "grpc_memory") if grpc else ("startup", "memory")
    timing = target.start()
    try:
        if startup in args.cases:
            row = {**base, "case": startup, "ready_s": timing.ready_s, "first_send_s": timing.first_send_s}
            if grpc:
                row["first_grpc_send_s"] = first_grpc_send(target, timing.started)
            rows.append(row)
        if memory in args.cases and not sync_flush:
            rows.append({**base, "case": memory, **idle_memory(target)})
        params = Params(
            args.duration, args.warmup, args.size, args.backlog, args.profile, args.grpc_warmup_msgs
        )
        for case in cases:
            started = time.perf_counter()
            label = f"{target_name} round {rnd} {case.name}"
            settle = _settle_for(target, thresholds, args.settle_timeout, label)
            try:
                case_params = dataclasses.replace(params, settle=settle)
                metrics = case.run(target, case_params, f"Bench_{case.name}_{rnd}")
                calibrate(metrics, watch, thresholds)
            except Exception as err:  # one failing case must not lose the others' results
                logger.error("%s %s round %d failed: %s", target_name, case.name, rnd, err)
                metrics = {"error": "".join(traceback.format_exception_only(err)).strip()[-2000:]}
            metrics["case_wall_s"] = time.perf_counter() - started
            rows.append({**base, "case": case.name, **metrics})
            logger.info("%s round %d %s: %s", target_name, rnd, case.name, _brief(metrics))
    finally:
        target.stop()
    return rows


def _settle_for(
    target: Ours | Reference, thresholds: Thresholds, timeout_s: float, label: str
) -> Callable[[], Settle]:
    """The wait a case calls right before its measured window: for a quiet machine (the servers of
    ``target`` and every process of the benchmark excluded from the others' CPU), logged as it ends."""

    def settle() -> Settle:
        logger.info("%s: waiting up to %.0f s for the machine to settle", label, timeout_s)
        waited = wait_until_quiet(thresholds, timeout_s, OtherCpu(target.pids()).sample)
        logger.info("%s: %s", label, waited.describe())
        return waited

    return settle


def server_setups(case_names: list[str]) -> list[tuple[tuple[bool, bool], list[Case]]]:
    """The server set-ups the selected cases need, each with its cases: ((sync_flush, grpc), cases).
    The ASYNC_FLUSH one also serves the start-up and memory rows, the gRPC one their grpc_ twins."""
    selected = [CASES[name] for name in case_names if name in CASES]
    out = []
    for setup in ((False, False), (True, False), (False, True)):
        cases = [c for c in selected if (c.sync_flush, c.grpc) == setup]
        server_rows = {
            (False, False): set(SERVER_CASES) - set(GRPC_SERVER_CASES),
            (False, True): set(GRPC_SERVER_CASES),
        }.get(setup, set())
        if cases or server_rows & set(case_names):
            out.append((setup, cases))
    return out


def _brief(m: dict[str, Any]) -> str:
    if "error" in m:
        return "ERROR"
    cpu = m.get("server_cpu_us_per_msg")
    line = f"{m.get('msgs_per_s', 0):,.0f} msgs/s, {cpu or 0:.1f} µs CPU/msg, "
    if "p99_ms" not in m and m.get("avg_rt_ms") is not None:  # the official programs print no percentiles
        line += f"avg RT {m['avg_rt_ms']:.2f} ms, {m.get('failed', 0)} failed"
    else:
        line += f"p99 {m.get('p99_ms') or 0:.2f} ms"
    if "load_before_case" in m:
        line += f"; load {m['load_before_case']:.2f} before the case (waited {m['settle_waited_s']:.0f} s)"
    if "others_load_start" in m:
        line += (
            f"; load {m['load_1m_start']:.2f} (others {m['others_load_start']:.2f}) at the window, "
            f"other processes {m.get('other_cores') or 0:.2f} cores in it"
        )
    if m.get("loaded"):
        line += f"  ** {LOADED}: {'; '.join(m['loaded'])} **"
    return line


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    args = parse_args(argv)
    began = time.perf_counter()
    setups = server_setups(args.cases)
    build_driver()
    if any(grpc for (_, grpc), _ in setups):
        build_driver(grpc=True)
    sources = {"ours": REPO if args.ours_source == "worktree" else export_revision(args.ours_source)}
    if args.before:
        sources["before"] = export_revision(args.before)
    meta: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "ours": describe_source(args.ours_source) + (" (pure modules)" if args.before else ""),
        **({"before": f"{describe_source(args.before)} (pure modules)"} if args.before else {}),
        "thresholds": {
            "max_load": args.max_load,
            "max_other_cores": args.max_other_cores,
            "settle_timeout_s": args.settle_timeout,
        },
        "reference": f"Apache RocketMQ {REFERENCE_VERSION} (Maven Central), NameServer and Broker "
        "heaps 256 MiB each; gRPC: the Proxy in local mode (broker inside it) beside the NameServer",
        "client": f"rocketmq-client {CLIENT_VERSION} (bench/java driver); gRPC: rocketmq-client-java "
        f"{GRPC_CLIENT_VERSION} (GrpcBench)",
        "options": {k: (_shown(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    rows: list[dict[str, Any]] = []
    watch = LoadWatch()
    watch.start()
    try:
        for rnd in range(args.rounds):
            shift = rnd % len(args.targets)  # each target first in turn
            for target_name in args.targets[shift:] + args.targets[:shift]:
                for setup, cases in setups:
                    rows += run_server(target_name, setup, cases, args, sources, rnd, watch)
    finally:
        watch.stop()
    meta["machine"]["loadavg_at_end"] = Path("/proc/loadavg").read_text().split()[:3]
    meta["runtime_s"] = round(time.perf_counter() - began, 1)
    loaded = [r for r in rows if r.get("loaded")]
    if loaded:
        windows = sum(1 for r in rows if "others_load_start" in r)
        meta["loaded"] = f"{LOADED}: {len(loaded)} of {windows} measured windows were on a loaded machine"
    summary = summarize(rows)
    table = render_table(summary, meta)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.name or datetime.date.today().isoformat()
    (args.out / f"{stem}.json").write_text(
        json.dumps({"meta": meta, "summary": summary, "runs": rows}, indent=1)
    )
    (args.out / f"{stem}.md").write_text(table)
    if not args.no_chart:
        render_chart(summary, meta, args.out / f"{stem}.png")
    print(table)
    print(f"results: {args.out / stem}.json ({meta['runtime_s']:.0f} s)")
    failed = [r for r in rows if "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
