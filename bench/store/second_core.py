"""Can the dispatch use the second core? The inline put against a put split over two processes.

Run ``python -m bench.store.second_core [--messages N] [--rounds R] [--batches 1,16]
[--neighbours 0,1]``. Each case writes the same records (1 KiB bodies, ``UNIQ_KEY``, ``TAGS`` and
``WAIT`` properties as a rocketmq-client producer sends them, batches of one topic-queue over 8
queues) into a fresh store in a temporary directory:

* ``inline``: ``MessageStore.put_messages``, which dispatches each batch before returning (ours now);
* ``split``: process A appends (:class:`bench.store.reput.CommitLogWriter`) and rings a doorbell
  per batch; process B (:func:`bench.store.reput.serve_dispatch`) dispatches from the mapped files
  and answers with the dispatched offset, which A reads without blocking after each put, as a
  broker would to wake its long polls (Java's ``ReputMessageService``);
* ``shipped``: as ``split``, but A sends B each batch's dispatch fields (``ship_batch``) through
  the pipe and B dispatches from them without reading the commit log.

It prints, per run: messages/s until every message is dispatched (visible to a pull), messages/s
of A's puts alone, CPU µs per message of A, of B and of both, and the largest lag A saw between
its end offset and the dispatched one (in messages). ``--neighbours 1`` runs a busy CPU loop in
another process during the case, standing in for a client on the same 2 cores. Cases interleave
within each round; the load average is printed before each run, and the medians at the end.

``--components`` measures each half alone in this process, no pipes: the inline put, A's put, B's
read-back dispatch, and the variant where A ships the dispatch fields (``ship_batch``) and B
dispatches them without reading the commit log.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.store.reput import (
    FRAME,
    OFFSET,
    STOP,
    CommitLogWriter,
    Reput,
    serve_dispatch,
    serve_shipped,
    ship_batch,
    store_config,
)
from codec.message import MessageRecord
from codec.properties import encode_properties
from store.config import StoreConfig
from store.message_store import MessageStore, system_clock_ms
from store.results import PutMessageStatus

BODY = bytes(range(256)) * 4  # 1 KiB
QUEUES = 8
TOPIC = "BenchSecondCore"
MODES = ("inline", "split", "shipped")
_FORK = multiprocessing.get_context("fork")


@dataclass
class RunResult:
    mode: str
    batch: int
    neighbours: int
    messages: int
    visible_s: float  # wall time from the first put until every message was dispatched
    put_s: float  # wall time of the puts alone
    cpu_a_s: float  # process A (the only process inline)
    cpu_b_s: float  # process B (0 inline)
    max_lag: int  # most messages written but not yet dispatched, as A saw it
    load: float  # 1-minute load average before the run

    def row(self) -> str:
        per = 1e6 / self.messages
        return (
            f"{self.mode:7} {self.batch:5} {self.neighbours:3} {self.load:6.1f} "
            f"{self.messages / self.visible_s:9.0f} {self.messages / self.put_s:9.0f} "
            f"{self.cpu_a_s * per:8.2f} {self.cpu_b_s * per:8.2f} {(self.cpu_a_s + self.cpu_b_s) * per:8.2f} "
            f"{self.max_lag:7}"
        )


HEADER = f"{'mode':7} {'batch':>5} {'nbr':>3} {'load1':>6} {'visible/s':>9} {'put/s':>9} "
HEADER += f"{'A µs':>8} {'B µs':>8} {'A+B µs':>8} {'max lag':>7}"


def make_batches(messages: int, batch: int) -> tuple[list[list[MessageRecord]], list[list[dict[str, str]]]]:
    """The records of a run, in batches of one queue each, and their decoded properties (what the
    batch processor hands the store)."""
    batches: list[list[MessageRecord]] = []
    props: list[list[dict[str, str]]] = []
    prefix = f"7F000001{os.getpid() & 0xFFFF:04X}18B4AAC2"
    for start in range(0, messages, batch):
        queue_id = (start // batch) % QUEUES
        records: list[MessageRecord] = []
        maps: list[dict[str, str]] = []
        for i in range(start, min(start + batch, messages)):
            mapping = {"UNIQ_KEY": f"{prefix}{i:012X}", "WAIT": "true", "TAGS": "TagA"}
            records.append(
                MessageRecord(
                    topic=TOPIC,
                    queue_id=queue_id,
                    body=BODY,
                    properties=encode_properties(mapping),
                    born_host=b"\x7f\x00\x00\x01",
                    born_port=40000,
                    store_host=b"\x7f\x00\x00\x01",
                    store_port=10911,
                    born_timestamp=1,
                )
            )
            maps.append(mapping)
        batches.append(records)
        props.append(maps)
    return batches, props


Timings = tuple[float, float, float, float, int]  # visible s, put s, CPU A s, CPU B s, max lag


def run_inline(
    config: StoreConfig, batches: list[list[MessageRecord]], props: list[list[dict[str, str]]]
) -> Timings:
    store = MessageStore(config).open()
    try:
        cpu = time.process_time()
        start = time.perf_counter()
        for records, maps in zip(batches, props, strict=True):
            if store.put_messages(records, maps).status is not PutMessageStatus.PUT_OK:
                raise RuntimeError("inline put failed")
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
    finally:
        store.close()
    return elapsed, elapsed, cpu, 0.0, 0


def run_split(
    config: StoreConfig,
    batches: list[list[MessageRecord]],
    props: list[list[dict[str, str]]],
    shipped: bool = False,
) -> Timings:
    door_r, door_w = os.pipe()
    answer_r, answer_w = os.pipe()
    report_r, report_w = _FORK.Pipe(duplex=False)
    proc = _FORK.Process(
        target=serve_shipped if shipped else serve_dispatch,
        args=(config, system_clock_ms, door_r, answer_w, report_w),
        daemon=True,
    )
    proc.start()
    os.close(door_r)
    os.close(answer_w)
    os.set_blocking(answer_r, False)
    writer = CommitLogWriter(config, system_clock_ms)
    per_message = 0
    dispatched = end = max_lag = 0
    try:
        cpu = time.process_time()
        start = time.perf_counter()
        for records, maps in zip(batches, props, strict=True):
            end = writer.put(records, maps)
            if shipped:
                data = ship_batch(records, writer.last_layouts, maps)
                os.write(door_w, FRAME.pack(len(data), end) + data)
            else:
                os.write(door_w, OFFSET.pack(end))
            try:
                data = os.read(answer_r, 65536)
            except BlockingIOError:
                pass
            else:
                dispatched = max(value for (value,) in OFFSET.iter_unpack(data))
            max_lag = max(max_lag, end - dispatched)
            per_message = per_message or (end // len(records))
        put_s = time.perf_counter() - start
        os.write(door_w, FRAME.pack(0, 0) if shipped else OFFSET.pack(STOP))
        os.set_blocking(answer_r, True)
        while dispatched < end:
            data = os.read(answer_r, 65536)
            if not data:
                raise RuntimeError("the dispatcher died")
            dispatched = max(value for (value,) in OFFSET.iter_unpack(data))
        visible_s = time.perf_counter() - start
        cpu = time.process_time() - cpu
        _records, cpu_b = report_r.recv()
    finally:
        writer.close()
        for fd in (door_w, answer_r):
            os.close(fd)
        proc.join(timeout=60)
    return visible_s, put_s, cpu, cpu_b, max_lag // max(per_message, 1)


def _spin() -> None:
    while True:
        pass


def run_case(mode: str, batch: int, neighbours: int, messages: int, root: Path, file_size: int) -> RunResult:
    """One run in a fresh store under ``root`` (removed afterwards unless it existed before)."""
    batches, props = make_batches(messages, batch)
    config = store_config(root, file_size)
    spinners = [_FORK.Process(target=_spin, daemon=True) for _ in range(neighbours)]
    for spinner in spinners:
        spinner.start()
    load = os.getloadavg()[0]
    try:
        if mode == "inline":
            times = run_inline(config, batches, props)
        else:
            times = run_split(config, batches, props, shipped=mode == "shipped")
    finally:
        for spinner in spinners:
            spinner.terminate()
            spinner.join()
    return RunResult(mode, batch, neighbours, messages, *times[:4], times[4], load)


def measure_components(
    batch: int, messages: int, root: Path, file_size: int
) -> tuple[float, float, float, float, float]:
    """CPU µs per message, in this one process with no pipe and no second process: the inline put,
    the put without its dispatch (A's work), and the dispatch read back from that commit log (B's
    work, ``Reput.dispatch`` over it all at once), and for the variant without a read-back A's
    packing of the dispatch fields (``ship_batch``) and B's dispatch of them. What the split costs
    before any scheduling; the packing is timed per batch (many short intervals)."""
    pack = 0.0
    batches, props = make_batches(messages, batch)
    inline = run_inline(store_config(root / "inline", file_size), batches, props)[2]
    config = store_config(root / "split", file_size)
    batches, props = make_batches(messages, batch)  # fresh records: the inline put stamped the others
    writer = CommitLogWriter(config, system_clock_ms)
    try:
        cpu = time.process_time()
        end = 0
        for records, maps in zip(batches, props, strict=True):
            end = writer.put(records, maps)
        put_only = time.process_time() - cpu
    finally:
        writer.close()
    reput = Reput(config, system_clock_ms)
    try:
        cpu = time.process_time()
        reput.dispatch(0, end)
        read_back = time.process_time() - cpu
    finally:
        reput.close()
    # The variant that ships the dispatch fields instead: A's packing, then B's dispatch of them.
    config = store_config(root / "shipped", file_size)
    batches, props = make_batches(messages, batch)
    writer = CommitLogWriter(config, system_clock_ms)
    shipped: list[bytes] = []
    try:
        for records, maps in zip(batches, props, strict=True):
            writer.put(records, maps)
            cpu = time.process_time()
            shipped.append(ship_batch(records, writer.last_layouts, maps))
            pack += time.process_time() - cpu
    finally:
        writer.close()
    reput = Reput(config, system_clock_ms)
    try:
        cpu = time.process_time()
        for data in shipped:
            reput.dispatch_shipped(data)
        unpack = time.process_time() - cpu
    finally:
        reput.close()
    scale = 1e6 / messages
    return inline * scale, put_only * scale, read_back * scale, pack * scale, unpack * scale


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> list[RunResult]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=32000, help="messages per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", default="1,16", help="batch sizes, comma-separated")
    parser.add_argument("--neighbours", default="0,1", help="busy neighbour processes, comma-separated")
    parser.add_argument("--modes", default=",".join(MODES), help="of inline, split, shipped")
    parser.add_argument("--file-size", type=int, default=256 << 20, help="commit-log file size")
    parser.add_argument("--dir", help="where the temporary stores go (default: the temp dir)")
    parser.add_argument(
        "--components", action="store_true", help="only the CPU of each half in one process (no pipes)"
    )
    args = parser.parse_args(argv)
    sizes = [int(b) for b in args.batches.split(",")]
    crowds = [int(n) for n in args.neighbours.split(",")]
    chosen = [m for m in MODES if m in args.modes.split(",")]
    base = Path(tempfile.mkdtemp(prefix="bench-second-core-", dir=args.dir))
    results: list[RunResult] = []
    if args.components:
        try:
            out(
                f"{'batch':>5} {'load1':>6} {'inline µs':>9} {'put-only µs':>11} {'read-back µs':>12} "
                f"{'ship µs':>8} {'shipped µs':>10}"
            )
            for rnd in range(args.rounds):
                for batch in sizes:
                    load = os.getloadavg()[0]
                    root = base / f"{rnd}-{batch}"
                    inline, put_only, read_back, pack, unpack = measure_components(
                        batch, args.messages, root, args.file_size
                    )
                    shutil.rmtree(root, ignore_errors=True)
                    out(
                        f"{batch:5} {load:6.1f} {inline:9.2f} {put_only:11.2f} {read_back:12.2f} "
                        f"{pack:8.2f} {unpack:10.2f}"
                    )
        finally:
            shutil.rmtree(base, ignore_errors=True)
        return results
    out(f"{args.messages} messages a run, {os.cpu_count()} CPUs; load average {os.getloadavg()}")
    out(HEADER)
    try:
        for rnd in range(args.rounds):
            for batch in sizes:
                for crowd in crowds:
                    modes = chosen if rnd % 2 == 0 else chosen[::-1]  # alternate which goes first
                    for mode in modes:
                        root = base / f"{rnd}-{batch}-{crowd}-{mode}"
                        result = run_case(mode, batch, crowd, args.messages, root, args.file_size)
                        shutil.rmtree(root, ignore_errors=True)
                        results.append(result)
                        out(result.row())
    finally:
        shutil.rmtree(base, ignore_errors=True)
    out("medians:")
    out(HEADER)
    for batch in sizes:
        for crowd in crowds:
            for mode in chosen:
                runs = [r for r in results if (r.mode, r.batch, r.neighbours) == (mode, batch, crowd)]
                out(median_of(runs).row())
    out(f"load average at the end {os.getloadavg()}")
    return results


def median_of(runs: list[RunResult]) -> RunResult:
    """A row of the medians of each column (per-message columns from the medians of the runs)."""
    first = runs[0]
    return RunResult(
        first.mode,
        first.batch,
        first.neighbours,
        first.messages,
        first.messages / statistics.median(first.messages / r.visible_s for r in runs),
        first.messages / statistics.median(first.messages / r.put_s for r in runs),
        statistics.median(r.cpu_a_s for r in runs),
        statistics.median(r.cpu_b_s for r in runs),
        int(statistics.median(r.max_lag for r in runs)),
        statistics.median(r.load for r in runs),
    )


if __name__ == "__main__":
    main()
