"""Failover of a classic SYNC_MASTER/slave pair, run unchanged on our pair and on the real Apache
RocketMQ 5.3.3 pair (:mod:`compat_tests.ha_pairs`) with the same assertions, in this order on
one pair per module run (a module-scoped fixture: three JVM brokers starts for the real pair):

1. an unmodified 5.3.3 ``DefaultMQPushConsumer`` keeps consuming from the slave while the master
   is killed (the slave has ``slaveReadEnable``), commits its offsets there, and once the master
   is back its offsets reach the master, with no message delivered twice;
2. with the slave killed, a send to the SYNC_MASTER (``inSyncReplicas=2``) answers what the real
   one answers; the slave, started again, catches up;
3. after a burst of acknowledged concurrent sends the master is killed and its store deleted:
   the slave serves every acknowledged message.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from codec.codes import ResponseCode
from codec.headers.pull import PullSysFlag
from codec.message import iter_records
from compat_tests.ha_pairs import (
    QUEUES,
    OurPair,
    Pair,
    RealPair,
    create_topic,
    send_bodies,
    wait_offsets,
    wait_replicated,
    wait_route,
)
from compat_tests.reference import start_gateway_namesrv, stop
from compat_tests.scenario import of, start_scenario
from gateway.transport.client import connect
from tests.broker.helpers import pull_request, send_request

pytestmark = pytest.mark.compat

TOPIC = "HaFailoverT"
GROUP = "ha_failover_cg"
BEFORE, AFTER = 40, 40  # messages sent before the master is killed, and after it is back
BURST_TASKS, BURST_EACH = 4, 50
SLAVE_TIMEOUT_MS = 1000
MASTER_CONF = {"brokerRole": "SYNC_MASTER", "inSyncReplicas": "2", "slaveTimeout": str(SLAVE_TIMEOUT_MS)}
SLAVE_CONF = {"slaveReadEnable": "true"}
ROUTE_S = 60.0  # a (re)started broker registers; a killed one's channel closes at the NameServer
REPLICATE_S = 60.0
#: The client polls routes every 30 s (pollNameServerInterval) and persists offsets every 5 s.
CONSUME_S = 120.0


class Env:
    def __init__(self, pair: Pair, namesrv: str, root: Path) -> None:
        self.pair = pair
        self.namesrv = namesrv
        self.root = root


@pytest.fixture(scope="module", params=["ours", "real"])
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp(f"ha-failover-{request.param}")
    namesrv, naddr = start_gateway_namesrv(root)
    kind = OurPair if request.param == "ours" else RealPair
    pair = kind(root, naddr, MASTER_CONF, SLAVE_CONF)
    try:
        pair.start_master()
        create_topic(pair.master_addr, TOPIC)
        # The topic exists on the master first: a slave's metadata sync deletes the topics its
        # master does not have (ours syncs on learning its master, the real one after 60 s).
        pair.start_slave()
        create_topic(pair.slave_addr, TOPIC)  # as mqadmin updateTopic -b: no wait for that sync
        wait_route(naddr, TOPIC, {0: pair.master_addr, 1: pair.slave_addr}, ROUTE_S)
        wait_replicated(pair.master_addr, REPLICATE_S)  # connected: a SYNC_MASTER send waits for it
        yield Env(pair, naddr, root)
    finally:
        pair.stop()
        stop(namesrv)


def test_push_consumer_reads_the_slave_while_the_master_is_down(env: Env) -> None:
    pair = env.pair
    before = [f"before-{i}".encode() for i in range(BEFORE)]
    assert send_bodies(pair.master_addr, TOPIC, before) == [ResponseCode.SUCCESS] * BEFORE
    wait_replicated(pair.master_addr, REPLICATE_S)
    pair.kill_master()
    wait_route(env.namesrv, TOPIC, {1: pair.slave_addr}, ROUTE_S)

    consumer = start_scenario(
        "5.3.3", "consume", env.namesrv, env.root / "consumer", 600, topic=TOPIC, group=GROUP, expect=10**6
    )
    try:
        consumer.wait_for(lambda _e: received(consumer.events()) >= set(decoded(before)), CONSUME_S)
        per_queue = BEFORE // QUEUES
        wait_offsets(pair.slave_addr, GROUP, TOPIC, dict.fromkeys(range(QUEUES), per_queue), CONSUME_S)

        pair.start_master()
        wait_route(env.namesrv, TOPIC, {0: pair.master_addr, 1: pair.slave_addr}, ROUTE_S)
        wait_replicated(pair.master_addr, REPLICATE_S)  # the slave's HA client reconnects every 5 s
        after = [f"after-{i}".encode() for i in range(AFTER)]
        assert send_bodies(pair.master_addr, TOPIC, after) == [ResponseCode.SUCCESS] * AFTER
        every = set(decoded(before + after))
        consumer.wait_for(lambda _e: received(consumer.events()) >= every, CONSUME_S)
        per_queue = (BEFORE + AFTER) // QUEUES
        wait_offsets(pair.master_addr, GROUP, TOPIC, dict.fromkeys(range(QUEUES), per_queue), CONSUME_S)
    finally:
        events = consumer.stop()
    bodies = [str(e["body"]) for e in of(events, "received")]
    assert sorted(bodies) == sorted(decoded(before + after))  # each once: no redelivery on failback


def test_sync_master_without_its_slave(env: Env) -> None:
    pair = env.pair
    pair.kill_slave()
    start = time.monotonic()
    assert send_bodies(pair.master_addr, TOPIC, [b"while the slave is down"]) == [
        ResponseCode.FLUSH_SLAVE_TIMEOUT
    ]
    assert time.monotonic() - start >= SLAVE_TIMEOUT_MS / 1000
    pair.start_slave()
    wait_replicated(pair.master_addr, REPLICATE_S)


def test_slave_keeps_every_acknowledged_message_when_the_master_is_destroyed(env: Env) -> None:
    pair = env.pair
    acked: list[bytes] = []

    async def burst() -> None:
        async def sender(task: int) -> None:
            async with connect(pair.master_addr) as conn:
                for i in range(BURST_EACH):
                    body = f"burst-{task}-{i}".encode()
                    resp = await conn.invoke(send_request(TOPIC, body, queue_id=task % QUEUES), 10)
                    if resp.code == ResponseCode.SUCCESS:
                        acked.append(body)

        async with trio.open_nursery() as nursery:
            for task in range(BURST_TASKS):
                nursery.start_soon(sender, task)

    trio.run(burst)
    pair.kill_master(destroy_store=True)
    assert len(acked) == BURST_TASKS * BURST_EACH
    deadline = time.monotonic() + REPLICATE_S
    while not set(acked) <= (stored := slave_bodies(pair.slave_addr)):
        assert time.monotonic() < deadline, (
            f"{len(set(acked) - stored)} acknowledged messages not on the slave"
        )
        time.sleep(0.2)


def decoded(bodies: list[bytes]) -> list[str]:
    return [b.decode() for b in bodies]


def received(events: list[dict[str, object]]) -> set[str]:
    return {str(e["body"]) for e in of(events, "received")}


def slave_bodies(addr: str) -> set[bytes]:
    """Every body a pull from offset 0 of each queue returns (``slaveReadEnable`` on the slave)."""

    async def run() -> set[bytes]:
        found: set[bytes] = set()
        async with connect(addr) as conn:
            for queue_id in range(QUEUES):
                offset = 0
                while True:
                    pull = pull_request(TOPIC, offset, queue_id, suspend_ms=0, flags=PullSysFlag.SUBSCRIPTION)
                    resp = await conn.invoke(pull, 10)
                    if resp.code != ResponseCode.SUCCESS:
                        break
                    bodies = [r.body for r in iter_records(resp.body)]
                    found.update(bodies)
                    offset += len(bodies)
        return found

    return trio.run(run)
