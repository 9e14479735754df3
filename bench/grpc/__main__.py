"""Choosing the gRPC stack by measurement: our h2-on-Trio server against grpcio's own server.

Two figures for each candidate:

* start-up: the seconds and resident memory the imports add to a process that has Trio loaded
  (the broker's situation), best of ``--rounds`` fresh interpreters;
* round-trip CPU per unary call: a server subprocess answers ``--calls`` sequential
  SendMessage-sized unary calls (a SendMessageRequest with one 1 KiB message is parsed and a
  SendMessageResponse built and serialised, as a handler would) from one grpcio client channel;
  the server's user+system CPU (``/proc/PID/stat``) divided by the calls, best of the rounds.
  grpcio runs its synchronous server with a thread pool, twice: each call handed to a Trio loop
  (``trio.from_thread.run``: the broker's state lives in Trio, so this is how it would serve), and
  answered in the pool thread (a lower bound no real handler reaches).

    python -m bench.grpc [--calls 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import grpc

from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

PATH = "/apache.rocketmq.v2.MessagingService/SendMessage"

_PB2 = "gateway.transport.grpc.proto.rocketmq_v2_pb2"
CANDIDATES = {  # name: (--serve kind, what it imports)
    "h2 on Trio (ours)": ("h2", f"import gateway.transport.grpc.connection, {_PB2}"),
    "grpcio -> Trio": ("grpcio-trio", f"import grpc, {_PB2}"),
    "grpcio alone": ("grpcio", f"import grpc, {_PB2}"),
}

_STARTUP = """
import os, time, trio
def rss():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
before = rss()
t = time.perf_counter()
{imports}
print(time.perf_counter() - t, rss() - before)
"""


def _handle(request: bytes) -> bytes:
    message = pb.SendMessageRequest.FromString(request).messages[0]
    entry = pb.SendResultEntry(message_id=message.system_properties.message_id, offset=1)
    entry.status.code = pb.OK
    response = pb.SendMessageResponse(entries=[entry])
    response.status.code = pb.OK
    return response.SerializeToString()


def serve_h2() -> None:
    import trio

    from gateway.transport.grpc.config import GrpcServerConfig
    from gateway.transport.grpc.connection import ServerCall, unary
    from gateway.transport.grpc.server import GrpcServer

    async def send(request: bytes, call: ServerCall) -> bytes:
        return _handle(request)

    async def main() -> None:
        server = GrpcServer({PATH: unary(send)}, GrpcServerConfig(grpc_server_port=0))
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            print(server.port, flush=True)

    trio.run(main)


def serve_grpcio() -> None:
    from concurrent import futures

    def send(request: bytes, context: grpc.ServicerContext) -> bytes:
        return _handle(request)

    handler = grpc.method_handlers_generic_handler(
        "apache.rocketmq.v2.MessagingService", {"SendMessage": grpc.unary_unary_rpc_method_handler(send)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    server.wait_for_termination()


def serve_grpcio_trio() -> None:
    """grpcio's server with each call handed to a Trio loop, where the broker's state lives."""
    from concurrent import futures

    import trio

    async def handle_in_trio(request: bytes) -> bytes:
        return _handle(request)

    def send(request: bytes, context: grpc.ServicerContext) -> bytes:
        return trio.from_thread.run(handle_in_trio, request, trio_token=token)

    async def main() -> None:
        nonlocal token
        token = trio.lowlevel.current_trio_token()
        handler = grpc.method_handlers_generic_handler(
            "apache.rocketmq.v2.MessagingService", {"SendMessage": grpc.unary_unary_rpc_method_handler(send)}
        )
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[handler])
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        print(port, flush=True)
        await trio.sleep_forever()

    token: trio.lowlevel.TrioToken | None = None
    trio.run(main)


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _request() -> bytes:
    message = pb.Message(body=b"x" * 1024)
    message.topic.name = "BenchTopic"
    message.system_properties.message_id = "01" * 13
    message.system_properties.tag = "TagA"
    message.system_properties.message_type = pb.NORMAL
    message.system_properties.born_host = "127.0.0.1"
    message.system_properties.born_timestamp.GetCurrentTime()
    return pb.SendMessageRequest(messages=[message]).SerializeToString()


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def round_trip(kind: str, calls: int) -> tuple[float, float, float, float]:
    """(server CPU µs per call, wall µs per call, server RSS MiB after the calls,
    server CPU ms while idle for a second)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.grpc", "--serve", kind], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            method = channel.unary_unary(PATH)
            request = _request()
            for _ in range(200):  # warm up: connection, caches
                method(request, timeout=10)
            cpu, wall = _cpu_s(server.pid), time.perf_counter()
            for _ in range(calls):
                method(request, timeout=10)
            cpu, wall = _cpu_s(server.pid) - cpu, time.perf_counter() - wall
            idle = _cpu_s(server.pid)
            time.sleep(1)
            idle = _cpu_s(server.pid) - idle
        return cpu / calls * 1e6, wall / calls * 1e6, _rss_mib(server.pid), idle * 1e3
    finally:
        server.kill()
        server.wait()


def startup(imports: str) -> tuple[float, float]:
    """(seconds, KiB of peak RSS) the imports add after Trio."""
    out = subprocess.run(
        [sys.executable, "-c", _STARTUP.format(imports=imports)], capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), float(out[1])


def gateway_startup(grpc: bool) -> tuple[float, float]:
    """(seconds to the ``ready`` line, RSS MiB then) of ``rmq-gateway standalone``, the endpoint
    on or off (``--no-grpc``)."""
    import signal
    import tempfile

    with tempfile.TemporaryDirectory(prefix="rmq-grpc-bench-") as store:
        args = ["standalone", "--namesrv-port", "0", "--broker-port", "0", "--store", store]
        command = [sys.executable, "-m", "gateway.cli", *args, *([] if grpc else ["--no-grpc"])]
        started = time.perf_counter()
        process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        try:
            assert process.stderr is not None
            for line in process.stderr:
                if "ready:" in line:
                    return time.perf_counter() - started, _rss_mib(process.pid)
            raise RuntimeError("the gateway exited before it was ready")
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", choices=["h2", "grpcio", "grpcio-trio"])
    args = parser.parse_args()
    if args.serve == "h2":
        serve_h2()
        return
    if args.serve == "grpcio":
        serve_grpcio()
        return
    if args.serve == "grpcio-trio":
        serve_grpcio_trio()
        return
    for endpoint_on in (False, True):
        seconds, rss = min(gateway_startup(endpoint_on) for _ in range(args.rounds))
        label = "on" if endpoint_on else "off (--no-grpc)"
        print(f"rmq-gateway standalone, gRPC endpoint {label}: ready in {seconds:.2f} s, {rss:.1f} MiB")
    print(
        f"{'candidate':<20} {'import s':>9} {'import MiB':>11} {'server CPU µs/call':>19}"
        f" {'wall µs/call':>13} {'server RSS MiB':>15} {'idle CPU ms/s':>14}"
    )
    for name, (kind, imports) in CANDIDATES.items():
        seconds, kib = min(startup(imports) for _ in range(args.rounds))
        cpu, wall, rss, idle = min(round_trip(kind, args.calls) for _ in range(args.rounds))
        print(
            f"{name:<20} {seconds:>9.3f} {kib / 1024:>11.1f} {cpu:>19.0f} {wall:>13.0f}"
            f" {rss:>15.1f} {idle:>14.1f}"
        )


if __name__ == "__main__":
    main()
