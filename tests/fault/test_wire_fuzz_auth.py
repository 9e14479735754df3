"""The wire fuzzer against a broker with authentication and authorization on
(``authenticationEnabled`` / ``authorizationEnabled``, the local metadata providers, the super user
``rocketmq`` from ``initAuthenticationUser``): forged requests
(:func:`tests.fault.wire_fuzz.forged_frame`) get only the refusal, change nothing (no topic
created, no message stored), and the gateway keeps serving signed clients within a memory
ceiling, with no traceback in its log.

Bounded: ``FAULT_AUTH_FUZZ_EXAMPLES`` connections of 20 to 80 frames, then a flood of
``FLOOD`` sends signed with a wrong secret on one connection, whose server CPU per request is
measured (``/proc/<pid>/stat``) and printed."""

from __future__ import annotations

import json
import os
import struct
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from broker.auth.config import acl_conf
from broker.auth.signature import sign_request
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.frame import encode_frame
from codec.message import MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2
from tests.fault.helpers import send_command
from tests.fault.process import GatewayProcess
from tests.fault.test_wire_fuzz import STORE_CONF
from tests.fault.wire import BlockingClient
from tests.fault.wire_fuzz import ROOT, exchange, forged_connection, forged_frame

ROOT_SECRET = "12345678"
AUTH_CONF = {
    **STORE_CONF,
    **acl_conf(ROOT, ROOT_SECRET),
}
FUZZ_EXAMPLES = int(os.environ.get("FAULT_AUTH_FUZZ_EXAMPLES", "1000"))  # connections
LIVENESS_EVERY = 50
#: What a forged request may get, whatever its code: the refusal. As on the Java broker, whose
#: default processor puts every code through the request pipeline, a code no processor serves is
#: refused for its credentials before it could be answered REQUEST_CODE_NOT_SUPPORTED.
REFUSALS = {ResponseCode.NO_PERMISSION}
RSS_CEILING_BYTES = 512 * 1024 * 1024
FLOOD = 5000  # sends signed with a wrong secret
FLOOD_CPU_CEILING_US = 5000.0  # per refused request; measured 30-40 µs on a busy 2-core machine
FLOOD_RSS_GROWTH_BYTES = 64 * 1024 * 1024
LIVE_TOPIC = "AuthFuzzLive"
_WORD = struct.Struct(">iI")  # a record's TOTALSIZE and MAGICCODE


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    process = GatewayProcess(tmp_path_factory.mktemp("auth-fuzz"), AUTH_CONF)
    process.start()
    try:
        yield process
    finally:
        process.stop()


def signed(cmd: RemotingCommand) -> RemotingCommand:
    """``cmd`` signed as the super user, as ``AclClientRPCHook`` signs it."""
    fields = dict(cmd.ext_fields or {})
    sign_request(fields, cmd.body, ROOT, ROOT_SECRET)
    cmd.ext_fields = fields
    return cmd


def topics(gw: GatewayProcess) -> set[str]:
    with BlockingClient(gw.broker_addr) as client:
        resp = client.invoke(signed(RemotingCommand(code=RequestCode.GET_ALL_TOPIC_CONFIG)), 10)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return set(json.loads(resp.body or b"{}")["topicConfigTable"])


def stored_topics(store: Path) -> Counter[str]:
    """Messages in the commit log files, by topic (the record layout of ``codec.message``)."""
    found: Counter[str] = Counter()
    for path in sorted((store / "commitlog").glob("*")):
        data = path.read_bytes()
        pos = 0
        while pos + _WORD.size <= len(data):
            size, magic = _WORD.unpack_from(data, pos)
            if size <= 0 or magic not in (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2):
                break
            found[_record_topic(data, pos, magic)] += 1
            pos += size
    return found


def _record_topic(data: bytes, pos: int, magic: int) -> str:
    """The topic of the record at ``pos`` (after the body; its length is 1 byte in v1, 2 in v2)."""
    flag_pos = pos + 4 + 4 + 4 + 4 + 4 + 8 + 8
    sys_flag = struct.unpack_from(">i", data, flag_pos)[0]
    address = 8 if sys_flag & (1 << 4) == 0 else 20  # born host: IPv4 or IPv6 with port
    store_address = 8 if sys_flag & (1 << 5) == 0 else 20
    body_pos = flag_pos + 4 + 8 + address + 8 + store_address + 4 + 8
    body_len = struct.unpack_from(">i", data, body_pos)[0]
    topic_pos = body_pos + 4 + body_len
    if magic == MESSAGE_MAGIC_CODE_V1:
        length, start = data[topic_pos], topic_pos + 1
    else:
        length, start = struct.unpack_from(">H", data, topic_pos)[0], topic_pos + 2
    return data[start : start + length].decode("utf-8", "replace")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


class Tally:
    connections = 0
    frames = 0
    live = 0
    codes: ClassVar[Counter[int]] = Counter()


def _check_alive(gw: GatewayProcess) -> None:
    assert gw.alive(), gw.log_tail()
    with BlockingClient(gw.broker_addr) as client:
        resp = client.invoke(
            signed(send_command(LIVE_TOPIC, f"live-{Tally.live}".encode(), e="0", d="1")), 10
        )
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    Tally.live += 1
    assert gw.rss_bytes() < RSS_CEILING_BYTES


@pytest.mark.slow
def test_forged_requests_get_only_the_refusal_and_change_nothing(gateway: GatewayProcess) -> None:
    before = topics(gateway)
    started = time.monotonic()

    @settings(
        max_examples=FUZZ_EXAMPLES,
        phases=[Phase.generate],
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
    @given(connection=forged_connection)
    def fuzz(connection: list[tuple[tuple[int, int, int], int]]) -> None:
        frames = [forged_frame(recipe, forgery) for recipe, forgery in connection]
        answers = exchange(gateway.broker_addr, frames)
        served = [(a.code, a.remark) for a in answers if a.code not in REFUSALS]
        assert not served, served
        Tally.codes.update(a.code for a in answers)
        Tally.frames += len(frames)
        Tally.connections += 1
        if Tally.connections % LIVENESS_EVERY == 0:
            _check_alive(gateway)

    fuzz()
    _check_alive(gateway)
    print(
        f"\nauth wire fuzz: {Tally.frames} forged frames on {Tally.connections} connections in "
        f"{time.monotonic() - started:.0f} s, answers by code {dict(Tally.codes)}, "
        f"RSS peak {gateway.peak_rss_bytes() / 2**20:.0f} MiB"
    )
    assert Tally.codes[ResponseCode.NO_PERMISSION] > 0
    assert topics(gateway) - before <= {LIVE_TOPIC}
    assert set(stored_topics(gateway.root / "store")) <= {LIVE_TOPIC}
    assert gateway.traceback_count() == 0, gateway.log_tail(60)
    assert gateway.error_lines() == []


@pytest.mark.slow
def test_a_flood_of_wrong_signatures_costs_bounded_cpu_and_memory(gateway: GatewayProcess) -> None:
    frames = []
    for opaque in range(FLOOD):
        cmd = send_command("AuthFlood", b"x" * 256, e="0", d="1")
        fields = dict(cmd.ext_fields or {})
        sign_request(fields, cmd.body, ROOT, "not-the-secret")
        cmd.ext_fields, cmd.opaque = fields, opaque
        frames.append(encode_frame(cmd))
    rss_before = gateway.rss_bytes()
    cpu_before = cpu_seconds(gateway.pid)
    answers = exchange(gateway.broker_addr, frames, drain_s=10.0)
    cpu = cpu_seconds(gateway.pid) - cpu_before
    per_request_us = cpu / FLOOD * 1e6
    print(
        f"\nflood: {FLOOD} sends signed with a wrong secret, server CPU {per_request_us:.0f} µs per request"
    )
    assert Counter(a.code for a in answers) == {ResponseCode.NO_PERMISSION: FLOOD}
    assert per_request_us < FLOOD_CPU_CEILING_US
    assert gateway.rss_bytes() - rss_before < FLOOD_RSS_GROWTH_BYTES
    assert "AuthFlood" not in topics(gateway)
    assert "AuthFlood" not in stored_topics(gateway.root / "store")
