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

import pytest

from codec.codes import ResponseCode
from compat_tests.ha_pairs import (
    QUEUES,
    PairEnv,
    running_pair,
    send_bodies,
    send_burst,
    wait_offsets,
    wait_replicated,
    wait_route,
    wait_served,
)
from compat_tests.scenario import of, start_scenario

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


@pytest.fixture(scope="module", params=["ours", "real"])
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PairEnv]:
    root = tmp_path_factory.mktemp(f"ha-failover-{request.param}")
    with running_pair(root, (request.param, request.param), TOPIC, MASTER_CONF, SLAVE_CONF, ROUTE_S) as env:
        yield env


def test_push_consumer_reads_the_slave_while_the_master_is_down(env: PairEnv) -> None:
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


def test_sync_master_without_its_slave(env: PairEnv) -> None:
    pair = env.pair
    pair.kill_slave()
    start = time.monotonic()
    assert send_bodies(pair.master_addr, TOPIC, [b"while the slave is down"]) == [
        ResponseCode.FLUSH_SLAVE_TIMEOUT
    ]
    assert time.monotonic() - start >= SLAVE_TIMEOUT_MS / 1000
    pair.start_slave()
    wait_replicated(pair.master_addr, REPLICATE_S)


def test_slave_keeps_every_acknowledged_message_when_the_master_is_destroyed(env: PairEnv) -> None:
    acked = send_burst(env.pair.master_addr, TOPIC, BURST_TASKS, BURST_EACH)
    env.pair.kill_master(destroy_store=True)
    assert len(acked) == BURST_TASKS * BURST_EACH
    wait_served(env.pair.slave_addr, TOPIC, acked, REPLICATE_S)


def decoded(bodies: list[bytes]) -> list[str]:
    return [b.decode() for b in bodies]


def received(events: list[dict[str, object]]) -> set[str]:
    return {str(e["body"]) for e in of(events, "received")}
