"""The recording proxy (against fake upstream servers on loopback) and the construct frame oracle
(on hand-built frames and records, and on the recorded golden vectors). No Java needed."""

from __future__ import annotations

import json
import random
import socket
import struct
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest
import trio

from compat_tests.frame_oracle import (
    BLANK_MAGIC,
    MAGIC_V1,
    MAGIC_V2,
    OracleError,
    decode_properties,
    describe_batch,
    describe_frame,
    iter_records,
    parse_command,
    repair_fastjson,
    split_frames,
)
from compat_tests.proxy import RecordingProxy, loopback_ipv6_available, running_proxies
from tests.helpers import wait_until

GOLDEN = Path(__file__).resolve().parent / "golden"


# ---------------------------------------------------------------- hand-built bytes (no oracle code)


def json_frame(header: dict[str, Any], body: bytes = b"") -> bytes:
    raw = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack(">iI", 4 + len(raw) + len(body), len(raw)) + raw + body


def binary_frame(
    code: int,
    *,
    opaque: int = 7,
    flag: int = 0,
    remark: str = "",
    ext: dict[str, str] | None = None,
    body: bytes = b"",
    language: int = 0,
    version: int = 409,
) -> bytes:
    area = b"".join(
        struct.pack(">h", len(k.encode())) + k.encode() + struct.pack(">i", len(v.encode())) + v.encode()
        for k, v in (ext or {}).items()
    )
    rem = remark.encode()
    header = (
        struct.pack(">hbhiii", code, language, version, opaque, flag, len(rem))
        + rem
        + struct.pack(">i", len(area))
        + area
    )
    return struct.pack(">iI", 4 + len(header) + len(body), (1 << 24) | len(header)) + header + body


def stored_record(
    *,
    body: bytes = b"hello",
    topic: str = "T",
    props: str = "TAGS\x01a\x02",
    sysflag: int = 0,
    born: tuple[bytes, int] = (bytes([127, 0, 0, 1]), 5555),
    store: tuple[bytes, int] = (bytes([127, 0, 0, 2]), 10911),
    physical_offset: int = 0,
    magic: int = MAGIC_V1,
) -> bytes:
    topic_raw, props_raw = topic.encode(), props.encode()
    topic_len = struct.pack(">h" if magic == MAGIC_V2 else ">b", len(topic_raw))
    rest = (
        struct.pack(
            ">IiiiqqiQ", magic, zlib.crc32(body) & 0x7FFFFFFF, 3, 9, 41, physical_offset, sysflag, 1700
        )
        + born[0]
        + struct.pack(">i", born[1])
        + struct.pack(">q", 1701)
        + store[0]
        + struct.pack(">iiqi", store[1], 2, 0, len(body))
        + body
        + topic_len
        + topic_raw
        + struct.pack(">h", len(props_raw))
        + props_raw
    )
    return struct.pack(">i", 4 + len(rest)) + rest


# ---------------------------------------------------------------- frame oracle


def test_json_frame_decodes_with_key_order_and_absent_fields() -> None:
    header = {"code": 105, "extFields": {"topic": "T"}, "flag": 0, "language": "JAVA", "opaque": 3}
    header |= {"serializeTypeCurrentRPC": "JSON", "version": 479}
    meta = describe_frame(json_frame(header))
    assert meta["code_name"] == "GET_ROUTEINFO_BY_TOPIC"
    assert (meta["remark"], meta["ext_fields"], meta["language"]) == (None, {"topic": "T"}, "JAVA")
    assert meta["header_keys"] == list(header)
    assert not meta["is_response"]
    assert meta["body_len"] == 0


def test_binary_frame_decodes_and_names_response_codes() -> None:
    data = binary_frame(19, flag=1, remark="no msg", ext={"nextBeginOffset": "5", "k": "v"}, body=b"x")
    meta = describe_frame(data, request_code=11)
    assert (meta["code"], meta["code_name"], meta["request_code_name"]) == (
        19,
        "PULL_NOT_FOUND",
        "PULL_MESSAGE",
    )
    assert meta["ext_fields"] == {"nextBeginOffset": "5", "k": "v"}
    assert (meta["remark"], meta["version"], meta["language"], meta["is_response"]) == (
        "no msg",
        409,
        "JAVA",
        True,
    )
    assert meta["body_text"] == "x"


def test_binary_empty_remark_and_map_read_as_null_like_java() -> None:
    meta = describe_frame(binary_frame(34, flag=2, language=9))
    assert (meta["remark"], meta["ext_fields"], meta["language"], meta["is_oneway"]) == (
        None,
        None,
        "GO",
        True,
    )


@pytest.mark.parametrize(
    "data",
    [
        json_frame({"code": 1}) + b"\x00",  # trailing byte
        struct.pack(">iI", 4, 10),  # header longer than the frame
        struct.pack(">iI", 6, 2 << 24 | 2) + b"{}",  # serialize type 2
        binary_frame(10)[:-1] + b"\x01",  # map area overruns (last byte changed into an ext length)
        json_frame({"code": "x"}),
        json_frame({"code": 1, "extFields": {"a": 1}}),
    ],
)
def test_oracle_rejects_malformed_frames(data: bytes) -> None:
    with pytest.raises(OracleError):
        parse_command(data)


def test_bad_binary_map_area_is_rejected() -> None:
    frame = bytearray(binary_frame(10, ext={"a": "b"}))
    struct.pack_into(">i", frame, 8 + 17, 3)  # extLen cuts the entry short
    with pytest.raises(OracleError):
        parse_command(bytes(frame))


def test_split_frames_keeps_the_incomplete_tail() -> None:
    a, b = json_frame({"code": 1}), binary_frame(2)
    frames, rest = split_frames(a + b + b[:5])
    assert (frames, rest) == ([a, b], b[:5])
    with pytest.raises(OracleError):
        split_frames(struct.pack(">i", -1))


def test_ipv4_record_fields_and_checks() -> None:
    raw = stored_record(physical_offset=4096)
    ((pos, rec),) = list(iter_records(raw))
    assert (pos, rec.queue_id, rec.flag, rec.queue_offset, rec.physical_offset) == (0, 3, 9, 41, 4096)
    assert rec.total_size == len(raw) == 91 + 5 + 1 + len("TAGS\x01a\x02")
    meta = describe_frame(binary_frame(0, flag=1, body=raw + raw), request_code=11)
    first = meta["body_records"][0]
    assert first["born_host"] == {"ip": "127.0.0.1", "port": 5555}
    assert first["store_host"] == {"ip": "127.0.0.2", "port": 10911}
    assert first["offset_msg_id"] == "7F00000200002A9F0000000000001000"
    assert (first["body_crc_ok"], first["body_text"], first["properties_map"]) == (
        True,
        "hello",
        {"TAGS": "a"},
    )
    assert len(meta["body_records"]) == 2


def test_ipv6_hosts_and_v2_magic() -> None:
    v6 = bytes(15) + b"\x01"
    raw = stored_record(sysflag=0x30, born=(v6, 1234), store=(v6, 10911), topic="t" * 200, magic=MAGIC_V2)
    ((_, rec),) = list(iter_records(raw))
    assert rec.total_size == len(raw)
    meta = describe_frame(binary_frame(0, flag=1, body=raw), request_code=361)["body_records"][0]
    assert (meta["magic"], meta["born_host"]["ip"], meta["store_host"]["ip"]) == ("v2", "::1", "::1")
    assert len(meta["offset_msg_id"]) == 56


def test_record_size_mismatch_and_stray_bytes_are_errors() -> None:
    raw = bytearray(stored_record())
    struct.pack_into(">i", raw, 0, len(raw) - 1)
    with pytest.raises(OracleError):
        list(iter_records(bytes(raw)))
    with pytest.raises(OracleError):
        list(iter_records(stored_record() + b"\x00\x00"))


def test_commit_log_scan_stops_at_blank_marker_and_zeros() -> None:
    one, two = stored_record(), stored_record(body=b"second", physical_offset=96)
    blank = struct.pack(">iI", 100, BLANK_MAGIC)
    assert [p for p, _ in iter_records(one + two + blank + bytes(92), commit_log=True)] == [0, len(one)]
    assert len(list(iter_records(one + bytes(64), commit_log=True))) == 1


def test_compressed_and_transaction_records() -> None:
    text = "压缩 " * 2000
    raw = stored_record(body=zlib.compress(text.encode()), sysflag=0x300 | 0x1 | 0x4)
    meta = describe_frame(binary_frame(39, body=raw))["body_records"][0]
    assert (meta["compression"], meta["transaction_type"]) == ("ZLIB", "PREPARED_TYPE")
    assert meta["body_inflated_len"] == len(text.encode())
    assert meta["body_text"] is None


def test_batch_body_entries() -> None:
    def entry(body: bytes, props: str) -> bytes:
        p = props.encode()
        rest = struct.pack(">iiii", 0, 0, 0, len(body)) + body + struct.pack(">h", len(p)) + p
        return struct.pack(">i", 4 + len(rest)) + rest

    body = entry(b"b0", "TAGS\x01x\x02") + entry(b"", "")
    meta = describe_frame(binary_frame(320, body=body))
    assert [e["body_text"] for e in meta["body_batch"]] == ["b0", ""]
    with pytest.raises(OracleError):
        describe_batch(body[:-1])


def test_properties_and_fastjson_repair() -> None:
    assert decode_properties("A\x01b\x02\x02C\x01\x02D\x01e\x01f\x02") == {"A": "b", "D": "e\x01f"}
    fixed = repair_fastjson('{"brokerAddrs":{0:"127.0.0.1:1", -1 :"x"},"s":"{1:2}","a":[1,2]}')
    assert json.loads(fixed) == {"brokerAddrs": {"0": "127.0.0.1:1", "-1": "x"}, "s": "{1:2}", "a": [1, 2]}
    meta = describe_frame(json_frame({"code": 0, "flag": 1}, b'{"table":{0:{"a":1}}}'))
    assert (meta["body_json"], meta["body_json_repaired"]) == ({"table": {"0": {"a": 1}}}, True)


def test_golden_sidecars_match_the_oracle() -> None:
    bins = sorted((GOLDEN / "frames").glob("*/*.bin"))
    for path in bins:
        meta = json.loads(path.with_suffix(".json").read_text())
        again = describe_frame(path.read_bytes(), meta.get("request_code"))
        assert {k: again[k] for k in meta if k in again} == {k: meta[k] for k in meta if k in again}, path


# ---------------------------------------------------------------- proxy


async def start_frame_server(
    nursery: trio.Nursery, host: str = "127.0.0.1", reply: bool = True
) -> tuple[int, list[bytes]]:
    """A fake upstream: collects request frames and answers each with a response frame."""
    seen: list[bytes] = []

    async def handle(stream: trio.SocketStream) -> None:
        buf = b""
        async with stream:
            while data := await stream.receive_some(4096):
                buf += data
                try:
                    frames, buf = split_frames(buf)
                except OracleError:
                    return  # not RocketMQ framing: drop the connection
                for frame in frames:
                    seen.append(frame)
                    if reply:
                        opaque = parse_command(frame)["opaque"]
                        await stream.send_all(binary_frame(0, opaque=opaque, flag=1, body=frame[-3:]))

    listeners = await trio.open_tcp_listeners(0, host=host)
    await nursery.start(trio.serve_listeners, handle, listeners)
    return int(listeners[0].socket.getsockname()[1]), seen


async def test_proxy_forwards_bytes_unchanged_and_records_frames_both_ways() -> None:
    rng = random.Random(5)
    async with trio.open_nursery() as nursery:
        port, seen = await start_frame_server(nursery)
        proxy = RecordingProxy("broker", ("127.0.0.1", 0), ("127.0.0.1", port))
        await nursery.start(proxy.run)
        requests = [
            binary_frame(310, opaque=i, body=bytes(rng.randrange(256) for _ in range(i * 7)))
            for i in range(20)
        ]
        requests.append(json_frame({"code": 34, "opaque": 99}, b'{"clientID":"c"}'))
        stream = await trio.open_tcp_stream("127.0.0.1", proxy.port)
        wire = b"".join(requests)
        pos = 0
        while pos < len(wire):  # arbitrary chunking, one byte at a time at times
            step = rng.choice([1, 2, 3, 50, 400])
            await stream.send_all(wire[pos : pos + step])
            pos += step
        got = b""
        with trio.fail_after(5):
            while len(split_frames(got)[0]) < len(requests):
                got += await stream.receive_some(4096)
        await stream.aclose()
        await wait_until(lambda: proxy.connections[0].closed, 5)
        nursery.cancel_scope.cancel()
    assert seen == requests
    c2s = [f.data for f in proxy.frames if f.direction == "c2s"]
    s2c = [f.data for f in proxy.frames if f.direction == "s2c"]
    assert c2s == requests
    assert b"".join(s2c) == got
    assert {(f.label, f.conn_id) for f in proxy.frames} == {("broker", 1)}
    seqs = [f.seq for f in proxy.frames]
    assert seqs == sorted(seqs)
    conn = proxy.connections[0]
    assert (conn.bytes_c2s, conn.bytes_s2c, conn.unframed) == (len(wire), len(got), False)
    assert conn.upstream_local is not None
    assert conn.upstream_local[0] == "127.0.0.1"


async def test_proxy_numbers_connections_and_keeps_forwarding_unframeable_bytes() -> None:
    async with trio.open_nursery() as nursery:
        port, seen = await start_frame_server(nursery, reply=False)
        proxy = RecordingProxy("namesrv", ("127.0.0.1", 0), ("127.0.0.1", port))
        await nursery.start(proxy.run)
        good = await trio.open_tcp_stream("127.0.0.1", proxy.port)
        bad = await trio.open_tcp_stream("127.0.0.1", proxy.port)
        await good.send_all(json_frame({"code": 105, "opaque": 1}))
        await bad.send_all(struct.pack(">i", -5) + b"junk")
        await wait_until(lambda: len(proxy.connections) == 2 and seen, 5)
        await good.aclose()
        await bad.aclose()
        await wait_until(lambda: all(c.closed for c in proxy.connections), 5)
        nursery.cancel_scope.cancel()
    assert sorted(c.conn_id for c in proxy.connections) == [1, 2]
    assert [c.unframed for c in sorted(proxy.connections, key=lambda c: c.bytes_c2s)] == [True, False]
    assert len(proxy.frames) == 1


async def test_proxy_closes_the_client_when_upstream_is_down() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    async with trio.open_nursery() as nursery:
        proxy = RecordingProxy("broker", ("127.0.0.1", 0), ("127.0.0.1", dead_port))
        await nursery.start(proxy.run)
        stream = await trio.open_tcp_stream("127.0.0.1", proxy.port)
        with trio.fail_after(5):
            assert await stream.receive_some(10) == b""
        await stream.aclose()
        nursery.cancel_scope.cancel()
    assert proxy.connections[0].upstream_local is None


@pytest.mark.skipif(not loopback_ipv6_available(), reason="no IPv6 loopback here")
async def test_proxy_reaches_an_ipv6_upstream() -> None:
    async with trio.open_nursery() as nursery:
        port, _ = await start_frame_server(nursery, host="::1")
        proxy = RecordingProxy("broker", ("127.0.0.2", 0), ("::1", port))
        await nursery.start(proxy.run)
        stream = await trio.open_tcp_stream("127.0.0.2", proxy.port)
        await stream.send_all(binary_frame(11, opaque=4))
        with trio.fail_after(5):
            reply = await stream.receive_some(4096)
        await stream.aclose()
        nursery.cancel_scope.cancel()
    assert parse_command(reply)["opaque"] == 4
    assert proxy.connections[0].upstream_local is not None
    assert proxy.connections[0].upstream_local[0] == "::1"


def test_running_proxies_from_synchronous_code() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def echo_once() -> None:
        conn, _ = server.accept()
        with conn:
            conn.settimeout(5)
            conn.sendall(conn.recv(4096))

    thread = threading.Thread(target=echo_once, daemon=True)
    thread.start()
    proxy = RecordingProxy("namesrv", ("127.0.0.1", 0), ("127.0.0.1", port))
    frame = json_frame({"code": 105, "opaque": 1})
    with (
        running_proxies([proxy]) as (running,),
        socket.create_connection(("127.0.0.1", running.port), 5) as c,
    ):
        c.settimeout(5)
        c.sendall(frame)
        assert c.recv(4096) == frame
    thread.join(5)
    server.close()
    assert [(f.direction, f.data) for f in proxy.frames] == [("c2s", frame), ("s2c", frame)]
    assert proxy.address == f"127.0.0.1:{proxy.port}"
