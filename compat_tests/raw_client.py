"""A minimal remoting client for the one message Java clients refuse to send: an empty body.

``DefaultMQProducer`` rejects a zero-length body before sending (``Validators.checkMessage``, both
4.9.8 and 5.3.3, for single and batch sends), so the recorder sends it itself, through the broker
proxy: as SEND_MESSAGE_V2 (the 5.3.3 broker answers SYSTEM_ERROR, a NullPointerException on the
null body) and as a one-entry SEND_BATCH_MESSAGE whose entry has a zero-length body (stored). Frames
are built by hand (``RemotingCommand.encode``, ``SendMessageRequestHeaderV2``,
``MessageDecoder.encodeMessages``) with a JSON header and language ``PYTHON``; nothing here is
shared with ``codec/``.
"""

from __future__ import annotations

import json
import socket
import struct
import time

from compat_tests.frame_oracle import parse_command, split_frames

SEND_MESSAGE_V2 = 310
SEND_BATCH_MESSAGE = 320
VERSION_V5_3_3 = 479  # MQVersion ordinal the request claims
READ_TIMEOUT_S = 10.0


def send_message_v2(
    addr: tuple[str, int],
    *,
    group: str,
    topic: str,
    broker_name: str,
    body: bytes,
    properties: str,
    queue_id: int = 0,
    opaque: int = 1,
    batch: bool = False,
) -> dict[str, object]:
    """Send one SEND_MESSAGE_V2 (or, with ``batch``, SEND_BATCH_MESSAGE whose ``body`` is already a
    batch body) and return the decoded response command (without its body).

    Raises OSError or TimeoutError when the broker does not answer.
    """
    ext = {
        "a": group,  # producerGroup
        "b": topic,
        "c": "TBW102",  # defaultTopic
        "d": "4",  # defaultTopicQueueNums
        "e": str(queue_id),
        "f": "0",  # sysFlag
        "g": str(int(time.time() * 1000)),  # bornTimestamp
        "h": "0",  # flag
        "i": properties,
        "j": "0",  # reconsumeTimes
        "k": "false",  # unitMode
        "m": "true" if batch else "false",  # batch
        "n": broker_name,
    }
    header = {
        "code": SEND_BATCH_MESSAGE if batch else SEND_MESSAGE_V2,
        "extFields": ext,
        "flag": 0,
        "language": "PYTHON",
        "opaque": opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": VERSION_V5_3_3,
    }
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    frame = struct.pack(">iI", 4 + len(raw) + len(body), len(raw)) + raw + body
    with socket.create_connection(addr, timeout=READ_TIMEOUT_S) as sock:
        sock.sendall(frame)
        buf = b""
        deadline = time.monotonic() + READ_TIMEOUT_S
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
            frames, _ = split_frames(buf)
            if frames:
                cmd = parse_command(frames[0])
                cmd.pop("body")
                return cmd
    raise TimeoutError("no response to the raw SEND_MESSAGE_V2")


def batch_entry(body: bytes, properties: str, flag: int = 0) -> bytes:
    """One entry of a batch body (``MessageDecoder.encodeMessage``): size, magic 0, crc 0, flag, body,
    properties."""
    props = properties.encode()
    rest = struct.pack(">iiii", 0, 0, flag, len(body)) + body + struct.pack(">h", len(props)) + props
    return struct.pack(">i", 4 + len(rest)) + rest
