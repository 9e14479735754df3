"""Classic HA figures: replication lag, and CPU and latency of a send on the master with and
without a slave, ASYNC_MASTER against SYNC_MASTER (``inSyncReplicas=2``).

``python -m bench.ha_replication [--messages N]`` starts ``rmq-gateway namesrv``, a master and
(except in the first case) a slave as processes in a temporary directory, sends N messages of
1 KiB one at a time over one connection, and prints per case: the master's and the slave's CPU
per message (from ``/proc/PID/stat``), the median and p99 send latency, and (with a slave) the
replication lag: the time from a send's answer until the master sees the slave's ack of it,
asked by GET_BROKER_HA_STATUS on a second connection, over 100 more sends after the CPU pass.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import trio

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from gateway.transport.client import connect
from gateway.transport.connection import Connection
from tests.broker.ha_process import Server, broker
from tests.broker.helpers import send_request

TOPIC = "HaBench"
LAG_SAMPLES = 100
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


async def caught_up(admin: Connection) -> None:
    """Poll until the one slave has acked the master's whole commit log."""
    request = RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS, EmptyHeader())
    while True:
        status = json.loads((await admin.invoke(request, 5)).body)
        conns = status["haConnectionInfo"]
        if conns and conns[0]["slaveAckOffset"] >= status["masterCommitLogMaxOffset"]:
            return


async def drive(master: Server, slave: Server | None, messages: int) -> dict[str, float]:
    body = b"x" * 1024
    latencies: list[float] = []
    lags: list[float] = []
    async with connect(master.addr) as conn, connect(master.addr) as admin:
        for _ in range(50):  # warm-up (topic creation, first files)
            await conn.invoke(send_request(TOPIC, body), 10)
        if slave is not None:
            with trio.fail_after(60):
                request = RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS, EmptyHeader())
                while not json.loads((await admin.invoke(request, 5)).body)["haConnectionInfo"]:  # noqa: ASYNC110
                    await trio.sleep(0.05)
        assert master.proc is not None
        cpu_master = cpu_s(master.proc.pid)
        cpu_slave = cpu_s(slave.proc.pid) if slave is not None and slave.proc is not None else 0.0
        for i in range(messages):
            start = time.perf_counter()
            resp = await conn.invoke(send_request(TOPIC, body, queue_id=i % 4), 10)
            latencies.append(time.perf_counter() - start)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
        cpu_master = cpu_s(master.proc.pid) - cpu_master
        if slave is not None and slave.proc is not None:
            cpu_slave = cpu_s(slave.proc.pid) - cpu_slave
            for _ in range(LAG_SAMPLES):  # apart from the CPU pass: the polling costs the master CPU
                await conn.invoke(send_request(TOPIC, body), 10)
                answered = time.perf_counter()
                await caught_up(admin)
                lags.append(time.perf_counter() - answered)
    latencies.sort()
    out = {
        "master_cpu_us": cpu_master / messages * 1e6,
        "slave_cpu_us": cpu_slave / messages * 1e6,
        "latency_p50_ms": statistics.median(latencies) * 1000,
        "latency_p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
    }
    if lags:
        lags.sort()
        out["lag_p50_ms"] = statistics.median(lags) * 1000
        out["lag_max_ms"] = lags[-1] * 1000
    return out


def run_case(root: Path, name: str, master_conf: dict[str, str], with_slave: bool, messages: int) -> None:
    root.mkdir()
    namesrv = Server(root, "namesrv", ["namesrv", "--namesrv-port", "0"])
    started = [namesrv]
    try:
        namesrv.start()
        big = {"mappedFileSizeCommitLog": str(256 * 1024 * 1024)}
        master = broker(root, "master", namesrv.addr, {**big, **master_conf})
        started.append(master)
        master.start()
        slave = None
        if with_slave:
            slave = broker(root, "slave", namesrv.addr, {**big, "brokerRole": "SLAVE", "brokerId": "1"})
            started.append(slave)
            slave.start()
        figures = trio.run(drive, master, slave, messages)
        print(name, " ".join(f"{k}={v:.1f}" for k, v in figures.items()), flush=True)
    finally:
        for server in reversed(started):
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ha-bench-") as tmp:
        root = Path(tmp)
        run_case(root / "a", "ASYNC_MASTER, no slave:", {}, False, args.messages)
        run_case(root / "b", "ASYNC_MASTER + slave:  ", {}, True, args.messages)
        sync = {"brokerRole": "SYNC_MASTER", "inSyncReplicas": "2"}
        run_case(root / "c", "SYNC_MASTER + slave:   ", sync, True, args.messages)


if __name__ == "__main__":
    main()
