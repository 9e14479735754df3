"""Hostile remoting frames (Hypothesis chooses their recipes), and the function that throws them.

A frame is one of: a well-formed request whose code is a real one of the NameServer or Broker
(send, pull, POP, admin 17/202, offsets, queries, registration, KV config, …) or any int, whose
``extFields`` are the keys of that request's header filled with hostile values (ints at and
beyond Java's int/long ranges, junk text, system topic names, long strings) and whose body is
random or large; the same with the ROCKETMQ binary header; random bytes; or a frame whose length
words lie (negative, beyond the 16 MiB frame limit, a header longer than the frame).

For a broker with authentication on, :func:`forged_frame` makes the requests look signed: no
signature, a made-up one, an unknown access key, or the super user's access key signed with a
wrong secret (``AclClientRPCHook``'s fields, :mod:`broker.auth.signature`); none may be served.
:func:`exchange` sends frames and decodes the answers.
"""

from __future__ import annotations

import json
import random
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from broker.auth.signature import ACCESS_KEY, SIGNATURE, sign_request
from codec.codes import RequestCode, SerializeType
from codec.command import RemotingCommand
from codec.errors import CodecError
from codec.frame import MAX_FRAME_SIZE, FrameDecoder, decode_frame, encode_frame
from codec.headers import admin, client, namesrv, pop, pull, query, send, transaction
from codec.headers.base import CustomHeader
from gateway.transport.address import split_address

#: Real request codes and the header each carries (keys only matter: values are hostile anyway).
HEADERS: dict[int, type[CustomHeader]] = {
    RequestCode.SEND_MESSAGE: send.SendMessageRequestHeader,
    RequestCode.SEND_MESSAGE_V2: send.SendMessageRequestHeaderV2,
    RequestCode.SEND_BATCH_MESSAGE: send.SendMessageRequestHeaderV2,
    RequestCode.PULL_MESSAGE: pull.PullMessageRequestHeader,
    RequestCode.QUERY_MESSAGE: query.QueryMessageRequestHeader,
    RequestCode.VIEW_MESSAGE_BY_ID: query.ViewMessageRequestHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: client.QueryConsumerOffsetRequestHeader,
    RequestCode.UPDATE_CONSUMER_OFFSET: client.UpdateConsumerOffsetRequestHeader,
    RequestCode.UPDATE_AND_CREATE_TOPIC: admin.CreateTopicRequestHeader,
    RequestCode.GET_TOPIC_STATS_INFO: admin.TopicRequestHeader,
    RequestCode.GET_CONSUME_STATS: admin.GetConsumeStatsRequestHeader,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: client.SearchOffsetRequestHeader,
    RequestCode.GET_MAX_OFFSET: client.GetMaxOffsetRequestHeader,
    RequestCode.GET_MIN_OFFSET: client.GetMinOffsetRequestHeader,
    RequestCode.CONSUMER_SEND_MSG_BACK: client.ConsumerSendMsgBackRequestHeader,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: client.GetConsumerListByGroupRequestHeader,
    RequestCode.QUERY_CONSUME_QUEUE: admin.QueryConsumeQueueRequestHeader,
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: admin.ResetOffsetRequestHeader,
    RequestCode.END_TRANSACTION: transaction.EndTransactionRequestHeader,
    RequestCode.REGISTER_BROKER: namesrv.RegisterBrokerRequestHeader,
    RequestCode.UNREGISTER_BROKER: namesrv.UnregisterBrokerRequestHeader,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: namesrv.GetRouteInfoRequestHeader,
    RequestCode.PUT_KV_CONFIG: namesrv.PutKVConfigRequestHeader,
    RequestCode.GET_KV_CONFIG: namesrv.KVConfigKeyRequestHeader,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: namesrv.BrokerNameRequestHeader,
    RequestCode.DELETE_TOPIC_IN_NAMESRV: namesrv.DeleteTopicFromNamesrvRequestHeader,
    RequestCode.POP_MESSAGE: pop.PopMessageRequestHeader,
    RequestCode.ACK_MESSAGE: pop.AckMessageRequestHeader,
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME: pop.ChangeInvisibleTimeRequestHeader,
    RequestCode.NOTIFICATION: pop.NotificationRequestHeader,
    RequestCode.POLLING_INFO: pop.PollingInfoRequestHeader,
}
#: Codes without a header that still do work (lists, heartbeat, lock bodies, broker info).
BODY_CODES = (
    RequestCode.HEART_BEAT,
    RequestCode.LOCK_BATCH_MQ,
    RequestCode.UNLOCK_BATCH_MQ,
    RequestCode.GET_BROKER_CLUSTER_INFO,
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    RequestCode.GET_ALL_TOPIC_CONFIG,
    RequestCode.GET_BROKER_RUNTIME_INFO,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    RequestCode.BATCH_ACK_MESSAGE,
    RequestCode.QUERY_ASSIGNMENT,
    RequestCode.SET_MESSAGE_REQUEST_MODE,
    RequestCode.GET_ALL_MESSAGE_REQUEST_MODE,
)
_FRAME = struct.Struct(">iI")

_EXTREME_INTS = [0, -1, 1, 2, 7, 8, 16, 1024, 1025, 2**31 - 1, -(2**31), 2**31, -(2**31) - 1]
_EXTREME_INTS += [2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 10**30, 100_000_000]
_TOPICS = ["FuzzA", "FuzzB", "TBW102", "SCHEDULE_TOPIC_XXXX", "%RETRY%fuzz", "%DLQ%fuzz", "rmq_sys_x"]
_JUNK = ["", " ", "x", "1.5", "1e9", "0x10", "١٢", "-", "+", "true", "null", "a" * 300, "bad topic!", "中文"]
_BODIES = [
    b"{}",
    b"[]",
    b'{"mqSet":[{"topic":"FuzzA","brokerName":"broker-a","queueId":99}]}',
    b'{"acks":[{"b":"//8=","c":"fuzz","it":-1,"pt":9223372036854775807,"q":99,"r":"7","rq":999,"so":-5,"t":"FuzzA"}]}',
    b'{"acks":[{"b":[1,2,-1],"c":"fuzz","q":0,"r":"1","rq":2,"so":0,"t":"FuzzA"}],"brokerName":"broker-a"}',
    b'{"consumerGroup":"fuzz","mode":"POP","popShareQueueNum":-2147483648,"topic":"FuzzA"}',
    b'{"clientId":"","consumerGroup":"fuzz","messageModel":"X","strategyName":"AVG","topic":"FuzzA"}',
]
_EXTRA_KEYS = ["topic", "queueId", "group", "bname", "x", "code", "consumerGroup"]
#: One request in LARGE_BODY_ODDS carries a body at or beyond the 4 MiB message limit.
LARGE_BODY_ODDS = 500
_LARGE_BODY_SIZES = (1024 * 1024, 4 * 1024 * 1024, 4 * 1024 * 1024 + 1, 8 * 1024 * 1024)


def _value(rng: random.Random) -> str:
    pick = rng.randrange(6)
    if pick <= 1:
        return str(rng.choice(_EXTREME_INTS))
    if pick == 2:
        return str(rng.randint(-(2**70), 2**70))
    if pick == 3:
        return rng.choice(_TOPICS)
    if pick == 4:
        return rng.choice(_JUNK)
    return "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(12)))


def _ext_fields(rng: random.Random, code: int) -> dict[str, str]:
    header = HEADERS.get(code)
    keys = [f.key for f in header._table()] if header is not None else []
    keys += rng.sample(_EXTRA_KEYS, rng.randrange(3))
    # a required field missing now and then
    return {key: _value(rng) for key in keys if rng.randrange(10)}


def _body(rng: random.Random) -> bytes:
    if not rng.randrange(LARGE_BODY_ODDS):
        return b"\x01" * rng.choice(_LARGE_BODY_SIZES)
    pick = rng.randrange(4)
    if pick == 0:
        return b""
    if pick == 1:
        return rng.randbytes(rng.randrange(256))
    return rng.choice(_BODIES)


def request_frame(rng: random.Random, code: int) -> bytes:
    """A well-framed request: real or random code, hostile header values and body."""
    cmd = RemotingCommand(
        code,
        opaque=rng.randint(-(2**31), 2**31 - 1),
        flag=rng.choice((0, 0, 0, 2, 1, 3)),  # request, oneway, even "response" bits
        version=rng.choice((0, 317, 453, 9999, -1)),
        language=rng.randrange(128),
        ext_fields=_ext_fields(rng, code),
        body=_body(rng),
        serialize_type=rng.choice((SerializeType.JSON, SerializeType.ROCKETMQ)),
    )
    if not -(2**15) <= code < 2**15:  # the POP codes travel only in JSON headers, as from Java
        cmd.serialize_type = SerializeType.JSON
    return encode_frame(cmd)


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(7 if depth < 2 else 4)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice((True, False, 0, -1, 2**64, 1.5))
    if pick == 2:
        return rng.choice(_JUNK + _TOPICS)
    if pick == 3:
        return rng.randint(-(2**70), 2**70)
    if pick in (4, 5):
        return {rng.choice(_EXTRA_KEYS): _json_value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [_json_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def json_header_frame(rng: random.Random, code: int) -> bytes:
    """A frame whose JSON header is well-formed JSON of the wrong shape or types."""
    header = _json_value(rng)
    if rng.randrange(2):
        header = {"code": code, "extFields": header, "flag": 0, "opaque": 1}
    raw = json.dumps(header).encode()
    return _FRAME.pack(4 + len(raw), len(raw)) + raw


def lying_frame(rng: random.Random, _code: int) -> bytes:
    """Length words that lie, or bytes that are no frame at all."""
    kind = rng.randrange(4)
    if kind == 0:
        return rng.randbytes(rng.randrange(1, 64))
    if kind == 1:
        length = rng.choice((-1, 0, 3, MAX_FRAME_SIZE, MAX_FRAME_SIZE + 1, 2**31 - 1, -(2**31)))
        return _FRAME.pack(length, 0)
    if kind == 2:
        return _FRAME.pack(8, rng.randrange(2**32)) + b"\x00" * 4
    return _FRAME.pack(12, 4) + b"{\x00\xff}" + b"\x00" * 4  # header bytes that are not JSON


_BUILDERS = (request_frame, json_header_frame, lying_frame)
_REAL_CODES = [*HEADERS, *BODY_CODES]
REQUEST, JSON_SHAPE, LIE = range(3)

#: One frame: (builder, code, seed). Hypothesis chooses the shape (which builder, which code) and
#: a seed; the builder expands it with a seeded ``random.Random``, which is ~50 times faster than
#: drawing every field value through Hypothesis, so a bounded run reaches 50,000 frames in
#: minutes. A failing example is still reproducible from its printed (builder, code, seed) list.
_codes = st.sampled_from(_REAL_CODES) | st.integers(-(2**15), 2**15 - 1)
_seeds = st.integers(0, 2**32 - 1)
request_recipe = st.tuples(st.just(REQUEST), _codes, _seeds)
#: A connection: requests the server must answer one by one, then maybe one frame that makes it
#: close the connection (a frame that lies) or answer an error (a header of the wrong shape).
connection_recipe = st.tuples(
    st.lists(request_recipe, min_size=20, max_size=80),
    st.none() | st.tuples(st.sampled_from([JSON_SHAPE, LIE]), _codes, _seeds),
)


def build_frame(recipe: tuple[int, int, int]) -> bytes:
    builder, code, seed = recipe
    return _BUILDERS[builder](random.Random(seed), code)


def answered(address: str, frames: list[bytes], drain_s: float, *, quiet: bool) -> Iterator[bytes]:
    """Send ``frames`` on one new connection, half-close, and yield what the server answers until
    it closes, or ``drain_s`` passes (in all, or with ``quiet`` since the last byte). Never raises
    for what the server does to the connection (it may close it on the first bad frame)."""
    host, port = split_address(address)
    with socket.create_connection((host, port), timeout=5) as sock:
        try:
            sock.sendall(b"".join(frames))
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return
        deadline = time.monotonic() + drain_s
        while (remaining := deadline - time.monotonic()) > 0:
            sock.settimeout(remaining)
            try:
                data = sock.recv(1 << 16)
            except (TimeoutError, OSError):
                return
            if not data:
                return
            if quiet:
                deadline = time.monotonic() + drain_s
            yield data


def throw(address: str, frames: list[bytes], drain_s: float = 1.0) -> int:
    """The bytes the server answered ``frames`` with, read for at most ``drain_s``."""
    return sum(len(data) for data in answered(address, frames, drain_s, quiet=False))


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
    """The commands the server answered ``frames`` with, until it closes or ``drain_s`` passes
    without a byte (a frame that does not decode ends the reading)."""
    decoder = FrameDecoder()
    answers: list[RemotingCommand] = []
    for data in answered(address, frames, drain_s, quiet=True):
        try:
            answers.extend(decoder.feed(data))
        except CodecError:
            break
    return answers
