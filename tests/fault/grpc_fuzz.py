"""Hostile HTTP/2 and gRPC conversations for the gRPC port (Hypothesis chooses their recipes).

A conversation is one of:

* a call of a real ``MessagingService`` method (or a made-up path) whose request message has
  every field filled with hostile values by reflection over its descriptor (boundary ints,
  unknown enum numbers, junk and long strings, random bytes, nested messages, repeated fields),
  sometimes with a wrong content type, a lying or compressed gRPC length prefix, a body over the
  4 MiB limit, or a stream never half-closed (the server must not wait on it forever);
* stream abuse: many streams opened and reset, PING and SETTINGS floods, window updates at the
  limit, responses never read;
* the bytes of a well-formed conversation with some of them flipped, or random bytes, or a TLS
  record header followed by garbage (the port sniffs the first byte for TLS);
* one of the hostile requests of :mod:`tests.fault.grpc_hostile` (wrong content-type or method,
  ``te``, compression, too many streams, oversized metadata), sometimes with bytes flipped.

The client side is built with ``h2`` in client mode, so the frames are valid HTTP/2 unless a
recipe breaks them on purpose.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from typing import Any

import h2.config
import h2.connection
import h2.settings
from google.protobuf import descriptor, message, message_factory
from hypothesis import strategies as st

from gateway.transport.address import split_address
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.fault.grpc_hostile import CASES

SERVICE = pb.DESCRIPTOR.services_by_name["MessagingService"]
METHODS = {f"/apache.rocketmq.v2.MessagingService/{m.name}": m.input_type for m in SERVICE.methods}
_EXTREME_INTS = [0, -1, 1, 7, 32, 2**31 - 1, -(2**31), 2**32 - 1, 2**63 - 1, -(2**63)]
_STRINGS = ["", " ", "FuzzLive", "TBW102", "%RETRY%g", "%DLQ%g", "rmq_sys_x", "a" * 300, "中文", "\x00"]
_GRPC_HEADER = struct.Struct(">BI")
MAX_BODY = 4 * 1024 * 1024
CALL, ABUSE, BYTES, HOSTILE = range(4)


def _scalar(rng: random.Random, field: descriptor.FieldDescriptor) -> Any:
    kind = field.type
    if kind == field.TYPE_STRING:
        pick = rng.randrange(3)
        if pick == 0:
            return rng.choice(_STRINGS)
        if pick == 1:
            return "".join(chr(rng.randrange(1, 0xD7FF)) for _ in range(rng.randrange(20)))
        return str(rng.choice(_EXTREME_INTS))
    if kind == field.TYPE_BYTES:
        return rng.randbytes(rng.randrange(64))
    if kind == field.TYPE_BOOL:
        return rng.random() < 0.5
    if kind == field.TYPE_ENUM:
        return rng.choice([v.number for v in field.enum_type.values] + [rng.randrange(-5, 100)])
    if kind in (field.TYPE_DOUBLE, field.TYPE_FLOAT):
        return rng.choice((0.0, -1.0, 1e300, float("nan")))
    bits = 32 if kind in (field.TYPE_INT32, field.TYPE_SINT32, field.TYPE_SFIXED32) else 64
    unsigned = kind in (field.TYPE_UINT32, field.TYPE_UINT64, field.TYPE_FIXED32, field.TYPE_FIXED64)
    low, high = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return max(low, min(high, rng.choice([*_EXTREME_INTS, rng.randint(low, high)])))


def hostile_message(rng: random.Random, desc: descriptor.Descriptor, depth: int = 0) -> message.Message:
    """An instance of ``desc`` with a random subset of its fields set to hostile values."""
    msg = message_factory.GetMessageClass(desc)()
    for field in desc.fields:
        if rng.random() < 0.3:
            continue
        if field.message_type is not None:
            if field.message_type.GetOptions().map_entry:
                target = getattr(msg, field.name)
                for _ in range(rng.randrange(3)):
                    key = _scalar(rng, field.message_type.fields_by_name["key"])
                    value_field = field.message_type.fields_by_name["value"]
                    if value_field.message_type is None:
                        target[key] = _scalar(rng, value_field)
                continue
            if depth >= 3 or field.message_type.full_name.startswith("google.protobuf"):
                continue
            count = rng.randrange(3) if field.is_repeated else 1
            for _ in range(count):
                child = hostile_message(rng, field.message_type, depth + 1)
                if field.is_repeated:
                    getattr(msg, field.name).append(child)
                else:
                    getattr(msg, field.name).CopyFrom(child)
        elif field.is_repeated:
            getattr(msg, field.name).extend(_scalar(rng, field) for _ in range(rng.randrange(4)))
        else:
            setattr(msg, field.name, _scalar(rng, field))
    return msg


def _client() -> h2.connection.H2Connection:
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    return conn


def _headers(rng: random.Random, path: str) -> list[tuple[str, str]]:
    content_type = "application/grpc"
    if rng.random() < 0.15:
        content_type = rng.choice(("text/html", "application/json", ""))
    headers = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "fuzz")]
    headers += [("content-type", content_type), ("te", "trailers")]
    if rng.random() < 0.2:
        headers.append(("grpc-timeout", rng.choice(("1m", "0S", "99999999H", "x", "-1S"))))
    if rng.random() < 0.2:
        headers.append(("x-mq-client-id", rng.choice(_STRINGS[:-1])))  # not NUL: the connection would end
    return headers


def _grpc_body(rng: random.Random, payload: bytes) -> bytes:
    pick = rng.randrange(10)
    if pick == 0:  # a length prefix that promises more than comes
        return _GRPC_HEADER.pack(0, rng.choice((len(payload) + 1, 2**31 - 1, 2**32 - 1))) + payload
    if pick == 1:  # compressed, with no grpc-encoding
        return _GRPC_HEADER.pack(1, len(payload)) + payload
    if pick == 2:  # over the limit
        return _GRPC_HEADER.pack(0, MAX_BODY + 1) + b"\x00" * (MAX_BODY + 1)
    if pick == 3:  # not protobuf
        junk = rng.randbytes(rng.randrange(1, 200))
        return _GRPC_HEADER.pack(0, len(junk)) + junk
    return _GRPC_HEADER.pack(0, len(payload)) + payload


def call_conversation(rng: random.Random) -> bytes:
    """One to four calls of real or made-up methods with hostile requests."""
    conn = _client()
    for index in range(rng.randrange(1, 5)):
        stream_id = 1 + 2 * index
        path = rng.choice([*METHODS, "/apache.rocketmq.v2.MessagingService/Nope", "/x", "/"])
        desc = METHODS.get(path, pb.SendMessageRequest.DESCRIPTOR)
        payload = hostile_message(rng, desc).SerializeToString()
        conn.send_headers(stream_id, _headers(rng, path))
        body = _grpc_body(rng, payload)
        while body:  # as much as the flow-control windows let a client send before any answer
            size = min(len(body), conn.max_outbound_frame_size, conn.local_flow_control_window(stream_id))
            if size <= 0:
                break
            conn.send_data(stream_id, body[:size])
            body = body[size:]
        if rng.random() < 0.8:  # else the stream is left open: the server must not wait forever
            conn.end_stream(stream_id)
    return conn.data_to_send()


def _window_update(stream_id: int, increment: int) -> bytes:
    """A raw WINDOW_UPDATE frame (h2 itself refuses to build one that overflows the window)."""
    return struct.pack(">I", 4)[1:] + bytes((0x8, 0)) + struct.pack(">II", stream_id, increment)


def abuse_conversation(rng: random.Random) -> bytes:
    """Many streams opened and reset, PING and SETTINGS floods, window updates past the limit."""
    conn = _client()
    out = bytearray()
    path = rng.choice(list(METHODS))
    for index in range(rng.randrange(1, 60)):
        stream_id = 1 + 2 * index
        conn.send_headers(stream_id, _headers(rng, path), end_stream=rng.random() < 0.3)
        pick = rng.randrange(4)
        if pick == 0 and conn.streams[stream_id].open:
            conn.reset_stream(stream_id)
        elif pick == 1:
            conn.ping(rng.randbytes(8))
        elif pick == 2:
            window = rng.choice((0, 1, 2**31 - 1))
            conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        else:
            out += conn.data_to_send()
            increment = 2**31 - 1 if rng.random() < 0.05 else rng.randrange(1, 1 << 20)  # the first ends it
            out += _window_update(rng.choice((0, stream_id)), increment)
    return bytes(out + conn.data_to_send())


def byte_conversation(rng: random.Random) -> bytes:
    """A real conversation with bytes flipped, random bytes, or a TLS record header and garbage."""
    pick = rng.randrange(3)
    if pick == 0:
        data = bytearray(call_conversation(rng))
        for _ in range(rng.randrange(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if pick == 1:
        return rng.randbytes(rng.randrange(1, 4096))
    return b"\x16\x03\x01" + rng.randbytes(rng.randrange(0, 600))


def hostile_conversation(rng: random.Random) -> bytes:
    """One hostile request of :data:`tests.fault.grpc_hostile.CASES`, its bytes flipped at times."""
    request = CASES[rng.choice(sorted(CASES))]()
    conn = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=True, header_encoding="utf-8", validate_outbound_headers=False)
    )
    conn.initiate_connection()
    for index in range(request.streams - 1):
        conn.send_headers(1 + 2 * index, request.headers)
    last = 2 * request.streams - 1
    conn.send_headers(last, request.headers, end_stream=not request.body)
    if request.body:
        conn.send_data(last, request.body, end_stream=True)
    if request.reset:
        conn.reset_stream(last)
    data = bytearray(conn.data_to_send())
    if rng.random() < 0.2:
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


_BUILDERS = (call_conversation, abuse_conversation, byte_conversation, hostile_conversation)
#: A conversation: (builder, seed), expanded with a seeded ``random.Random`` as the remoting
#: fuzzer does, so a failing example is reproducible from the two numbers.
conversation_recipe = st.tuples(
    st.sampled_from([CALL, CALL, CALL, ABUSE, BYTES, HOSTILE]), st.integers(0, 2**32 - 1)
)


def build_conversation(recipe: tuple[int, int]) -> bytes:
    builder, seed = recipe
    return _BUILDERS[builder](random.Random(seed))


def throw(address: str, data: bytes, read: bool, drain_s: float = 0.3) -> int:
    """Send ``data`` on a new connection; read answers for ``drain_s`` unless ``read`` is false (a
    client that never reads). Returns the bytes read. Never raises for what the server does."""
    host, port = split_address(address)
    received = 0
    with socket.create_connection((host, port), timeout=5) as sock:
        try:
            sock.sendall(data)
        except OSError:
            return received
        deadline = time.monotonic() + drain_s
        while read and (remaining := deadline - time.monotonic()) > 0:
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(1 << 16)
            except (TimeoutError, OSError):
                break
            if not chunk:
                break
            received += len(chunk)
    return received
