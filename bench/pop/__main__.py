"""``python -m bench.pop``: server CPU per message and throughput of POP + ack against PULL with
offset commit, ours beside the real Apache RocketMQ 5.3.3 broker started in the same run.

Both servers get the same stored messages (``--count`` messages of ``--size`` bytes on one topic of
four queues) and are driven by the same Python raw-frame client (:mod:`bench.pop.client`, one
request in flight), so the client's cost is equal and the ratio compares the servers:

* **pop + ack**: POP_MESSAGE of queue -1 (every queue), ``--batch`` messages at most, then one
  ACK_MESSAGE per message, as the 5.x remoting push consumer in POP mode acknowledges;
* **pull**: PULL_MESSAGE of each queue in turn, ``--batch`` at most, committing the previous batch's
  offset in the same request (``FLAG_COMMIT_OFFSET``, the push consumer's way).

Server CPU is utime + stime of the server processes from /proc, divided by the messages consumed.
``--revive`` measures instead when an unacknowledged message can be popped again (:mod:`.revive`).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from bench.pop.client import EMPTY_CODES, ack_one, fill, pop_batch, pull_batch
from bench.pop.revive import print_revive, run_revive
from bench.side_by_side.servers import REPO, Ours, Reference, Target, cpu_seconds, create_topic
from codec.codes import ResponseCode
from compat_tests.pop_raw import RawSession

TOPIC = "BenchPopT"
QUEUES = 4
EMPTY_LIMIT = 20  # consecutive empty answers before a phase gives up (all consumed or a fault)


@dataclass
class Phase:
    messages: int
    seconds: float
    cpu_s: float

    @property
    def cpu_us_per_msg(self) -> float:
        return self.cpu_s / max(self.messages, 1) * 1e6

    @property
    def msgs_per_s(self) -> float:
        return self.messages / self.seconds if self.seconds else 0.0


def pop_and_ack_all(session: RawSession, group: str, count: int, batch: int) -> int:
    consumed = empty = 0
    while consumed < count and empty < EMPTY_LIMIT:
        code, records = pop_batch(session, TOPIC, group, -1, 60_000, batch)
        if code in EMPTY_CODES or not records:
            empty += 1
            continue
        if code != ResponseCode.SUCCESS:
            raise RuntimeError(f"pop answered {code}")
        empty = 0
        for queue_id, offset, handle, _body in records:
            ack_one(session, TOPIC, group, queue_id, offset, handle)
        consumed += len(records)
    return consumed


def pull_all(session: RawSession, group: str, count: int, batch: int) -> int:
    consumed = 0
    offsets = [0] * QUEUES
    done = [False] * QUEUES
    while consumed < count and not all(done):
        for queue_id in range(QUEUES):
            if done[queue_id]:
                continue
            code, n, next_offset = pull_batch(
                session, TOPIC, group, queue_id, offsets[queue_id], offsets[queue_id], batch
            )
            if code == ResponseCode.PULL_RETRY_IMMEDIATELY:
                continue
            if code in EMPTY_CODES or n == 0:
                done[queue_id] = True
                continue
            if code != ResponseCode.SUCCESS:
                raise RuntimeError(f"pull answered {code}")
            consumed += n
            offsets[queue_id] = next_offset
    return consumed


def measure(target: Target, count: int, size: int, batch: int) -> dict[str, Phase]:
    """Fill the topic, then consume it all once by POP + ack and once by PULL (two groups)."""
    create_topic(target.broker_addr, target.namesrv_addr, TOPIC, QUEUES)
    out: dict[str, Phase] = {}
    with RawSession(target.broker_addr) as session:
        fill(session, TOPIC, count, size, QUEUES)
        time.sleep(1.0)  # the reference dispatches to its consume queues asynchronously
        for name, run in (("pop+ack", pop_and_ack_all), ("pull", pull_all)):
            cpu0, t0 = cpu_seconds(target.pids()), time.perf_counter()
            consumed = run(session, f"BenchPopG_{name.replace('+', '_')}", count, batch)
            out[name] = Phase(consumed, time.perf_counter() - t0, cpu_seconds(target.pids()) - cpu0)
            if consumed < count:
                raise RuntimeError(f"{target.name} {name}: {consumed} of {count} consumed")
    return out


def start(name: str) -> Ours | Reference:
    target: Ours | Reference = Ours(REPO) if name == "ours" else Reference()
    target.start()
    return target


def print_table(results: dict[str, dict[str, Phase]]) -> None:
    print(f"{'case':<10} {'server':<10} {'msgs':>7} {'msg/s':>9} {'CPU us/msg':>11}")
    for case in ("pop+ack", "pull"):
        for server, phases in results.items():
            p = phases[case]
            print(f"{case:<10} {server:<10} {p.messages:>7} {p.msgs_per_s:>9.0f} {p.cpu_us_per_msg:>11.1f}")
    if len(results) == 2:
        ours, ref = results["ours"], results["reference"]
        print("ratios ours/reference (CPU per message; throughput):")
        for case in ("pop+ack", "pull"):
            cpu = ratio(ours[case].cpu_us_per_msg, ref[case].cpu_us_per_msg)
            rate = ratio(ours[case].msgs_per_s, ref[case].msgs_per_s)
            print(f"  {case:<8} CPU {cpu}  throughput {rate}")
    for server, phases in results.items():
        cost = ratio(phases["pop+ack"].cpu_us_per_msg, phases["pull"].cpu_us_per_msg)
        print(f"{server}: pop+ack costs {cost} the server CPU of pull per message")


def ratio(value: float, base: float) -> str:
    """``x1.23``, or a word when ``base`` is 0: a short phase can use less CPU than the kernel's
    10 ms accounting tick shows."""
    return f"x{value / base:.2f}" if base else "(not measurable: too short)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pop", description=__doc__)
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--servers", default="ours,reference", help="comma-separated: ours, reference")
    parser.add_argument("--revive", action="store_true", help="measure the revive timing error instead")
    parser.add_argument("--revive-times", default="3000,10000", help="invisible times (ms) for --revive")
    parser.add_argument("--revive-messages", type=int, default=10)
    args = parser.parse_args(argv)
    print(
        "client: the same Python raw-frame client (bench.pop.client) for both servers, one request in flight"
    )
    results: dict[str, dict[str, Phase]] = {}
    revive: dict[str, dict[int, list[float]]] = {}
    for name in args.servers.split(","):
        target = start(name)
        try:
            if args.revive:
                times = [int(t) for t in args.revive_times.split(",")]
                revive[name] = run_revive(target, times, args.revive_messages)
            else:
                results[name] = measure(target, args.count, args.size, args.batch)
        finally:
            target.stop()
    if args.revive:
        print_revive(revive)
    else:
        print(f"{args.count} messages of {args.size} B, topic of {QUEUES} queues, batches of {args.batch}")
        print_table(results)


if __name__ == "__main__":
    main()
