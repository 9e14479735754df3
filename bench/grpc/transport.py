"""Server CPU per gRPC send on our endpoint alone, and where it goes, for before/after figures.

Starts ``rmq-gateway standalone --grpc-port 0`` (temporary HOME and store, pure modules: this
measures the sources of the tree it runs from), creates the topic, and runs the Java driver
``rmqbench.GrpcBench send`` (rocketmq-client-java 5.0.8, bench/java/build.sh grpc) once per case:
one thread, 16 threads, and one thread keeping 1,024 ``sendAsync`` in flight. Each case warms up
first; the server's CPU is read from /proc/PID/stat at the driver's ``MARK start`` and ``MARK end``
(bench.side_by_side.driver), so the figure is the CPU of exactly the timed window. The load average
and the cores other processes kept busy over the window are printed beside it: the machine is
shared, CPU per message is the figure to compare.

With ``--compare REV`` a second server runs ``git archive`` of REV beside the tree's, and every
case runs on both in alternation (REV first), so a change is judged under the same load.

With ``--profile DIR`` py-spy records the server over each window (raw collapsed stacks,
``DIR/<case>.txt``) and the samples are sorted into the layers of the gRPC send path
(:func:`layer_of`): socket/Trio, HTTP/2 (h2 or http2.py), HPACK, gRPC framing (gateway/transport/grpc),
protobuf, activity (broker/grpc), broker/store.

    python -m bench.grpc.transport [--cases send1,send16,async] [--duration 8] [--warmup 4]
                                   [--rounds 1] [--compare REV] [--profile DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.side_by_side.driver import GRPC_DRIVER, build_driver, run_driver
from bench.side_by_side.profile import PhaseProfiler, read_stacks
from bench.side_by_side.servers import Ours, create_topic, export_revision

REPO = Path(__file__).resolve().parents[2]
PROTO_DIR = "gateway/transport/grpc/proto"
TOPIC = "BenchGrpcTransport"
QUEUES = 8
CASES = {  # name: the driver's send options
    "send1": {"threads": 1},
    "send16": {"threads": 16},
    "async": {"threads": 1, "inflight": 1024},
}

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
    ("broker/store", ("/broker/", "/store/", "/codec/", "/namesrv/")),
    ("socket / Trio", ("/trio/", "/socket.py", "/selectors.py", "/outcome/", "/sniffio/")),
)
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


def layer_shares(path: Path) -> dict[str, float]:
    """Each layer's share of the CPU samples (epoll waits left out) in one py-spy raw file."""
    counts: Counter[str] = Counter()
    for stack, count in read_stacks(path).items():
        counts[layer_of(stack)] += count
    counts.pop(WAIT, None)
    total = sum(counts.values()) or 1
    return {layer: n / total for layer, n in counts.most_common()}


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_case(ours: Ours, label: str, name: str, args: argparse.Namespace) -> dict[str, Any]:
    out = args.profile / f"{label}-{name}.txt" if args.profile else None
    profiler = PhaseProfiler(ours.pids()[0], out) if out else None
    load_before = loadavg()
    run = run_driver(
        "send",
        ours.pids(),
        main=GRPC_DRIVER,
        on_mark=profiler.mark if profiler else None,
        endpoint=ours.grpc_addr,
        topic=TOPIC,
        size=args.size,
        duration=args.duration,
        warmup=args.warmup,
        **CASES[name],
    )
    if profiler:
        profiler.stop()
    metrics = run.metrics()
    metrics.update(case=name, source=label, load_before=load_before, load_after=loadavg())
    if out:
        metrics["layers"] = layer_shares(out)
    return metrics


def exported(rev: str) -> Path:
    """``rev``'s tree with this tree's generated protobuf modules (gitignored, so not in git)."""
    out = export_revision(rev)
    for generated in (REPO / PROTO_DIR).glob("*_pb2.py*"):
        shutil.copy(generated, out / PROTO_DIR / generated.name)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=4.0)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--compare", help="a git revision to run beside the tree, in alternation")
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    build_driver(grpc=True)
    os.environ["RMQ_GATEWAY_PURE"] = "1"
    results = []
    targets = {"tree": Ours(REPO)}
    if args.compare:
        targets = {args.compare: Ours(exported(args.compare)), **targets}
    try:
        for ours in targets.values():
            ours.start()
            create_topic(ours.broker_addr, ours.namesrv_addr, TOPIC, QUEUES)
        for _ in range(args.rounds):
            for name in args.cases.split(","):
                for label, ours in targets.items():
                    m = run_case(ours, label, name, args)
                    results.append(m)
                    print(
                        f"{label[:10]:10} {name:7} {m['msgs_per_s']:8.0f} msgs/s  "
                        f"{m['server_cpu_us_per_msg']:6.0f} us/msg  "
                        f"p50 {m['p50_ms']:.1f} ms  failed {m['failed']}  "
                        f"other cores {m['other_cores']:.2f}  "
                        f"load {m['load_before']} -> {m['load_after']}",
                        flush=True,
                    )
                    for layer, share in m.get("layers", {}).items():
                        print(f"          {share:6.1%}  {layer}")
    finally:
        for ours in targets.values():
            ours.stop()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
