"""py-spy profiles of our server during the measured phase of a side-by-side case, and their
summary by layer of the send path.

``python -m bench.side_by_side --profile DIR`` attaches ``py-spy record`` (``--native``, so the
functions compiled with mypyc show under their own names instead of inside their interpreted
caller) to our server at the driver's ``MARK start`` and stops it at ``MARK end``: one collapsed
stack file (py-spy's ``raw`` format) per producer case and round, ``<case>-<round>.txt``. The
reference's CPU per message is measured in the same run as always; py-spy samples ours only.

``python -m bench.side_by_side.profile DIR/*.txt`` prints, per file, the share of samples of each
layer (:data:`LAYERS`), which times the case's CPU per message gives µs per message per layer.
A sample goes to the layer of its innermost frame that one of the layers claims, so a store
function called by the send processor counts as store, and the Python frames of the event loop
count as socket/Trio only when nothing of ours is beneath them.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

SAMPLE_RATE_HZ = 200
STOP_TIMEOUT_S = 30.0  # py-spy writes its file after SIGINT; a native unwind of a big profile is slow

STORE_DISPATCH = "store dispatch (consume queue, index)"
STORE_PUT = "store put (commit log, records)"
HEADER_DECODE = "header decode"
ENCODE = "encode"
SEND_PROCESSOR = "send processor"
BROKER_OTHER = "broker other (stats, topics, hooks)"
REQUEST_DISPATCH = "request dispatch"
CONNECTION = "connection (frames, queues)"
SOCKET_TRIO = "socket / Trio"
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
#: (layer, substrings of an interpreted frame's file), first match wins.
PYTHON_FILES = (
    (HEADER_DECODE, ("/codec/headers/", "/codec/command", "/codec/json_header", "/codec/binary_header")),
    (SEND_PROCESSOR, ("/broker/processors/send",)),
    (STORE_DISPATCH, ("/store/consume_queue", "/store/index", "/store/dispatch")),
    (STORE_PUT, ("/store/",)),
    (BROKER_OTHER, ("/broker/",)),
    (REQUEST_DISPATCH, ("/gateway/transport/dispatch",)),
    (CONNECTION, ("/gateway/transport/", "/codec/")),
    (SOCKET_TRIO, ("/trio/", "/socket.py", "/selectors.py")),
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
            cmd += ["--native", "--format", "raw", "--output", str(self._out)]
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


def frame_layer(frame: str) -> str | None:
    """The layer one frame belongs to, or None when its callers should decide."""
    name, _, where = frame.partition(" (")
    if name.startswith(("CPyDef_", "CPyPy_")):
        module, _, function = name.split("_", 1)[1].partition("___")
        layer = COMPILED_MODULES.get(module)
        if layer == HEADER_DECODE and "encode" in function:
            return ENCODE
        return layer
    if where.endswith(".py)") or ".py:" in where:
        for layer, files in PYTHON_FILES:
            if any(f in where for f in files):
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


def main(argv: list[str]) -> int:
    """Print the layer shares and top leaf frames of each profile file given."""
    if not argv:
        print("usage: python -m bench.side_by_side.profile PROFILE.txt ...", file=sys.stderr)
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
