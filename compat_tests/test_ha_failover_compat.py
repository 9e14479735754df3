"""Failover of a classic SYNC_MASTER/slave pair, run unchanged on our pair and on the real Apache
RocketMQ 5.3.3 pair (:mod:`compat_tests.ha_pairs`) with the same assertions, in this order on
one pair per module run (a module-scoped fixture: three JVM brokers starts for the real pair):

0. a topic, a subscription group and a committed offset created on the master reach the slave
   within the metadata sync period (``SlaveSynchronize``: 60 s), with the master's values;
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
from collections.abc import Callable, Iterator

import pytest

from codec.codes import ResponseCode
from compat_tests.ha_pairs import (
    QUEUES,
    Metadata,
    PairEnv,
    commit_offset,
    committed_offsets,
    create_group,
    create_topic,
    metadata,
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
SYNC_TOPIC, SYNC_GROUP = "HaSyncT", "ha_sync_cg"
SYNC_RETRY_MAX = 7
SYNC_OFFSETS = {0: 3, 2: 5}  # queue id -> committed offset
#: A slave's metadata sync runs when 60 s have passed since the last one (checked every 3 s by
#: the real slave's BrokerController), plus a margin for a loaded machine.
SYNC_S = 60.0 + 20.0


@pytest.fixture(scope="module", params=["ours", "real"])
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PairEnv]:
    root = tmp_path_factory.mktemp(f"ha-failover-{request.param}")
    with running_pair(root, (request.param, request.param), TOPIC, MASTER_CONF, SLAVE_CONF, ROUTE_S) as env:
        yield env


def test_slave_copies_a_new_topic_group_and_offset_within_the_sync_period(env: PairEnv) -> None:
    pair = env.pair
    create_topic(pair.master_addr, SYNC_TOPIC)
    create_group(pair.master_addr, SYNC_GROUP, SYNC_RETRY_MAX)
    for queue_id, offset in SYNC_OFFSETS.items():
        commit_offset(pair.master_addr, SYNC_GROUP, SYNC_TOPIC, queue_id, offset)
    created = time.monotonic()  # the last of the three now exists on the master
    key = f"{SYNC_TOPIC}@{SYNC_GROUP}"
    targets: dict[str, Callable[[Metadata], bool]] = {
        "topic": lambda m: SYNC_TOPIC in m.topics,
        "group": lambda m: SYNC_GROUP in m.groups,
        "offsets": lambda m: key in m.offsets,
    }
    delays: dict[str, float] = {}
    while True:
        seen = metadata(pair.slave_addr)
        now = time.monotonic() - created
        delays |= {name: now for name, present in targets.items() if name not in delays and present(seen)}
        if len(delays) == len(targets):
            break
        assert now < SYNC_S, f"after {now:.1f} s the slave lacks {sorted(set(targets) - set(delays))}"
        time.sleep(0.5)
    print(f"{type(pair.slave).__name__} sync delays:", {name: round(d, 1) for name, d in delays.items()})

    master = metadata(pair.master_addr)
    topic, group = seen.topics[SYNC_TOPIC], seen.groups[SYNC_GROUP]
    assert topic == master.topics[SYNC_TOPIC]
    want_topic = {"topicName": SYNC_TOPIC, "readQueueNums": QUEUES, "writeQueueNums": QUEUES, "perm": 6}
    assert {k: topic[k] for k in want_topic} == want_topic
    assert group == master.groups[SYNC_GROUP]
    want_group = {"groupName": SYNC_GROUP, "consumeEnable": True, "retryMaxTimes": SYNC_RETRY_MAX}
    assert {k: group[k] for k in want_group} == want_group
    assert seen.offsets[key] == master.offsets[key] == SYNC_OFFSETS
    committed = committed_offsets(pair.slave_addr, SYNC_GROUP, SYNC_TOPIC)
    assert {queue_id: committed[queue_id] for queue_id in SYNC_OFFSETS} == SYNC_OFFSETS


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
