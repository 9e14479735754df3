"""Broker request CPU without sockets: SEND_MESSAGE_V2 frames (1 KiB body, keys and tags) decoded,
dispatched to the broker's send processor, stored (ASYNC_FLUSH) and the response frame encoded, in
one Trio task. Prints the best of several rounds in µs per send, the figure to watch for the
send hot path; the socket and scheduling costs on top of it are measured by the end-to-end
benchmarks against the real broker.

    python -m bench.broker [--sends 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import trio

from broker.app import BrokerApp
from broker.config import BrokerConfig
from codec.codes import RequestCode
from codec.command import RemotingCommand
from codec.frame import FrameDecoder, encode_frame
from codec.headers.send import SendMessageRequestHeaderV2
from codec.properties import encode_properties
from gateway.config import ServerConfig
from gateway.dispatch import ConnectionInfo, RequestContext


def send_frame(i: int) -> bytes:
    header = SendMessageRequestHeaderV2(
        producer_group="bench",
        topic="BenchTopic",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=i % 4,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties({"KEYS": f"key-{i}", "TAGS": "TagA", "WAIT": "true"}),
        reconsume_times=0,
        unit_mode=False,
        batch=False,
    )
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header, body=b"x" * 1024)
    request.opaque = i
    return encode_frame(request)


async def measure(root: Path, sends: int, rounds: int) -> list[float]:
    config = BrokerConfig.from_properties({"storePathRootDir": str(root), "brokerName": "bench"})
    config.namesrv_addr = ""
    app = BrokerApp(config, ServerConfig(port=0))
    frames = [send_frame(i) for i in range(sends)]
    ctx = RequestContext(ConnectionInfo(1, "127.0.0.1:50000", "127.0.0.1:10911"))
    results = []
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        for _ in range(rounds):
            decoder = FrameDecoder()
            start = time.perf_counter()
            for frame in frames:
                for request in decoder.feed(frame):
                    response = await app.dispatcher.dispatch(ctx, request)
                    if response is None or response.code != 0:
                        raise RuntimeError(f"send failed: {response}")
                    encode_frame(response)
            results.append((time.perf_counter() - start) / sends * 1e6)
        app.shutdown()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = trio.run(measure, Path(tmp), args.sends, args.rounds)
    print(
        f"send (decode + dispatch + store + encode): best {min(results):.1f} µs, "
        f"median {sorted(results)[len(results) // 2]:.1f} µs per send over {args.rounds} rounds"
    )


if __name__ == "__main__":
    main()
