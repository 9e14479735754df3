"""py-spy profiles of our server during the measured phase of a side-by-side case, and their
summary by layer of the send path.

``python -m bench.side_by_side --profile DIR`` attaches ``py-spy record`` to our server at the
driver's ``MARK start`` and stops it at ``MARK end``: one collapsed-stack file (py-spy's ``raw``
format) per producer case and round, ``<topic>.txt``. The reference's CPU per message is measured
in the same run as always; py-spy samples ours only.

Without ``--native`` py-spy sees interpreted frames only: time in a function compiled with mypyc
(gateway/native.py) shows as time on the line of the interpreted frame that called it. So a frame
is classified by its file, and a frame whose current source line calls into compiled code
(``put_messages(``, ``encode_frame(``, ``.feed(``, the dispatcher's ``handler(``) by that call
(:data:`COMPILED_CALLS`). ``--native`` names the compiled functions themselves
(``CPyDef_<module>___<name>``, :data:`COMPILED_MODULES`), but its stack unwinding pauses the
server for milliseconds per sample: on 2 loaded cores a 16-thread sync send fell from thousands to
2 msgs/s, so the side-by-side does not use it.

``python -m bench.side_by_side.profile DIR/*.txt`` prints, per file, the share of samples of each
layer, which times the case's CPU per message gives µs per message per layer. A sample goes to the
layer of its innermost frame that has one, so a store call under the send processor counts as
store, and the event loop's frames count as socket/Trio only when nothing of ours is beneath them.
"""

from __future__ import annotations

import functools
import json
import linecache
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SAMPLE_RATE_HZ = 200
STOP_TIMEOUT_S = 30.0  # py-spy writes its file after SIGINT
REPO = Path(__file__).resolve().parents[2]

STORE_DISPATCH = "store dispatch (consume queue, index)"
STORE_PUT = "store put (commit log, records)"
STORE_TICK = "store tick (periodic flush: msync, file reserve)"
HEADER_DECODE = "header decode"
ENCODE = "encode"
SEND_PROCESSOR = "send processor"
BROKER_OTHER = "broker other (stats, topics, hooks)"
REQUEST_DISPATCH = "request dispatch"
CONNECTION = "connection (frames, queues)"
SOCKET_TRIO = "socket / Trio"
#: Blocked in epoll_wait: py-spy's idle detection misses some of it; not CPU, left out of the shares.
WAIT = "waiting in epoll_wait (not counted)"
OTHER = "other (interpreter, GC, unresolved)"
#: The layer of a compiled module's functions, by the module's last name: mypyc calls a compiled
#: function ``CPyDef_<module>___<qualified name>``. Modules used by several layers (hashing,
#: properties, message ids) are missing on purpose: their caller decides.
COMPILED_MODULES = {
    **dict.fromkeys(
        ("consume_queue", "consume_queue_store", "index_file", "index_service", "dispatch"), STORE_DISPATCH
    ),
    **dict.fromkeys(
        (
            "commit_log",
            "message_store",
            "mapped_file",
            "mapped_file_queue",
            "message",
            "results",
            "checkpoint",
            "config",
            "extra_info",
        ),
        STORE_PUT,
    ),
    **dict.fromkeys(("command", "frame", "json_header", "binary_header"), HEADER_DECODE),
    **dict.fromkeys(("send", "batch"), SEND_PROCESSOR),
}
#: What an interpreted frame does when its current line calls compiled code: (layer, substrings
#: of the source line), first match wins.
COMPILED_CALLS = (
    (WAIT, ("self._epoll.poll(",)),
    (STORE_PUT, (".put_messages(", ".put_message(")),
    (STORE_TICK, (".tick(",)),
    (ENCODE, ("encode_frame(",)),
    (HEADER_DECODE, (".feed(", "from_ext_fields(")),
    (SEND_PROCESSOR, ("handler(",)),
)
#: (layer, substrings of an interpreted frame's file, "/" in front), first match wins.
PYTHON_FILES = (
    (HEADER_DECODE, ("/codec/headers/", "/codec/command", "/codec/json_header", "/codec/binary_header")),
    (SEND_PROCESSOR, ("/broker/processors/send", "/broker/service/send")),
    (STORE_DISPATCH, ("/store/consume_queue", "/store/index", "/store/dispatch")),
    (STORE_PUT, ("/store/",)),
    (BROKER_OTHER, ("/broker/",)),
    (REQUEST_DISPATCH, ("/gateway/transport/dispatch",)),
    (CONNECTION, ("/gateway/transport/", "/codec/")),
    (SOCKET_TRIO, ("/trio/", "/socket.py", "/selectors.py", "/outcome/")),
)
#: Native frames of the kernel boundary (libc, the socket and select modules).
SYSCALLS = ("send", "recv", "epoll", "sock_", "poll", "writev", "__write", "__read", "syscall")


def py_spy() -> str:
    """The py-spy next to this interpreter (the ``bench`` extra), else the one on PATH."""
    local = Path(sys.executable).parent / "py-spy"
    found = str(local) if local.exists() else shutil.which("py-spy")
    if found is None:
        raise RuntimeError("py-spy not found: pip install -e '.[bench]'")
    return found


class PhaseProfiler:
    """Records ``pid`` with py-spy from the mark ``start`` to the mark ``end`` into ``out``."""

    def __init__(self, pid: int, out: Path) -> None:
        self._pid = pid
        self._out = out
        self._proc: subprocess.Popen[bytes] | None = None

    def mark(self, name: str) -> None:
        """The driver's marks: ``start`` begins the recording, ``end`` stops it and writes the file."""
        if name == "start" and self._proc is None:
            self._out.parent.mkdir(parents=True, exist_ok=True)
            cmd = [py_spy(), "record", "--pid", str(self._pid), "--rate", str(SAMPLE_RATE_HZ)]
            cmd += ["--format", "raw", "--output", str(self._out)]
            log = self._out.with_suffix(".log").open("wb")
            self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        elif name == "end":
            self.stop()

    def stop(self) -> None:
        """Stop the recording (py-spy writes its output on SIGINT); idempotent."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


@functools.cache
def source_line(path: str, line: int) -> str:
    """Line ``line`` of ``path`` or "": py-spy prints a file relative to the ``sys.path`` entry it
    was found in (the repository for ours, site-packages for Trio)."""
    for root in (REPO, *map(Path, sys.path)):
        file = root / path
        if file.is_file():
            return linecache.getline(str(file), line)
    return ""


def frame_layer(frame: str) -> str | None:
    """The layer one frame belongs to, or None when its callers should decide."""
    name, _, where = frame.partition(" (")
    if name.startswith(("CPyDef_", "CPyPy_")):
        module, _, function = name.split("_", 1)[1].partition("___")
        layer = COMPILED_MODULES.get(module)
        if layer == HEADER_DECODE and "encode" in function:
            return ENCODE
        return layer
    path, _, line = where.rstrip(")").rpartition(":")
    if path.endswith(".py") and line.isdigit():
        code = source_line(path, int(line))
        for layer, calls in COMPILED_CALLS:
            if any(c in code for c in calls):
                return layer
        for layer, files in PYTHON_FILES:
            if any(f in "/" + path for f in files):
                if layer in (HEADER_DECODE, CONNECTION) and "encode" in name:
                    return ENCODE
                return layer
        return None
    if "orjson" in where:
        return ENCODE if "dumps" in name else HEADER_DECODE
    if any(s in name for s in SYSCALLS):
        return SOCKET_TRIO
    return None


def layer_of(frames: Iterable[str]) -> str:
    """The layer of one stack, given root first (py-spy's order): its innermost frame that has one."""
    for frame in reversed(list(frames)):
        layer = frame_layer(frame)
        if layer is not None:
            return layer
    return OTHER


def read_stacks(path: Path) -> Counter[tuple[str, ...]]:
    """py-spy's raw (collapsed) output: ``frame;frame;... count`` per line."""
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[tuple(stack.split(";"))] += int(count)
    return stacks


def by_layer(stacks: Counter[tuple[str, ...]]) -> Counter[str]:
    """Samples per layer."""
    out: Counter[str] = Counter()
    for frames, count in stacks.items():
        out[layer_of(frames)] += count
    return out


def top_frames(stacks: Counter[tuple[str, ...]], n: int = 15) -> list[tuple[str, int]]:
    """The ``n`` leaf frames with the most samples (self time)."""
    leaves: Counter[str] = Counter()
    for frames, count in stacks.items():
        leaves[frames[-1]] += count
    return leaves.most_common(n)


def shares(stacks: Counter[tuple[str, ...]]) -> dict[str, float]:
    """Each layer's share of the samples that are not :data:`WAIT`, largest first."""
    layers = by_layer(stacks)
    waiting = layers.pop(WAIT, 0)
    del waiting
    total = sum(layers.values()) or 1
    return {layer: count / total for layer, count in layers.most_common()}


def table(results: Path, profiles: Path) -> str:
    """A markdown table: per case, each layer's share of our samples (every round's profile pooled)
    and its µs per message (share × our median server CPU µs per message in ``results``), with
    the reference's CPU per message of the same run and the gap."""
    data = json.loads(results.read_text())
    by_case: dict[str, dict[str, Any]] = data["summary"]
    # A round whose driver stored nothing (its priming send timed out) profiled an idle server.
    measured = {
        (r["case"], r["round"]) for r in data.get("runs", []) if r["target"] == "ours" and r.get("ok")
    }
    files = {
        case: [
            f
            for f in sorted(profiles.glob(f"Bench_{case}_*.txt"))
            if not measured or _round(f, case) in measured
        ]
        for case in by_case
    }
    cases = [case for case in by_case if files[case]]
    pooled: dict[str, dict[str, float]] = {}
    samples: dict[str, int] = {}
    for case in cases:
        stacks: Counter[tuple[str, ...]] = Counter()
        for file in files[case]:
            stacks.update(read_stacks(file))
        pooled[case] = shares(stacks)
        samples[case] = sum(stacks.values())
    layers = sorted(
        {layer for s in pooled.values() for layer in s},
        key=lambda x: -sum(pooled[c].get(x, 0.0) for c in cases),
    )
    head = "| layer | " + " | ".join(f"{c} share | {c} µs/msg" for c in cases) + " |"
    lines = [head, "|---|" + "---|---|" * len(cases)]
    ours = {c: _median(by_case[c], "ours") for c in cases}
    for layer in layers:
        cells = []
        for c in cases:
            share = pooled[c].get(layer, 0.0)
            cells.append(f"{share:.1%} | {share * ours[c]:.1f}" if ours[c] else f"{share:.1%} | -")
        lines.append(f"| {layer} | " + " | ".join(cells) + " |")
    ref = {c: _median(by_case[c], "reference") for c in cases}
    lines.append(
        "| **ours, server CPU µs/msg (median)** | " + " | ".join(f"| {ours[c]:.1f}" for c in cases) + " |"
    )
    lines.append("| **reference, µs/msg (median)** | " + " | ".join(f"| {ref[c]:.1f}" for c in cases) + " |")
    lines.append(
        "| **gap ours - reference** | " + " | ".join(f"| {ours[c] - ref[c]:+.1f}" for c in cases) + " |"
    )
    lines.append("| samples (rounds pooled) | " + " | ".join(f"{samples[c]} | " for c in cases) + " |")
    return "\n".join(lines) + "\n"


def _round(file: Path, case: str) -> tuple[str, int]:
    suffix = file.stem.rpartition("_")[2]
    return case, int(suffix) if suffix.isdigit() else -1


def _median(row: dict[str, Any], target: str) -> float:
    value = row.get(target, {}).get("server_cpu_us_per_msg", {})
    return float(value.get("median", 0.0)) if isinstance(value, dict) else float(value or 0.0)


def main(argv: list[str]) -> int:
    """``--results RESULTS.json DIR``: the markdown table of :func:`table`; else the layer shares
    and top leaf frames of each profile file given."""
    if argv[:1] == ["--results"] and len(argv) == 3:
        print(table(Path(argv[1]), Path(argv[2])), end="")
        return 0
    if not argv:
        print(
            "usage: python -m bench.side_by_side.profile [--results RESULTS.json DIR | PROFILE.txt ...]",
            file=sys.stderr,
        )
        return 2
    for name in argv:
        stacks = read_stacks(Path(name))
        total = sum(stacks.values()) or 1
        print(f"## {name}: {total} samples")
        for layer, count in by_layer(stacks).most_common():
            print(f"  {count / total:6.1%}  {layer}")
        print("  top leaf frames:")
        for frame, count in top_frames(stacks):
            print(f"  {count / total:6.1%}  {frame[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
