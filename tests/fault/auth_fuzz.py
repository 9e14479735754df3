"""Requests of the wire fuzzer (:mod:`tests.fault.wire_fuzz`) made to look signed, for a broker with
authentication on: no signature, a made-up one, an unknown access key, or the super user's access
key signed with a wrong secret (``AclClientRPCHook``'s fields, :mod:`broker.auth.signature`).
None of them may be served: the answer, if any, is the refusal."""

from __future__ import annotations

import random
import socket
import time

from hypothesis import strategies as st

from broker.auth.signature import ACCESS_KEY, SIGNATURE, sign_request
from codec.command import RemotingCommand
from codec.errors import CodecError
from codec.frame import FrameDecoder, decode_frame, encode_frame
from gateway.transport.address import split_address
from tests.fault.wire_fuzz import request_frame, request_recipe

ROOT = "rocketmq"  # the super user of the fuzzed broker (initAuthenticationUser)
UNSIGNED, MADE_UP, UNKNOWN_KEY, WRONG_SECRET = range(4)


def forged_frame(recipe: tuple[int, int, int], forgery: int) -> bytes:
    """The fuzzer's request of ``recipe`` carrying the credentials of ``forgery``."""
    _builder, code, seed = recipe
    rng = random.Random(seed)
    cmd = decode_frame(memoryview(request_frame(rng, code))[4:])
    fields = dict(cmd.ext_fields or {})
    fields.pop(ACCESS_KEY, None)
    fields.pop(SIGNATURE, None)
    if forgery == MADE_UP:
        fields[ACCESS_KEY] = ROOT
        fields[SIGNATURE] = rng.choice(("", "x", "AAAA", rng.randbytes(20).hex()))
    elif forgery == UNKNOWN_KEY:
        sign_request(fields, cmd.body, f"ghost{rng.randrange(100)}", "12345678")
    elif forgery == WRONG_SECRET:
        sign_request(fields, cmd.body, ROOT, rng.choice(("", "1234567", "123456789", "x" * 64)))
    cmd.ext_fields = fields
    return encode_frame(cmd)


#: One connection: 20 to 80 forged requests, each (recipe, forgery).
forged_connection = st.lists(st.tuples(request_recipe, st.integers(0, 3)), min_size=20, max_size=80)


def exchange(address: str, frames: list[bytes], drain_s: float = 1.0) -> list[RemotingCommand]:
    """Send ``frames`` on one connection, half-close, and decode what comes back until the server
    closes or ``drain_s`` passes without a byte."""
    host, port = split_address(address)
    decoder = FrameDecoder()
    answers: list[RemotingCommand] = []
    with socket.create_connection((host, port), timeout=5) as sock:
        try:
            sock.sendall(b"".join(frames))
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return answers
        deadline = time.monotonic() + drain_s
        while (remaining := deadline - time.monotonic()) > 0:
            sock.settimeout(remaining)
            try:
                data = sock.recv(1 << 16)
            except (TimeoutError, OSError):
                break
            if not data:
                break
            deadline = time.monotonic() + drain_s
            try:
                answers.extend(decoder.feed(data))
            except CodecError:
                break
    return answers
