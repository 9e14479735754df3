"""Server CPU per message on our gRPC endpoint alone, and where it goes, for before/after figures.

Starts ``rmq-gateway standalone --grpc-port 0`` (temporary HOME and store, pure modules: this
measures the sources of the tree it runs from) and runs the Java driver ``rmqbench.GrpcBench``
(rocketmq-client-java 5.0.8, bench/java/build.sh grpc) once per case:

* ``send1``, ``send16``, ``async``: sync sends from one thread, from 16 threads, and one thread
  keeping 1,024 ``sendAsync`` in flight, to a topic of 8 queues; each warms up ``--warmup`` seconds;
* ``fifo16``, ``receive``, ``push``: the side-by-side's gRPC rows (bench/side_by_side/cases.py, run
  from there on our server alone, each on a topic of its own per round): FIFO sends from 16 threads,
  each its own message group, to a FIFO topic; a SimpleConsumer receiving and acknowledging
  (4 threads, 32 a batch) a backlog of ``--backlog`` messages for ``--duration`` at most; a
  PushConsumer draining such a backlog, its window running from the end of the warm-up to the last
  message. The backlog is stored over the remoting protocol before the window (not measured), with
  ``--warmup-msgs`` more for the warm-up, which lasts at least that many messages.

The server's CPU is read from /proc/PID/stat at the driver's ``MARK start`` and ``MARK end``
(bench.side_by_side.driver), so the figure is the CPU of exactly the timed window. The load average
at both marks and the cores other processes kept busy over the window are printed beside it: the
machine is shared, CPU per message is the figure to compare.

With ``--compare REV`` a second server runs ``git archive`` of REV beside the tree's, and every
case runs on both in alternation (REV first), so a change is judged under the same load.

With ``--profile DIR`` py-spy records the server over each window (raw collapsed stacks,
``DIR/<target>-<case>-<round>.txt``) and the samples are sorted into the layers of the gRPC path
(:func:`layer_of`): socket/Trio, HTTP/2 (h2 or http2.py), HPACK, gRPC framing
(gateway/transport/grpc), protobuf, activity (broker/grpc), POP (broker/pop), broker/store; the
``--top`` heaviest functions follow, by their own samples and by the innermost function of ours
on each stack.

    python -m bench.grpc.transport [--cases send1,send16,async,fifo16,receive,push] [--duration 8]
                                   [--warmup 4] [--warmup-msgs 5000] [--backlog 20000] [--rounds 1]
                                   [--compare REV] [--profile DIR] [--top 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench.side_by_side.cases import GRPC_WARMUP_MSGS, Params, grpc_fifo_16, grpc_push, grpc_receive
from bench.side_by_side.driver import GRPC_DRIVER, build_driver, run_driver
from bench.side_by_side.profile import PhaseProfiler, read_stacks
from bench.side_by_side.servers import Ours, Target, create_topic, export_revision

REPO = Path(__file__).resolve().parents[2]
PROTO_DIR = "gateway/transport/grpc/proto"
TOPIC = "BenchGrpcTransport"
QUEUES = 8
BACKLOG = 20_000  # messages a consumer case stores before its window, besides the warm-up's
SEND_CASES = {  # name: the driver's send options
    "send1": {"threads": 1},
    "send16": {"threads": 16},
    "async": {"threads": 1, "inflight": 1024},
}
#: name: the side-by-side's case (its topic, backlog and driver options), run on our server alone
SIDE_BY_SIDE_CASES: dict[str, Callable[[Target, Params, str], dict[str, Any]]] = {
    "fifo16": grpc_fifo_16,
    "receive": grpc_receive,
    "push": grpc_push,
}
CASES = (*SEND_CASES, *SIDE_BY_SIDE_CASES)

#: (layer, substrings of a frame's file), first match wins; a sample goes to its innermost frame
#: that has a layer.
LAYERS = (
    ("HPACK", ("/hpack/", "/gateway/transport/grpc/header_block.py")),
    (
        "HTTP/2 (h2, or ours: http2.py)",
        ("/h2/", "/gateway/transport/grpc/http2.py", "/gateway/transport/grpc/h2_frames.py"),
    ),
    ("gRPC transport (transport/grpc)", ("/gateway/transport/grpc/",)),
    ("protobuf", ("/google/protobuf/", "_pb2.py")),
    ("activity (broker/grpc)", ("/broker/grpc/",)),
    ("POP: receive, ack, checkpoints (broker/pop)", ("/broker/pop/",)),
    ("broker/store", ("/broker/", "/store/", "/codec/", "/namesrv/")),
    ("socket / Trio", ("/trio/", "/socket.py", "/selectors.py", "/outcome/", "/sniffio/")),
)
OURS = ("/gateway/", "/broker/", "/store/", "/codec/", "/namesrv/")  # the project's own packages
WAIT = "waiting in epoll (not CPU)"
OTHER = "other (interpreter, GC, logging)"


def layer_of(frames: Iterable[str]) -> str:
    """The layer of one stack (root first): its innermost frame with a known file."""
    for frame in reversed(list(frames)):
        if "EpollIOManager.get_events" in frame:  # the epoll_wait line: py-spy misses some idleness
            return WAIT
        where = "/" + frame.partition(" (")[2]
        for layer, files in LAYERS:
            if any(f in where for f in files):
                return layer
    return OTHER


def _function(frame: str) -> str:
    """``name (path)``: a py-spy frame without its line number."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rpartition(":")[0] or where.rstrip(")")
    return f"{name} ({path})"


def _is_ours(frame: str) -> bool:
    where = "/" + frame.partition(" (")[2]
    return any(package in where for package in OURS)


def _cpu_stacks(path: Path) -> Counter[tuple[str, ...]]:
    """The stacks of one py-spy raw file, those waiting in epoll left out."""
    stacks = read_stacks(path)
    return Counter({stack: n for stack, n in stacks.items() if layer_of(stack) != WAIT})


def layer_shares(path: Path) -> dict[str, float]:
    """Each layer's share of the CPU samples (epoll waits left out) in one py-spy raw file."""
    counts: Counter[str] = Counter()
    for stack, count in _cpu_stacks(path).items():
        counts[layer_of(stack)] += count
    total = sum(counts.values()) or 1
    return {layer: n / total for layer, n in counts.most_common()}


def top_functions(path: Path, n: int, ours_only: bool = False) -> list[tuple[str, float]]:
    """The ``n`` functions with the largest share of the CPU samples: each sample counted for the
    innermost function of its stack, or with ``ours_only`` for the innermost function of ours (so a
    socket write counts for the function of ours that made it)."""
    counts: Counter[str] = Counter()
    for stack, count in _cpu_stacks(path).items():
        frames = [f for f in stack if _is_ours(f)] if ours_only else list(stack)
        counts[_function(frames[-1]) if frames else OTHER] += count
    total = sum(counts.values()) or 1
    return [(function, c / total) for function, c in counts.most_common(n)]


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_case(ours: Ours, label: str, name: str, rnd: int, args: argparse.Namespace) -> dict[str, Any]:
    """One case on one server: the driver's metrics, the load average at its marks, and with
    ``--profile`` the layer shares and top functions of the window."""
    out = args.profile / f"{label}-{name}-{rnd}.txt" if args.profile else None
    profiler = PhaseProfiler(ours.pids()[0], out) if out else None
    loads: dict[str, str] = {}

    def on_mark(mark: str) -> None:
        loads[mark] = loadavg()
        if profiler:
            profiler.mark(mark)

    try:
        if name in SEND_CASES:
            run = run_driver(
                "send",
                ours.pids(),
                main=GRPC_DRIVER,
                on_mark=on_mark,
                endpoint=ours.grpc_addr,
                topic=TOPIC,
                size=args.size,
                duration=args.duration,
                warmup=args.warmup,
                **SEND_CASES[name],
            )
            metrics = run.metrics()
        else:
            params = Params(
                args.duration,
                args.warmup,
                args.size,
                args.backlog,
                grpc_warmup_msgs=args.warmup_msgs,
                on_mark=on_mark,
            )
            metrics = SIDE_BY_SIDE_CASES[name](ours, params, f"{TOPIC}_{name}_{rnd}")
    finally:
        if profiler:
            profiler.stop()
    metrics.update(case=name, source=label, round=rnd)
    metrics.update(load_before=loads.get("start", ""), load_after=loads.get("end", ""))
    if out and out.exists():  # py-spy writes nothing when the window ends before it samples
        metrics["layers"] = layer_shares(out)
        metrics["top_functions"] = top_functions(out, args.top)
        metrics["top_functions_of_ours"] = top_functions(out, args.top, ours_only=True)
    return metrics


def describe(m: dict[str, Any]) -> list[str]:
    """The printed lines of one run: its figures, then by layer and top functions if profiled."""
    cpu = m["server_cpu_us_per_msg"]
    p50 = f"p50 {m['p50_ms']:.1f} ms" if "p50_ms" in m else f"age p50 {m['store_to_delivery_p50_ms']:.1f} ms"
    lines = [
        f"{m['source'][:10]:10} {m['case']:7} {m['msgs_per_s']:8.0f} msgs/s  "
        f"{'-' if cpu is None else round(cpu):>6} us/msg  {p50}  ok {m['ok']}  failed {m['failed']}  "
        f"other cores {m['other_cores']:.2f}  load {m['load_before']} -> {m['load_after']}"
    ]
    lines += [f"          {share:6.1%}  {layer}" for layer, share in m.get("layers", {}).items()]
    for key, title in (("top_functions", "own samples"), ("top_functions_of_ours", "innermost of ours")):
        if key in m:
            lines.append(f"          top functions ({title}):")
            lines += [f"          {share:6.1%}  {function}" for function, share in m[key]]
    return lines


def exported(rev: str) -> Path:
    """``rev``'s tree with this tree's generated protobuf modules (gitignored, so not in git)."""
    out = export_revision(rev)
    for generated in (REPO / PROTO_DIR).glob("*_pb2.py*"):
        shutil.copy(generated, out / PROTO_DIR / generated.name)
    return out


def _cases(text: str) -> list[str]:
    names = text.split(",")
    if unknown := [n for n in names if n not in CASES]:
        raise argparse.ArgumentTypeError(f"unknown cases {unknown}: choose from {', '.join(CASES)}")
    return names


def _positive(text: str) -> int:
    if (value := int(text)) < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=_cases, default=list(CASES))
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=4.0)
    parser.add_argument(
        "--warmup-msgs",
        type=int,
        default=GRPC_WARMUP_MSGS,
        help="messages the warm-up of fifo16, receive and push lasts at least",
    )
    parser.add_argument(
        "--backlog",
        type=_positive,
        default=BACKLOG,
        help="messages receive and push find stored before their window, besides the warm-up's",
    )
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--compare", help="a git revision to run beside the tree, in alternation")
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--top", type=int, default=5, help="functions listed per profiled window")
    parser.add_argument("--json", type=Path)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    build_driver(grpc=True)
    if any(name in SIDE_BY_SIDE_CASES for name in args.cases):
        build_driver()  # the remoting driver stores the consumers' backlogs
    os.environ["RMQ_GATEWAY_PURE"] = "1"
    results = []
    targets = {"tree": Ours(REPO)}
    if args.compare:
        targets = {args.compare: Ours(exported(args.compare)), **targets}
    try:
        for ours in targets.values():
            ours.start()
            create_topic(ours.broker_addr, ours.namesrv_addr, TOPIC, QUEUES)
        for rnd in range(args.rounds):
            for name in args.cases:
                for label, ours in targets.items():
                    m = run_case(ours, label, name, rnd, args)
                    results.append(m)
                    print("\n".join(describe(m)), flush=True)
    finally:
        for ours in targets.values():
            ours.stop()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
