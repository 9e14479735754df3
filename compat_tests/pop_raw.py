"""Raw POP frames for the compatibility suite, built by hand (nothing shared with ``codec/``).

A :class:`RawSession` holds one connection to a broker and sends requests with JSON headers
(``RemotingCommand.encode``), reading responses with :mod:`compat_tests.frame_oracle`, so the
requests the Java client never sends in that order (a double ack, an ack of an expired handle, a
change of invisible time after the ack, garbage handles) can be put to both brokers alike. The
broker's address comes from the NameServer's route of a topic (GET_ROUTEINFO_BY_TOPIC).
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

from compat_tests.frame_oracle import (
    describe_record,
    iter_records,
    parse_command,
    repair_fastjson,
    split_frames,
)

GET_ROUTEINFO_BY_TOPIC = 105
SEND_MESSAGE_V2 = 310
POP_MESSAGE = 200050
ACK_MESSAGE = 200051
CHANGE_MESSAGE_INVISIBLETIME = 200053
POLLING_INFO = 200055
BATCH_ACK_MESSAGE = 200151
SET_MESSAGE_REQUEST_MODE = 401
VERSION_V5_3_3 = 479
READ_TIMEOUT_S = 30.0
POLLING_TIMEOUT = 210  # ResponseCode: a pop that found nothing within its poll time


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


class RawSession:
    def __init__(self, addr: str) -> None:
        self.sock = socket.create_connection(_addr(addr), timeout=READ_TIMEOUT_S)
        self.opaque = 0
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> dict[str, Any]:
        """Send one request; its decoded response (``code``, ``remark``, ``ext_fields``, ``body``)."""
        self.opaque += 1
        header = {
            "code": code,
            "extFields": ext or {},
            "flag": 0,
            "language": "JAVA",
            "opaque": self.opaque,
            "serializeTypeCurrentRPC": "JSON",
            "version": VERSION_V5_3_3,
        }
        raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
        self.sock.sendall(struct.pack(">iI", 4 + len(raw) + len(body), len(raw)) + raw + body)
        deadline = time.monotonic() + READ_TIMEOUT_S
        while time.monotonic() < deadline:
            frames, self.buf = split_frames(self.buf)
            if frames:
                if len(frames) > 1:
                    self.buf = b"".join(frames[1:]) + self.buf
                cmd = parse_command(frames[0])
                if cmd["opaque"] == self.opaque:
                    return cmd
                continue
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            self.buf += chunk
        raise TimeoutError(f"no response to request code {code}")


def broker_of(namesrv: str, topic: str) -> str:
    """The master address the NameServer routes ``topic`` to."""
    with RawSession(namesrv) as ns:
        resp = ns.call(GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    assert resp["code"] == 0, resp
    route = json.loads(repair_fastjson(resp["body"].decode()))
    return str(route["brokerDatas"][0]["brokerAddrs"]["0"])


def wait_route(namesrv: str, topic: str, timeout_s: float = 60) -> str:
    """The broker the NameServer routes ``topic`` to, once it does (after a restart, or a topic just
    created: a producer that looks it up earlier sends by the default topic's route, to queues the
    topic does not have)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return broker_of(namesrv, topic)
        except (OSError, AssertionError, KeyError, IndexError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def expect_revived_once(
    session: RawSession,
    topic: str,
    group: str,
    expected: dict[str, Any],
    popped_at: float,
    invisible_s: float,
    timeout_s: float = 120,
) -> None:
    """Pop until the broker's revive service delivers again the one popped and unacknowledged
    message ``expected``: only it, with reconsumeTimes 1, no earlier than its invisible time after
    ``popped_at``; then a 3 s long-polling pop brings nothing more."""
    back: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    while not back and time.monotonic() < deadline:
        resp = pop(session, topic, group, -1, 60_000)
        back = popped(resp) if resp["code"] == 0 else []
        if not back:
            time.sleep(0.5)
    assert [m["properties_map"]["UNIQ_KEY"] for m in back] == [expected["properties_map"]["UNIQ_KEY"]]
    assert back[0]["body_sha256"] == expected["body_sha256"]
    assert back[0]["reconsume_times"] == 1
    assert time.monotonic() - popped_at >= invisible_s - 1
    assert pop(session, topic, group, -1, 60_000, pollTime="3000")["code"] == POLLING_TIMEOUT


def send(
    session: RawSession, topic: str, body: bytes, queue_id: int, properties: dict[str, str] | None = None
) -> dict[str, Any]:
    """SEND_MESSAGE_V2 of one message; ``properties`` in the wire's form (name 0x01 value 0x02)."""
    encoded = "".join(f"{k}\x01{v}\x02" for k, v in (properties or {}).items())
    ext = {
        "a": "rawPopProducer",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "0",
        "g": str(int(time.time() * 1000)),
        "h": "0",
        "i": encoded,
        "j": "0",
        "k": "false",
        "m": "false",
    }
    return session.call(SEND_MESSAGE_V2, ext, body)


def pop(
    session: RawSession, topic: str, group: str, queue_id: int, invisible_ms: int, **more: str
) -> dict[str, Any]:
    ext = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": str(queue_id),
        "maxMsgNums": "32",
        "invisibleTime": str(invisible_ms),
        "pollTime": "0",
        "bornTime": str(int(time.time() * 1000)),
        "initMode": "0",
        "expType": "TAG",
        "exp": "*",
        "order": "false",
        **more,
    }
    return session.call(POP_MESSAGE, ext)


def popped(resp: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of a POP response, each with its receipt handle as the Java client builds it."""
    ext = resp["ext_fields"] or {}
    starts = {}
    for entry in (ext.get("startOffsetInfo") or "").split(";"):
        if entry:
            flag, queue, start = entry.split(" ")
            starts[f"{flag}@{queue}"] = start
    out = []
    for _pos, record in iter_records(resp["body"]):
        view = describe_record(record)
        handle = view["properties_map"].get("POP_CK") or " ".join(
            [
                starts[f"0@{view['queue_id']}"],
                ext["popTime"],
                ext["invisibleTime"],
                ext["reviveQid"],
                "0",
                "broker-a",
                str(view["queue_id"]),
                str(view["queue_offset"]),
            ]
        )
        view["handle"] = handle
        out.append(view)
    return out


def _receipt_fields(topic: str, group: str, queue_id: int, offset: int, handle: str) -> dict[str, str]:
    """The header fields ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME share: which popped message."""
    return {
        "consumerGroup": group,
        "topic": topic,
        "queueId": str(queue_id),
        "extraInfo": handle,
        "offset": str(offset),
    }


def ack(
    session: RawSession, topic: str, group: str, queue_id: int, offset: int, handle: str
) -> dict[str, Any]:
    return session.call(ACK_MESSAGE, _receipt_fields(topic, group, queue_id, offset, handle))


def change_invisible(
    session: RawSession, topic: str, group: str, queue_id: int, offset: int, handle: str, invisible_ms: int
) -> dict[str, Any]:
    ext = _receipt_fields(topic, group, queue_id, offset, handle)
    ext["invisibleTime"] = str(invisible_ms)
    return session.call(CHANGE_MESSAGE_INVISIBLETIME, ext)


def wait_offset_persisted(persisted: Callable[[], str], topic: str, group: str) -> None:
    """Wait until the broker's ``config/consumerOffset.json``, as ``persisted()`` reads it, names
    the pop's offset commit (both brokers persist consumer offsets every
    flushConsumerOffsetInterval, 5 s), so a restart on the store keeps it."""
    deadline = time.monotonic() + 30
    while f"{topic}@{group}" not in persisted():
        assert time.monotonic() < deadline, f"consumerOffset.json never named {topic}@{group}"
        time.sleep(0.3)
