"""A small blocking client over the remoting protocol, for the fault suite's checks: it must keep
working while the server is fuzzed or killed, and needs no event loop (the server may be in a
subprocess that dies under it)."""

from __future__ import annotations

import itertools
import socket
import time

from codec.codes import ResponseCode
from codec.command import RemotingCommand
from codec.frame import FrameDecoder, encode_frame
from codec.message import iter_records
from gateway.transport.address import split_address
from tests.fault.helpers import pull_command, send_command

_opaques = itertools.count(1)


class BlockingClient:
    """One connection; :meth:`invoke` sends a request and waits for its response."""

    def __init__(self, address: str, timeout_s: float = 10.0) -> None:
        host, port = split_address(address)
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.decoder = FrameDecoder()
        self.pending: dict[int, RemotingCommand] = {}

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def invoke(self, cmd: RemotingCommand, timeout_s: float = 10.0) -> RemotingCommand:
        cmd.opaque = next(_opaques)
        self.sock.sendall(encode_frame(cmd))
        deadline = time.monotonic() + timeout_s
        while cmd.opaque not in self.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no answer to code {cmd.code} within {timeout_s} s")
            self.sock.settimeout(remaining)
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("connection closed by the server")
            for answer in self.decoder.feed(data):
                self.pending[answer.opaque] = answer
        return self.pending.pop(cmd.opaque)


def send_one(client: BlockingClient, topic: str, body: bytes, timeout_s: float = 10.0) -> tuple[int, int]:
    """Send one message; its (queue id, queue offset). Raises ``AssertionError`` unless SUCCESS."""
    resp = client.invoke(send_command(topic, body, e="0", d="1"), timeout_s)
    assert resp.code == ResponseCode.SUCCESS, f"send: {resp.code} {resp.remark}"
    ext = resp.ext_fields or {}
    return int(ext["queueId"]), int(ext["queueOffset"])


def pull_bodies(client: BlockingClient, topic: str, queue_id: int, start: int = 0) -> list[bytes]:
    """Every message body of ``topic``/``queue_id`` from ``start`` on, in order."""
    bodies: list[bytes] = []
    offset = start
    while True:
        resp = client.invoke(pull_command(topic, queue_id, offset, 32), 10)
        if resp.code != ResponseCode.SUCCESS:
            return bodies
        records = list(iter_records(resp.body))
        if not records:
            return bodies
        bodies += [r.body for r in records]
        offset = int((resp.ext_fields or {})["nextBeginOffset"])
