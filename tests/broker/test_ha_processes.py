"""Classic HA across processes: ``rmq-gateway namesrv``, a SYNC_MASTER ``rmq-gateway broker -c
master.conf`` and a slave ``rmq-gateway broker -c slave.conf`` that learns its master from its
registration, each on free ports with a temporary HOME.

What a user sees: every acknowledged send is on the slave, whose commit log is byte-identical to
the master's and which serves every message to a pull (topics copied by its metadata sync); with
the slave killed a send answers FLUSH_SLAVE_TIMEOUT; the slave, restarted after kill -9, resumes
from its own offset and catches up.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from codec import fastjson
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from codec.headers.pull import PullSysFlag
from codec.message import iter_records
from gateway.transport.client import connect
from gateway.transport.connection import Connection
from tests.broker.ha_process import Server, broker
from tests.broker.helpers import pull_request, send_request

DEADLINE_S = 60.0
TOPIC = "HaProcT"


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in reversed(started):
        server.stop()


def admin(code: int, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand.request(code, EmptyHeader(), body=body)


async def ha_status(conn: Connection) -> dict[str, object]:
    status = json.loads((await conn.invoke(admin(RequestCode.GET_BROKER_HA_STATUS), 5)).body)
    assert isinstance(status, dict)
    return status


async def wait_caught_up(master: Connection) -> int:
    """Wait until the one slave has acked the master's whole log; returns that offset."""
    with trio.fail_after(DEADLINE_S):
        while True:
            status = await ha_status(master)
            conns = status["haConnectionInfo"]
            assert isinstance(conns, list)
            end = status["masterCommitLogMaxOffset"]
            if conns and conns[0]["slaveAckOffset"] == end:
                assert isinstance(end, int)
                return end
            await trio.sleep(0.05)


def commit_log(store: Path, end: int) -> bytes:
    files = sorted((store / "commitlog").iterdir())
    return b"".join(f.read_bytes() for f in files)[:end]


async def pull_all(conn: Connection, queue_id: int) -> list[bytes]:
    bodies: list[bytes] = []
    while True:
        pull = pull_request(TOPIC, len(bodies), queue_id, suspend_ms=0, flags=PullSysFlag.SUBSCRIPTION)
        resp = await conn.invoke(pull, 5)
        if resp.code != ResponseCode.SUCCESS:
            return bodies
        bodies += [r.body for r in iter_records(resp.body)]


async def slave_serves(conn: Connection, expected: list[list[bytes]]) -> None:
    """Poll pulls on the slave until they serve ``expected`` per queue (its metadata sync and
    replication are asynchronous)."""
    with trio.fail_after(DEADLINE_S):
        while [await pull_all(conn, q) for q in range(len(expected))] != expected:  # noqa: ASYNC110
            await trio.sleep(0.1)


async def test_master_and_slave_processes(tmp_path: Path, servers: list[Server]) -> None:
    namesrv = Server(tmp_path, "namesrv", ["namesrv", "--namesrv-port", "0"])
    servers.append(namesrv)
    namesrv.start()
    master = broker(
        tmp_path,
        "master",
        namesrv.addr,
        {"brokerRole": "SYNC_MASTER", "inSyncReplicas": "2", "slaveTimeout": "1000"},
    )
    servers.append(master)
    master.start()
    async with connect(master.addr) as mconn:
        body = {"topicConfigList": [{"topicName": TOPIC, "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}]}
        resp = await mconn.invoke(admin(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, fastjson.dumps(body)), 5)
        assert resp.code == ResponseCode.SUCCESS
        slave_conf = {"brokerRole": "SLAVE", "brokerId": "1", "slaveReadEnable": "true"}
        slave = broker(tmp_path, "slave", namesrv.addr, slave_conf)
        servers.append(slave)
        slave.start()
        with trio.fail_after(DEADLINE_S):
            while not (await ha_status(mconn))["haConnectionInfo"]:  # noqa: ASYNC110
                await trio.sleep(0.05)

        sent: list[list[bytes]] = [[], []]
        for i in range(200):  # ~90 KiB: the master's commit log rolls
            payload = f"process ha {i} ".encode() * 20
            resp = await mconn.invoke(send_request(TOPIC, payload, queue_id=i % 2), 10)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            sent[i % 2].append(payload)
        end = await wait_caught_up(mconn)
        assert commit_log(tmp_path / "slave", end) == commit_log(tmp_path / "master", end)
        async with connect(slave.addr) as sconn:
            await slave_serves(sconn, sent)
            refused = await sconn.invoke(send_request(TOPIC, b"to the slave"), 5)
            assert refused.code == ResponseCode.SYSTEM_BUSY

        slave.kill()
        start = time.monotonic()
        resp = await mconn.invoke(send_request(TOPIC, b"while the slave is down", queue_id=0), 10)
        assert resp.code == ResponseCode.FLUSH_SLAVE_TIMEOUT
        assert time.monotonic() - start >= 1.0
        sent[0].append(b"while the slave is down")
        killed_at = len(commit_log(tmp_path / "slave", 1 << 40))

        slave.start()
        end = await wait_caught_up(mconn)
        assert commit_log(tmp_path / "slave", end) == commit_log(tmp_path / "master", end)
        # The restarted slave asked for the bytes after its own (a new slave would get the last file).
        assert re.search(r"master transfer data from [1-9]\d* to slave", master.text())
        assert killed_at > 0
        async with connect(slave.addr) as sconn:
            await slave_serves(sconn, sent)
        assert "Traceback" not in master.text() + slave.text()
