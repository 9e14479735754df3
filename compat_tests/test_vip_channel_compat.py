"""The broker's VIP channel (``listenPort - 2``, ``BrokerController``'s fast remoting server) used by
real Java clients with ``setVipChannelEnabled(true)``, against our gateway AND the real 5.3.3 broker.

A 4.9.8 and a 5.3.3 producer send over the VIP port (``MixAll.brokerVIPChannel``: every send goes to
port - 2, so a missing VIP listener fails the send), and a push consumer of the same line, VIP
channel on, receives every message. A hand-built PULL_MESSAGE frame to the VIP port gets the same
code and remark from both targets: the fast server has no pull processor.
"""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import pytest

from compat_tests.frame_oracle import parse_command, split_frames
from compat_tests.scenario import CLIENT_LINES, of, run_scenario
from compat_tests.targets import ReferenceTarget, Target

pytestmark = [pytest.mark.compat, pytest.mark.slow]

COUNT = 20
STEP_S = 120.0
PULL_MESSAGE = 11
READ_TIMEOUT_S = 10.0


def vip_addr(target: Target) -> tuple[str, int]:
    """Port - 2 of the target's broker (every gateway target kind has ``broker_port``)."""
    if isinstance(target, ReferenceTarget):
        return "127.0.0.1", target.servers.broker_port - 2
    port: int = getattr(target, "broker_port")  # noqa: B009 - not part of the Target protocol
    return "127.0.0.1", port - 2


def raw_request(addr: tuple[str, int], code: int, ext: dict[str, str]) -> dict[str, object]:
    """One request with a JSON header, built by hand; the decoded response."""
    header = {
        "code": code,
        "extFields": ext,
        "flag": 0,
        "language": "JAVA",
        "opaque": 7,
        "serializeTypeCurrentRPC": "JSON",
        "version": 479,  # MQVersion of 5.3.3
    }
    raw = json.dumps(header, separators=(",", ":")).encode()
    frame = struct.pack(">iI", 4 + len(raw), len(raw)) + raw
    with socket.create_connection(addr, timeout=READ_TIMEOUT_S) as sock:
        sock.sendall(frame)
        buf = b""
        while True:
            chunk = sock.recv(65536)
            assert chunk, "the VIP port closed the connection without answering"
            buf += chunk
            frames, _ = split_frames(buf)
            if frames:
                return parse_command(frames[0])


@pytest.mark.parametrize("line", CLIENT_LINES)
def test_vip_channel_producer_and_consumer(target: Target, home: Path, line: str) -> None:
    naddr = target.namesrv_addr
    topic, group = f"VipTopic_{line.replace('.', '_')}", f"vipGroup_{line.replace('.', '_')}"
    sent = of(
        run_scenario(line, "produce", naddr, home, STEP_S, topic=topic, count=COUNT, vip_channel=True),
        "sent",
    )
    assert len(sent) == COUNT
    events = run_scenario(
        line,
        "consume",
        naddr,
        home,
        STEP_S,
        topic=topic,
        group=group,
        expect=COUNT,
        vip_channel=True,
    )
    received = {e["uid"] for e in of(events, "received")}
    assert received == {e["offsetMsgId"] for e in sent}


def test_vip_port_refuses_a_pull(target: Target) -> None:
    ext = {
        "consumerGroup": "vipRaw",
        "topic": "VipTopic_5_3_3",
        "queueId": "0",
        "queueOffset": "0",
        "maxMsgNums": "1",
        "sysFlag": "2",
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subVersion": "0",
    }
    answer = raw_request(vip_addr(target), PULL_MESSAGE, ext)
    assert (answer["code"], answer["remark"]) == (3, " request type 11 not supported")
