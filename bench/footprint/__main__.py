"""Store footprint on disk: ours beside the real Apache RocketMQ broker after the same workload.

``python -m bench.footprint`` starts our gateway (``rmq-gateway standalone``) and the reference
5.3.3 NameServer and Broker (Maven Central jars, ``compat_tests/reference.py``), both with their
default file sizes (1 GiB commit-log files, 300,000-unit consume-queue files, 5M-slot index
files), creates 89 topics of 8 queues on each over the wire (UPDATE_AND_CREATE_TOPIC) and sends
3,000 small messages round-robin over them (SEND_MESSAGE_V2), like one run of Apache's end-to-end
suite. Both brokers are then stopped and the blocks their store directories occupy are counted
(``st_blocks``: what ``du`` reports, sparse files counted by the blocks they really hold).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.frame import FrameDecoder, encode_frame
from codec.headers.admin import CreateTopicRequestHeader
from codec.headers.send import SendMessageRequestHeaderV2
from codec.properties import encode_properties
from compat_tests.reference import ReferenceServers, free_port, wait_routed

REPO = Path(__file__).resolve().parents[2]
TOPICS = 89
QUEUES = 8
MESSAGES = 3000
BODY = b"footprint " * 20  # 200 bytes
DEFAULT_COMMIT_LOG = 1024 * 1024 * 1024  # MessageStoreConfig.mappedFileSizeCommitLog


class WireClient:
    """One blocking connection that sends requests and reads their responses, in order."""

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=15)
        self.decoder = FrameDecoder()
        self.pending: list[RemotingCommand] = []
        self.opaque = 0

    def call(self, request: RemotingCommand) -> RemotingCommand:
        self.opaque += 1
        request.opaque = self.opaque
        self.sock.sendall(encode_frame(request))
        while not self.pending:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("connection closed")
            self.pending += self.decoder.feed(data)
        return self.pending.pop(0)

    def close(self) -> None:
        self.sock.close()


def run_workload(broker_addr: str) -> None:
    client = WireClient(broker_addr)
    topics = [f"FootprintTopic{i:02d}" for i in range(TOPICS)]
    for topic in topics:
        header = CreateTopicRequestHeader(topic, "TBW102", QUEUES, QUEUES, 6, "SINGLE_TAG", False)
        response = client.call(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header))
        if response.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"create {topic}: {response.code} {response.remark}")
    for i in range(MESSAGES):
        topic = topics[i % TOPICS]
        header = SendMessageRequestHeaderV2(
            producer_group="footprint",
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=(i // TOPICS) % QUEUES,
            sys_flag=0,
            born_timestamp=int(time.time() * 1000),
            flag=0,
            properties=encode_properties({"KEYS": f"key-{i}", "UNIQ_KEY": f"FOOTPRINT{i:08d}"}),
            reconsume_times=0,
            unit_mode=False,
            batch=False,
        )
        for _attempt in range(50):  # a busy broker (SYSTEM_BUSY) asks the client to back off
            response = client.call(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header, body=BODY))
            if response.code != ResponseCode.SYSTEM_BUSY:
                break
            time.sleep(0.1)
        if response.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"send {i}: {response.code} {response.remark}")
    client.close()


def disk_bytes(root: Path) -> tuple[int, int]:
    """(bytes of blocks held, apparent bytes) of every file below ``root``."""
    held = apparent = 0
    for path in root.rglob("*"):
        if path.is_file():
            st = path.stat()
            held += st.st_blocks * 512
            apparent += st.st_size
    return held, apparent


def measure_ours(work: Path) -> tuple[int, int]:
    ns_port, broker_port = free_port(), free_port(offsets=(-2, 0))  # the VIP channel at - 2
    env = {**os.environ, "HOME": str(work)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gateway.cli",
            "standalone",
            "--namesrv-port",
            str(ns_port),
            "--broker-port",
            str(broker_port),
            "--grpc-port",
            "0",
            "--store",
            str(work / "store"),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", broker_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("our gateway did not start") from None
                time.sleep(0.05)
        run_workload(f"127.0.0.1:{broker_port}")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    return disk_bytes(work / "store")


def measure_reference(work: Path) -> tuple[int, int]:
    work.mkdir(parents=True)
    servers = ReferenceServers.on_loopback(
        work, extra_conf=(f"mappedFileSizeCommitLog={DEFAULT_COMMIT_LOG}",)
    )
    try:
        servers.start_namesrv()
        servers.start_broker()
        wait_routed(servers.namesrv_addr, servers.broker_addr, 60)
        run_workload(servers.broker_addr)
    finally:
        servers.stop()
    return disk_bytes(servers.store)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ours = measure_ours(Path(tmp) / "ours")
        reference = measure_reference(Path(tmp) / "reference")
    mib = 2**20
    print(f"workload: {TOPICS} topics x {QUEUES} queues, {MESSAGES} messages of {len(BODY)} bytes")
    print(f"ours:      {ours[0] / mib:8.1f} MiB on disk ({ours[1] / mib:8.1f} MiB apparent)")
    print(f"reference: {reference[0] / mib:8.1f} MiB on disk ({reference[1] / mib:8.1f} MiB apparent)")
    print(f"ratio ours/reference on disk: {ours[0] / reference[0]:.2f}")


if __name__ == "__main__":
    main()
