"""Classic HA between two in-process brokers: a master and its slave (broker/ha/).

What a user sees: the slave's commit log becomes byte-identical to the master's and a pull from
the slave serves every message; the slave refuses sends as the Java slave does; a SYNC_MASTER
send waits for the slave and, with the slave gone, answers FLUSH_SLAVE_TIMEOUT; haStatus shows
the figures of both sides.
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from broker.app import BrokerApp
from broker.config import BrokerConfig
from broker.ha.roles import REJECT_REMARK, apply_broker_role, suggest_which_broker_id
from broker.ha.slave_sync import SlaveSynchronize
from codec import fastjson
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from codec.headers.pull import PullSysFlag
from codec.headers.transaction import EndTransactionRequestHeader
from codec.message import MESSAGE_MAGIC_CODE_V2, iter_records
from gateway.testing.ports import free_port
from gateway.transport.client import connect
from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection
from store.config import StoreConfig
from store.ha import REPORT, TRANSFER_HEADER
from tests.broker.helpers import pull_request, send_request
from tests.fault.helpers import create_topic_command
from tests.helpers import broker_config

TOPIC = "HaT"
SUBSCRIPTION = PullSysFlag.SUBSCRIPTION
DEADLINE_S = 30.0


def admin(code: int, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand.request(code, EmptyHeader(), body=body)


@asynccontextmanager
async def broker(root: Path, **store_keys: str) -> AsyncIterator[tuple[BrokerApp, Connection]]:
    slave = store_keys.get("brokerRole") == "SLAVE"
    read = store_keys.pop("slaveReadEnable", "false") == "true"
    config = broker_config(root, broker_id=1 if slave else 0, ha_listen_port=0, slave_read_enable=read)
    config.extra.update({"mappedFileSizeCommitLog": str(64 * 1024), **store_keys})
    app = BrokerApp(config, ServerConfig(port=0))
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        try:
            async with connect(f"127.0.0.1:{app.server.port}") as conn:
                yield app, conn
        finally:
            app.shutdown()
            with trio.fail_after(10):
                await app.wait_stopped()


def ha_addr(app: BrokerApp) -> str:
    return f"127.0.0.1:{app.broker.replication.ha.port}"


async def create_topic(conn: Connection) -> None:
    body = {"topicConfigList": [{"topicName": TOPIC, "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}]}
    resp = await conn.invoke(admin(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, fastjson.dumps(body)), 5)
    assert resp.code == ResponseCode.SUCCESS


async def caught_up(master: BrokerApp, slave: BrokerApp) -> None:
    with trio.fail_after(DEADLINE_S):
        while slave.broker.store.max_phy_offset != master.broker.store.max_phy_offset:  # noqa: ASYNC110
            await trio.sleep(0.01)


def files(app: BrokerApp) -> dict[str, bytes]:
    return {Path(mf.path).name: bytes(mf.mm[:]) for mf in app.broker.store.commit_log.queue.files}


async def pull_all(conn: Connection, queue_id: int) -> list[bytes]:
    bodies: list[bytes] = []
    while True:
        pull = pull_request(TOPIC, len(bodies), queue_id=queue_id, suspend_ms=0, flags=SUBSCRIPTION)
        resp = await conn.invoke(pull, 5)
        if resp.code != ResponseCode.SUCCESS:
            return bodies
        bodies += [r.body for r in iter_records(resp.body)]


async def test_slave_copies_the_commit_log_byte_for_byte_and_serves_pulls(tmp_path: Path) -> None:
    async with broker(tmp_path / "m") as (master, mconn):
        await create_topic(mconn)
        slave_keys = {"brokerRole": "SLAVE", "haMasterAddress": ha_addr(master), "slaveReadEnable": "true"}
        async with broker(tmp_path / "s", **slave_keys) as (slave, sconn):
            await create_topic(sconn)
            sent = []
            for i in range(300):  # ~140 KiB: the commit log rolls twice
                body = f"ha message {i} ".encode() * 20
                resp = await mconn.invoke(send_request(TOPIC, body, queue_id=i % 2), 5)
                assert resp.code == ResponseCode.SUCCESS
                sent.append(body)
            assert len(master.broker.store.commit_log.queue.files) >= 3
            await caught_up(master, slave)
            assert files(slave) == files(master)
            assert await pull_all(sconn, 0) + await pull_all(sconn, 1) == sent[0::2] + sent[1::2]

            # Caught up: a slave sends the consumer back to the master at once, not held.
            with trio.fail_after(0.5):
                at_end = await sconn.invoke(
                    pull_request(TOPIC, len(sent[0::2]), queue_id=0, suspend_ms=15_000), 5
                )
            assert at_end.code == ResponseCode.PULL_RETRY_IMMEDIATELY
            assert (at_end.ext_fields or {})["suggestWhichBrokerId"] == "0"
            refused = await sconn.invoke(send_request(TOPIC, b"x"), 5)
            assert (refused.code, refused.remark) == (ResponseCode.SYSTEM_BUSY, REJECT_REMARK)
            end_tx = RemotingCommand.request(
                RequestCode.END_TRANSACTION,
                EndTransactionRequestHeader(
                    producer_group="pg",
                    tran_state_table_offset=0,
                    commit_log_offset=0,
                    commit_or_rollback=8,
                    from_transaction_check=False,
                    msg_id="00",
                ),
            )
            refused = await sconn.invoke(end_tx, 5)
            assert (refused.code, refused.remark) == (ResponseCode.SLAVE_NOT_AVAILABLE, None)

            master_ha = json.loads((await mconn.invoke(admin(RequestCode.GET_BROKER_HA_STATUS), 5)).body)
            end = master.broker.store.max_phy_offset
            assert master_ha["master"] is True
            assert master_ha["masterCommitLogMaxOffset"] == end
            assert master_ha["inSyncSlaveNums"] == 1
            [conn_info] = master_ha["haConnectionInfo"]
            assert (conn_info["slaveAckOffset"], conn_info["diff"], conn_info["inSync"]) == (end, 0, True)
            assert conn_info["transferFromWhere"] == end
            slave_ha = json.loads((await sconn.invoke(admin(RequestCode.GET_BROKER_HA_STATUS), 5)).body)
            assert slave_ha["master"] is False
            client = slave_ha["haClientRuntimeInfo"]
            assert (client["masterAddr"], client["maxOffset"]) == (ha_addr(master), end)
            assert client["lastReadTimestamp"] > 0


async def test_slave_without_slave_read_enable_rejects_pulls(tmp_path: Path) -> None:
    """``PullMessageProcessor.rejectRequest``: a slave serves reads only with ``slaveReadEnable``;
    the Java consumer meets the same flow-control answer as a send to a slave and retries."""
    async with broker(tmp_path / "m") as (master, mconn):
        await create_topic(mconn)
        assert (await mconn.invoke(send_request(TOPIC, b"on the master"), 5)).code == ResponseCode.SUCCESS
        slave_keys = {"brokerRole": "SLAVE", "haMasterAddress": ha_addr(master)}
        async with broker(tmp_path / "s", **slave_keys) as (slave, sconn):
            await create_topic(sconn)
            await caught_up(master, slave)
            for code in (RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE):
                pull = pull_request(TOPIC, 0, suspend_ms=0, flags=SUBSCRIPTION)
                pull.code = code
                refused = await sconn.invoke(pull, 5)
                assert (refused.code, refused.remark) == (ResponseCode.SYSTEM_BUSY, REJECT_REMARK)
            served = await mconn.invoke(pull_request(TOPIC, 0, suspend_ms=0, flags=SUBSCRIPTION), 5)
            assert served.code == ResponseCode.SUCCESS


async def test_sync_master_waits_for_the_slave_and_times_out_without_it(tmp_path: Path) -> None:
    keys = {"brokerRole": "SYNC_MASTER", "inSyncReplicas": "2", "slaveTimeout": "1000"}
    async with broker(tmp_path / "m", **keys) as (master, mconn):
        await create_topic(mconn)
        async with broker(tmp_path / "s", brokerRole="SLAVE", haMasterAddress=ha_addr(master)) as (slave, _):
            with trio.fail_after(DEADLINE_S):
                while not master.broker.replication.ha.connections:  # noqa: ASYNC110 - server state
                    await trio.sleep(0.01)
            for i in range(20):
                resp = await mconn.invoke(send_request(TOPIC, f"sync {i}".encode()), 5)
                assert resp.code == ResponseCode.SUCCESS
                # Acknowledged only once the slave held the bytes.
                assert slave.broker.store.max_phy_offset == master.broker.store.max_phy_offset
        start = time.monotonic()
        resp = await mconn.invoke(send_request(TOPIC, b"no slave"), 5)
        waited = time.monotonic() - start
        assert resp.code == ResponseCode.FLUSH_SLAVE_TIMEOUT
        assert waited >= 1.0
        assert (resp.ext_fields or {})["msgId"]  # stored on the master all the same, as Java answers


async def test_sync_master_with_one_in_sync_replica_answers_at_once(tmp_path: Path) -> None:
    async with broker(tmp_path / "m", brokerRole="SYNC_MASTER") as (_master, mconn):
        with trio.fail_after(2):
            resp = await mconn.invoke(send_request(TOPIC, b"alone"), 5)
        assert resp.code == ResponseCode.SUCCESS


async def test_slave_sync_runs_again_every_period_and_copies_what_the_master_created(tmp_path: Path) -> None:
    """``SlaveSynchronize.syncAll`` repeats every period without any change of the master's
    address: a topic, a group and an offset created on the master after the first round reach
    the slave in a later one."""
    async with broker(tmp_path / "m") as (master, mconn):
        await create_topic(mconn)
        async with broker(tmp_path / "s", brokerRole="SLAVE", haMasterAddress=ha_addr(master)) as (slave, _):
            sync = SlaveSynchronize(slave.controller, period_s=0.2)
            async with trio.open_nursery() as nursery:
                await nursery.start(sync.run)
                sync.set_master_addr(master.controller.config.broker_addr)
                with trio.fail_after(DEADLINE_S):
                    while sync.syncs < 1:  # noqa: ASYNC110 - the sync task's counter
                        await trio.sleep(0.01)
                assert slave.controller.topics.select(TOPIC) is not None
                assert slave.controller.topics.select("HaSyncT") is None
                first = sync.syncs

                body = fastjson.dumps({"groupName": "ha_sync_cg", "retryMaxTimes": 7})
                resp = await mconn.invoke(admin(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body), 5)
                assert resp.code == ResponseCode.SUCCESS
                topic = create_topic_command("HaSyncT")  # 4 read and write queues, perm 6
                assert (await mconn.invoke(topic, 5)).code == ResponseCode.SUCCESS
                fields = {
                    "consumerGroup": "ha_sync_cg",
                    "topic": "HaSyncT",
                    "queueId": "2",
                    "commitOffset": "5",
                }
                resp = await mconn.invoke(
                    RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, fields), 5
                )
                assert resp.code == ResponseCode.SUCCESS

                with trio.fail_after(DEADLINE_S):
                    while slave.controller.offsets.query("ha_sync_cg", "HaSyncT", 2) != 5:  # noqa: ASYNC110
                        await trio.sleep(0.01)
                assert sync.syncs > first
                copied = slave.controller.topics.select("HaSyncT")
                assert copied is not None
                assert (copied.read_queue_nums, copied.write_queue_nums, copied.perm) == (4, 4, 6)
                group = slave.controller.groups.find("ha_sync_cg", create=False)
                assert group is not None
                assert group.retry_max_times == 7
                nursery.cancel_scope.cancel()


async def receive_exactly(stream: trio.SocketStream, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = await stream.receive_some(n - len(data))
        assert chunk, f"closed after {len(data)} of {n} bytes"
        data += chunk
    return data


async def test_master_speaks_the_wire_protocol_to_a_raw_slave(tmp_path: Path) -> None:
    async with broker(tmp_path / "m", haSendHeartbeatInterval="300") as (master, mconn):
        for i in range(3):
            assert (
                await mconn.invoke(send_request(TOPIC, f"raw {i}".encode()), 5)
            ).code == ResponseCode.SUCCESS
        end = master.broker.store.max_phy_offset
        stream = await trio.open_tcp_stream("127.0.0.1", master.broker.replication.ha.port)
        async with stream:
            await stream.send_all(REPORT.pack(0))  # an empty slave
            offset, size = TRANSFER_HEADER.unpack(await receive_exactly(stream, TRANSFER_HEADER.size))
            assert (offset, size) == (0, end)
            assert await receive_exactly(stream, size) == files(master)[f"{0:020d}"][:end]
            with trio.fail_after(5):  # idle: a heartbeat, an empty transfer at the next offset
                header = await receive_exactly(stream, TRANSFER_HEADER.size)
            assert TRANSFER_HEADER.unpack(header) == (end, 0)
            await stream.send_all(REPORT.pack(end - 10) + REPORT.pack(end))  # the last report counts
            with trio.fail_after(5):
                while True:
                    status = json.loads((await mconn.invoke(admin(RequestCode.GET_BROKER_HA_STATUS), 5)).body)
                    if status["haConnectionInfo"] and status["haConnectionInfo"][0]["slaveAckOffset"] == end:
                        break
                    await trio.sleep(0.02)


async def test_slave_reports_heartbeats_and_drops_a_master_sending_the_wrong_offset(tmp_path: Path) -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    keys = {"brokerRole": "SLAVE", "haMasterAddress": f"127.0.0.1:{port}", "haSendHeartbeatInterval": "200"}
    async with broker(tmp_path / "s", **keys) as (_slave, _sconn):
        with trio.fail_after(10):
            stream = await listeners[0].accept()
        async with stream:
            with trio.fail_after(5):
                assert REPORT.unpack(await receive_exactly(stream, REPORT.size)) == (0,)
                assert REPORT.unpack(await receive_exactly(stream, REPORT.size)) == (0,)  # a heartbeat
            await stream.send_all(TRANSFER_HEADER.pack(0, 0))  # a heartbeat changes nothing
            # The first 8 bytes of a 200-byte record: appended, reported, not dispatched yet.
            await stream.send_all(TRANSFER_HEADER.pack(0, 8) + struct.pack(">iI", 200, MESSAGE_MAGIC_CODE_V2))
            with trio.fail_after(5):
                assert REPORT.unpack(await receive_exactly(stream, REPORT.size)) == (8,)
            await stream.send_all(TRANSFER_HEADER.pack(50, 0))  # not the slave's offset: it hangs up
            with trio.fail_after(5):
                while await stream.receive_some(1024):  # heartbeats until the close
                    pass
        with trio.fail_after(10):
            stream = await listeners[0].accept()  # reconnected after RECONNECT_WAIT_S
        async with stream:
            assert REPORT.unpack(await receive_exactly(stream, REPORT.size)) == (8,)  # resumes from its own
            await stream.send_all(TRANSFER_HEADER.pack(8, 1 << 30))  # no transfer is that big: hang up
            with trio.fail_after(5):
                while await stream.receive_some(1024):
                    pass
    for listener in listeners:
        await listener.aclose()


@pytest.mark.parametrize(
    ("broker_id", "slave_read", "behind", "expected"),
    [
        (0, False, True, 0),  # slaveReadEnable off: always the master
        (0, True, True, 1),  # a slow consumer goes to whichBrokerWhenConsumeSlowly
        (0, True, False, 0),  # else to the group's brokerId
        (1, True, False, 0),  # a slave sends a consumer that is not behind to the master
        (1, True, True, 1),
    ],
)
def test_suggest_which_broker_id(broker_id: int, slave_read: bool, behind: bool, expected: int) -> None:
    config = BrokerConfig(broker_id=broker_id, slave_read_enable=slave_read)
    assert suggest_which_broker_id(config, 1, 0, behind) == expected


def test_a_slave_needs_a_positive_broker_id() -> None:
    store_config, _ = StoreConfig.from_properties({"brokerRole": "SLAVE"})
    with pytest.raises(ValueError, match="Slave's brokerId must be > 0"):
        apply_broker_role(BrokerConfig(broker_id=0), store_config)
    master = BrokerConfig(broker_id=3)
    apply_broker_role(master, StoreConfig())
    assert master.broker_id == 0


async def test_a_taken_default_ha_port_falls_back_to_a_free_one(tmp_path: Path) -> None:
    port = free_port(offsets=(-2, 0, 1))
    taken = await trio.open_tcp_listeners(port + 1, host="127.0.0.1")
    try:
        config = broker_config(tmp_path, listen_port=port)
        app = BrokerApp(config, ServerConfig(host="127.0.0.1", port=port))
        async with trio.open_nursery() as nursery:
            await nursery.start(app.run)
            ha_port = app.broker.replication.ha.port
            assert ha_port not in (0, port + 1)
            assert (app.registrar.build_request().ext_fields or {})["haServerAddr"] == f"127.0.0.1:{ha_port}"
            app.shutdown()
        explicit = broker_config(tmp_path / "explicit", listen_port=port, ha_listen_port=port + 1)
        with pytest.raises(OSError, match="in use"):
            await BrokerApp(explicit, ServerConfig(host="127.0.0.1", port=port)).run()
    finally:
        for listener in taken:
            await listener.aclose()
