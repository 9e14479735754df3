"""Broker request CPU without sockets: send frames (1 KiB bodies) decoded, dispatched to the
broker's send processor, stored (ASYNC_FLUSH) and the response frame encoded, in one Trio task.
Prints the best of several rounds in CPU µs per message (``time.process_time``: on a shared
machine wall time moves with the neighbours, CPU time much less), the figure to watch for the
send hot path;
the socket and scheduling costs on top of it are measured by the end-to-end benchmarks against
the real broker (``python -m bench.side_by_side``).

The send cases carry the properties a rocketmq-client 5.3.3 producer sends (``WAIT``,
``UNIQ_KEY``; the single send also ``KEYS`` and ``TAGS``):

* ``single``: SEND_MESSAGE_V2, one message per request;
* ``batch``: SEND_BATCH_MESSAGE of ``--batch`` messages (16, as the side-by-side batch case),
  each with its own ``UNIQ_KEY`` and the batch's own ``UNIQ_KEY`` in the header, as
  ``DefaultMQProducer.batch`` builds it. Reported per message;
* ``pull``: PULL_MESSAGE of 32 messages (``DefaultMQPushConsumer``'s pullBatchSize) with the
  subscription ``*``, over messages stored by batch sends first (not measured). Per message.

``both`` runs the two send cases; ``all`` adds the pull.

    python -m bench.broker [--case single|batch|pull|both|all] [--sends 3000] [--rounds 5] [--batch 16]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import trio

from bench.broker.frames import BODY_SIZE, CLIENT_IDS, send_header
from broker.app import BrokerApp
from broker.config import BrokerConfig
from codec.batch import BatchEntry, encode_batch
from codec.codes import RequestCode
from codec.command import RemotingCommand
from codec.frame import FrameDecoder, encode_frame
from codec.headers.pull import PullMessageRequestHeader, PullSysFlag
from codec.properties import encode_properties
from gateway.transport.config import ServerConfig
from gateway.transport.dispatch import ConnectionInfo, RequestContext


def send_frame(i: int) -> bytes:
    """One SEND_MESSAGE_V2 frame with keys and a tag."""
    props = encode_properties(
        {"KEYS": f"key-{i}", "TAGS": "TagA", "WAIT": "true", "UNIQ_KEY": CLIENT_IDS.next_id()}
    )
    request = RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, send_header(i, props, batch=False), body=b"x" * BODY_SIZE
    )
    request.opaque = i
    return encode_frame(request)


def batch_frame(i: int, size: int) -> bytes:
    """One SEND_BATCH_MESSAGE frame of ``size`` messages."""
    entries = [
        BatchEntry(0, b"x" * BODY_SIZE, encode_properties({"WAIT": "true", "UNIQ_KEY": CLIENT_IDS.next_id()}))
        for _ in range(size)
    ]
    props = encode_properties({"WAIT": "true", "UNIQ_KEY": CLIENT_IDS.next_id()})
    request = RemotingCommand.request(
        RequestCode.SEND_BATCH_MESSAGE, send_header(i, props, batch=True), body=encode_batch(entries)
    )
    request.opaque = i
    return encode_frame(request)


PULL_BATCH = 32  # DefaultMQPushConsumer.pullBatchSize
QUEUES = 4  # the queues send_header spreads the sends over


def pull_frame(i: int, queue_offset: int) -> bytes:
    """One PULL_MESSAGE frame for ``PULL_BATCH`` messages of queue ``i % QUEUES``, as a push
    consumer's first pull of a subscription sends it (no commit offset, no suspension)."""
    header = PullMessageRequestHeader(
        consumer_group="bench-group",
        topic="BenchTopic",
        queue_id=i % QUEUES,
        queue_offset=queue_offset,
        max_msg_nums=PULL_BATCH,
        sys_flag=int(PullSysFlag.SUBSCRIPTION),
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header)
    request.opaque = i
    return encode_frame(request)


async def measure(
    root: Path, frames: list[bytes], per_frame: int, rounds: int, stored: list[bytes] | None = None
) -> list[float]:
    """CPU µs per message of each round over ``frames`` (``per_frame`` messages each), after
    ``stored`` (send frames, not measured) when given."""
    config = BrokerConfig.from_properties({"storePathRootDir": str(root), "brokerName": "bench"})
    config.namesrv_addr = ""
    app = BrokerApp(config, ServerConfig(port=0))
    ctx = RequestContext(ConnectionInfo(1, "127.0.0.1:50000", "127.0.0.1:10911"))
    results = []
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        for request in FrameDecoder().feed(b"".join(stored or [])):
            await app.dispatcher.dispatch(ctx, request)
        for _ in range(rounds):
            decoder = FrameDecoder()
            start = time.process_time()
            for frame in frames:
                for request in decoder.feed(frame):
                    response = await app.dispatcher.dispatch(ctx, request)
                    if response is None or response.code != 0:
                        raise RuntimeError(f"send failed: {response}")
                    encode_frame(response)
            results.append((time.process_time() - start) / (len(frames) * per_frame) * 1e6)
        app.shutdown()
    return results


def _report(name: str, results: list[float]) -> None:
    print(
        f"{name}: best {min(results):.1f} µs, median {sorted(results)[len(results) // 2]:.1f} µs "
        f"CPU per message over {len(results)} rounds"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=("single", "batch", "pull", "both", "all"), default="both")
    parser.add_argument("--sends", type=int, default=3000, help="messages per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=16, help="messages per batch request")
    args = parser.parse_args()
    if args.case in ("single", "both", "all"):
        frames = [send_frame(i) for i in range(args.sends)]
        with tempfile.TemporaryDirectory() as tmp:
            results = trio.run(measure, Path(tmp), frames, 1, args.rounds)
        _report("single send (decode + dispatch + store + encode)", results)
    if args.case in ("batch", "both", "all"):
        frames = [batch_frame(i, args.batch) for i in range(max(args.sends // args.batch, 1))]
        with tempfile.TemporaryDirectory() as tmp:
            results = trio.run(measure, Path(tmp), frames, args.batch, args.rounds)
        _report(f"batch send of {args.batch}", results)
    if args.case in ("pull", "all"):
        pulls = max(args.sends // PULL_BATCH, QUEUES)
        per_queue = (pulls + QUEUES - 1) // QUEUES * PULL_BATCH
        stored = [batch_frame(i, PULL_BATCH) for i in range(per_queue // PULL_BATCH * QUEUES)]
        frames = [pull_frame(i, i // QUEUES * PULL_BATCH) for i in range(pulls)]
        with tempfile.TemporaryDirectory() as tmp:
            results = trio.run(measure, Path(tmp), frames, PULL_BATCH, args.rounds, stored)
        _report(f"pull of {PULL_BATCH}", results)


if __name__ == "__main__":
    main()
