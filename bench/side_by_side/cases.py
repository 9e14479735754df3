"""The benchmark cases: what each one asks of the driver, and on which server set-up it runs.

All messages are ``--size`` bytes (1 KiB by default), all topics are created with 8 queues before a
case runs, every throughput case reports msgs/s beside the server CPU µs per message. Cases marked
``sync_flush`` run on a second server started with ``flushDiskType=SYNC_FLUSH``; cases marked ``grpc``
on a third, the reference's broker then running inside the 5.3.3 Proxy in local mode; the others
share one ASYNC_FLUSH server per target and round (fresh store each round).

The gRPC cases drive the endpoint with ``rmqbench.GrpcBench`` (rocketmq-client-java 5.0.8,
plaintext); topics are created and backlogs filled over the remoting protocol as for the others.
Their warm-up lasts ``--warmup`` seconds and at least ``--grpc-warmup-msgs`` messages (a fresh JVM
compiles its hot paths over the first few thousand); the consumer cases fill that many more
messages than ``--backlog``, so the warm-up does not eat the measured backlog.

Every case waits for a quiet machine (``Params.settle``, settle.py) right before its measured
driver run: after creating its topic and filling any backlog, before the driver's warm-up. The
wait's readings go into the case's metrics as ``settle``, for calibration.calibrate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.side_by_side.calibration import Settle
from bench.side_by_side.driver import GRPC_DRIVER, RUN_TIMEOUT_S, run_driver
from bench.side_by_side.official import run_official, warmup_lines
from bench.side_by_side.profile import PhaseProfiler
from bench.side_by_side.servers import Target, create_topic, memory_kib, stored_messages

TOPIC_QUEUES = 8
IDLE_SETTLE_S = 3.0  # after the first send, before idle memory is read
BACKLOG = 100_000  # messages the push consumer drains
ASYNC_IN_FLIGHT = 1024
FIXED_RATE = 2000  # msgs/s of the latency case
LOOKUP_CONNECTIONS = 8
GRPC_SEND_THREADS = 16
GRPC_RECEIVE_THREADS = 4  # threads calling receive on one SimpleConsumer
GRPC_RECEIVE_BATCH = 32  # messages asked per receive
GRPC_WARMUP_MSGS = 5000  # messages before a gRPC case's window (--grpc-warmup-msgs)
FIFO_ATTRIBUTES = "+message.type=FIFO"  # TopicAttributes.TOPIC_MESSAGE_TYPE_ATTRIBUTE
# msgs/s a consumer drain is allowed at least before its driver is killed (a 100,000 backlog: 500 s)
DRAIN_FLOOR_MSGS_PER_S = 200


@dataclass(frozen=True)
class Params:
    """Knobs every case reads (command-line options)."""

    duration_s: float
    warmup_s: float
    size: int
    backlog: int = BACKLOG
    profile_dir: Path | None = None  # py-spy profiles of ours during producer cases (profile.py)
    grpc_warmup_msgs: int = GRPC_WARMUP_MSGS
    settle: Callable[[], Settle] | None = None  # waits for a quiet machine (None: no wait)
    # Called with each mark of a gRPC case's measured driver run (not of its backlog filling): a
    # profiler's start and stop, as bench/grpc/transport.py uses it (None: nothing)
    on_mark: Callable[[str], None] | None = None


def _settled(p: Params) -> dict[str, Any]:
    """Wait with ``p.settle`` right before a measured window: ``{"settle": readings}``, or nothing
    without a wait."""
    return {} if p.settle is None else {"settle": p.settle()}


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    run: Callable[[Target, Params, str], dict[str, Any]]
    sync_flush: bool = False
    grpc: bool = False  # needs a gRPC endpoint: runs on the set-up with the reference's Proxy
    higher_is_better: str = "msgs_per_s"  # the headline figure of the row


def _producer(target: Target, p: Params, topic: str, **options: Any) -> dict[str, Any]:
    create_topic(target.broker_addr, target.namesrv_addr, topic, TOPIC_QUEUES)
    settled = _settled(p)
    profiler = None
    if p.profile_dir is not None and target.name == "ours":
        profiler = PhaseProfiler(target.pids()[0], p.profile_dir / f"{topic}.txt")
    try:
        run = run_driver(
            "producer",
            target.pids(),
            on_mark=profiler.mark if profiler else None,
            namesrv=target.namesrv_addr,
            topic=topic,
            size=p.size,
            duration=p.duration_s,
            warmup=p.warmup_s,
            **options,
        )
    finally:
        if profiler is not None:
            profiler.stop()
    return {**run.metrics(), **settled}


def sync_1(target: Target, p: Params, topic: str) -> dict[str, Any]:
    return _producer(target, p, topic, threads=1, send="sync")


def sync_16(target: Target, p: Params, topic: str) -> dict[str, Any]:
    return _producer(target, p, topic, threads=16, send="sync")


def async_bounded(target: Target, p: Params, topic: str) -> dict[str, Any]:
    return _producer(target, p, topic, threads=4, send="async", inflight=ASYNC_IN_FLIGHT)


def batch_16(target: Target, p: Params, topic: str) -> dict[str, Any]:
    return _producer(target, p, topic, threads=16, send="batch", batch=16)


def fixed_rate(target: Target, p: Params, topic: str) -> dict[str, Any]:
    return _producer(target, p, topic, threads=8, send="sync", rate=FIXED_RATE)


def _fill_backlog(target: Target, p: Params, topic: str, extra: int = 0) -> tuple[int, float]:
    """Create ``topic`` and store ``p.backlog`` + ``extra`` messages in batches (not measured):
    (messages the broker holds, with the driver's priming send; the filling msgs/s)."""
    create_topic(target.broker_addr, target.namesrv_addr, topic, TOPIC_QUEUES)
    wanted = p.backlog + extra
    fill = run_driver(
        "producer",
        target.pids(),
        namesrv=target.namesrv_addr,
        topic=topic,
        size=p.size,
        threads=8,
        send="batch",
        batch=32,
        count=wanted,
        run_timeout_s=max(RUN_TIMEOUT_S, wanted / DRAIN_FLOOR_MSGS_PER_S),
    )
    stored = stored_messages(target.broker_addr, topic, TOPIC_QUEUES)
    if stored < wanted:
        raise RuntimeError(f"backlog: only {stored} of {wanted} messages stored")
    return stored, float(fill.result["tps"])


def consume_backlog(target: Target, p: Params, topic: str) -> dict[str, Any]:
    """Store ``p.backlog`` messages, then measure a push consumer draining them from the first
    offset: the clock starts at the first delivered message."""
    stored, fill_rate = _fill_backlog(target, p, topic)
    settled = _settled(p)
    run = run_driver(
        "consumer",
        target.pids(),
        namesrv=target.namesrv_addr,
        topic=topic,
        group=f"{topic}_group",
        count=stored,
    )
    out = {**run.metrics(), **settled}
    # The driver's consumer RT is store-to-delivery: for an old backlog it measures the backlog's age.
    for key in ("avg_rt_ms", "max_rt_ms", "p50_ms", "p99_ms", "p999_ms"):
        out[f"store_to_delivery_{key}"] = out.pop(key)
    out["backlog_fill_msgs_per_s"] = fill_rate
    return out


def _grpc_producer(
    target: Target, p: Params, topic: str, attributes: str = "", **options: Any
) -> dict[str, Any]:
    """Sends from one gRPC Producer for ``p.duration_s`` after the warm-up (``options``: the
    driver's threads, inflight, fifo)."""
    create_topic(target.broker_addr, target.namesrv_addr, topic, TOPIC_QUEUES, attributes)
    settled = _settled(p)
    run = run_driver(
        "send",
        target.pids(),
        main=GRPC_DRIVER,
        on_mark=p.on_mark,
        endpoint=target.grpc_addr,
        topic=topic,
        size=p.size,
        duration=p.duration_s,
        warmup=p.warmup_s,
        warmup_msgs=p.grpc_warmup_msgs,
        **options,
    )
    return {**run.metrics(), **settled}


def grpc_send(target: Target, p: Params, topic: str) -> dict[str, Any]:
    """Sync sends from 16 threads sharing one gRPC Producer."""
    return _grpc_producer(target, p, topic, threads=GRPC_SEND_THREADS)


def grpc_send_1(target: Target, p: Params, topic: str) -> dict[str, Any]:
    """Sync sends from one thread: each send's full round trip, one at a time."""
    return _grpc_producer(target, p, topic, threads=1)


def grpc_async(target: Target, p: Params, topic: str) -> dict[str, Any]:
    """One thread keeping at most :data:`ASYNC_IN_FLIGHT` ``sendAsync`` calls in flight."""
    return _grpc_producer(target, p, topic, inflight=ASYNC_IN_FLIGHT)


def grpc_fifo_16(target: Target, p: Params, topic: str) -> dict[str, Any]:
    """Sync FIFO sends from 16 threads, each its own message group, to a FIFO topic."""
    return _grpc_producer(target, p, topic, FIFO_ATTRIBUTES, threads=GRPC_SEND_THREADS, fifo="true")


def grpc_receive(target: Target, p: Params, topic: str) -> dict[str, Any]:
    """Store ``p.backlog`` messages (and the warm-up's), then a SimpleConsumer receives and
    acknowledges them: warm-up from the first message, then ``p.duration_s`` or until the backlog is
    drained. The RT figures are those of one receive with the acks of its batch."""
    stored, fill_rate = _fill_backlog(target, p, topic, p.grpc_warmup_msgs)
    settled = _settled(p)
    run = run_driver(
        "receive",
        target.pids(),
        main=GRPC_DRIVER,
        on_mark=p.on_mark,
        endpoint=target.grpc_addr,
        topic=topic,
        group=f"{topic}_group",
        count=stored,
        threads=GRPC_RECEIVE_THREADS,
        batch=GRPC_RECEIVE_BATCH,
        duration=p.duration_s,
        warmup=p.warmup_s,
        warmup_msgs=p.grpc_warmup_msgs,
    )
    out = {**run.metrics(), **settled}
    out["backlog_fill_msgs_per_s"] = fill_rate
    return out


def grpc_push(target: Target, p: Params, topic: str) -> dict[str, Any]:
    """Store ``p.backlog`` messages plus the warm-up's, then a gRPC PushConsumer drains them all: the
    window runs from the end of the warm-up's messages to the last message. Its RT figures are
    born-to-consumed (the age of the backlog), reported as ``store_to_delivery_*``."""
    stored, fill_rate = _fill_backlog(target, p, topic, p.grpc_warmup_msgs)
    settled = _settled(p)
    run = run_driver(
        "push",
        target.pids(),
        main=GRPC_DRIVER,
        run_timeout_s=max(RUN_TIMEOUT_S, stored / DRAIN_FLOOR_MSGS_PER_S),
        on_mark=p.on_mark,
        endpoint=target.grpc_addr,
        topic=topic,
        group=f"{topic}_push",
        count=stored,
        warmup_msgs=min(p.grpc_warmup_msgs, stored - 1),
    )
    out = {**run.metrics(), **settled}
    for key in ("avg_rt_ms", "max_rt_ms", "p50_ms", "p99_ms", "p999_ms"):
        out[f"store_to_delivery_{key}"] = out.pop(key)
    out["backlog_fill_msgs_per_s"] = fill_rate
    return out


def _lookups(target: Target, p: Params, topic: str, connections: int, threads: int) -> dict[str, Any]:
    create_topic(target.broker_addr, target.namesrv_addr, topic, TOPIC_QUEUES)
    settled = _settled(p)
    run = run_driver(
        "lookup",
        target.pids(),
        namesrv=target.namesrv_addr,
        topic=topic,
        connections=connections,
        threads=threads,
        duration=p.duration_s,
        warmup=p.warmup_s,
    )
    return {**run.metrics(), **settled}


def lookups_8_connections(target: Target, p: Params, topic: str) -> dict[str, Any]:
    return _lookups(target, p, topic, LOOKUP_CONNECTIONS, LOOKUP_CONNECTIONS)


def lookups_1_connection(target: Target, p: Params, topic: str) -> dict[str, Any]:
    return _lookups(target, p, topic, 1, LOOKUP_CONNECTIONS)


def _official(target: Target, p: Params, topic: str, program: str, *options: str) -> dict[str, Any]:
    """RocketMQ's own ``program`` on a topic of :data:`TOPIC_QUEUES` queues with ``--size`` bodies,
    like our rows (bench/side_by_side/official.py measures it)."""
    create_topic(target.broker_addr, target.namesrv_addr, topic, TOPIC_QUEUES)
    args = ["-n", target.namesrv_addr, "-t", topic, "-s", str(p.size), *options]
    settled = _settled(p)
    return {**run_official(program, target.pids(), warmup_lines(p.warmup_s), args).metrics(), **settled}


def official_sync_1(target: Target, p: Params, topic: str) -> dict[str, Any]:
    return _official(target, p, topic, "Producer", "-w", "1")


def official_sync_16(target: Target, p: Params, topic: str) -> dict[str, Any]:
    return _official(target, p, topic, "Producer", "-w", "16")


def official_async(target: Target, p: Params, topic: str) -> dict[str, Any]:
    """``-y true``: one thread sending asynchronously, held back only while the client's async
    executor queues over 10,000 sends (Producer.MAX_LENGTH_ASYNC_QUEUE)."""
    return _official(target, p, topic, "Producer", "-y", "true")


def official_batch(target: Target, p: Params, topic: str) -> dict[str, Any]:
    return _official(target, p, topic, "BatchProducer", "-w", "16", "-b", "16")


def official_defaults(target: Target, p: Params, topic: str) -> dict[str, Any]:
    """Producer with its own defaults but 16 threads: 128-byte bodies to the BenchmarkTest topic,
    which both brokers create at start with 1,024 queues (TopicConfigManager)."""
    del topic  # the program's default topic
    args = ["-n", target.namesrv_addr, "-w", "16"]
    settled = _settled(p)
    return {**run_official("Producer", target.pids(), warmup_lines(p.warmup_s), args).metrics(), **settled}


def idle_memory(target: Target) -> dict[str, Any]:
    """RSS of every server process once started and idle, anonymous apart from mapped files."""
    time.sleep(IDLE_SETTLE_S)
    kib = memory_kib(target.pids())
    return {key.replace("_kib", "_mib"): value / 1024 for key, value in kib.items()}


CASES: dict[str, Case] = {
    c.name: c
    for c in (
        Case("sync1", "sync send, 1 thread", sync_1),
        Case("sync16", "sync send, 16 threads", sync_16),
        Case("async", f"async send, {ASYNC_IN_FLIGHT:,} in flight", async_bounded),
        Case("batch", "batch send, 16 threads x 16", batch_16),
        Case("consume", "push consumer drains the backlog", consume_backlog),
        Case("syncflush16", "SYNC_FLUSH, sync send, 16 threads", sync_16, sync_flush=True),
        Case(
            "lookup8",
            f"NameServer lookups, {LOOKUP_CONNECTIONS} connections",
            lookups_8_connections,
        ),
        Case(
            "lookup1",
            f"NameServer lookups, 1 connection, {LOOKUP_CONNECTIONS} threads",
            lookups_1_connection,
        ),
        Case("rate2000", f"latency at {FIXED_RATE:,} msgs/s (8 threads, sync)", fixed_rate),
        Case("official_sync1", "official Producer, sync, 1 thread", official_sync_1),
        Case("official_sync16", "official Producer, sync, 16 threads", official_sync_16),
        Case("official_async", "official Producer -y true (async, 1 thread)", official_async),
        Case("official_batch", "official BatchProducer, 16 threads x 16", official_batch),
        Case(
            "official_defaults16",
            "official Producer, 16 threads, its defaults (128 B, BenchmarkTest: 1,024 queues)",
            official_defaults,
        ),
        Case("grpc_send1", "gRPC sync send, 1 thread", grpc_send_1, grpc=True),
        Case("grpc_send", f"gRPC sync send, {GRPC_SEND_THREADS} threads", grpc_send, grpc=True),
        Case("grpc_async", f"gRPC async send, {ASYNC_IN_FLIGHT:,} in flight", grpc_async, grpc=True),
        Case("grpc_fifo16", f"gRPC FIFO sync send, {GRPC_SEND_THREADS} threads", grpc_fifo_16, grpc=True),
        Case(
            "grpc_receive",
            f"gRPC SimpleConsumer receive + ack, {GRPC_RECEIVE_THREADS} threads x {GRPC_RECEIVE_BATCH}",
            grpc_receive,
            grpc=True,
        ),
        Case("grpc_push", "gRPC PushConsumer drains the backlog", grpc_push, grpc=True),
    )
}
GRPC_CASES = tuple(name for name, case in CASES.items() if case.grpc)
OFFICIAL_CASES = tuple(name for name in CASES if name.startswith("official_"))
# The official programs need a mirror of apache/rocketmq to build: selected by name only.
DEFAULT_CASES = tuple(name for name in CASES if name not in OFFICIAL_CASES)
