"""A SYNC_MASTER destroyed under a slave of the other implementation: our master with the real
Apache RocketMQ 5.3.3 slave, and the real master with ours (:mod:`compat_tests.ha_pairs`).

With ``inSyncReplicas=2`` a send is answered SUCCESS only once the slave has acknowledged its
bytes, so the master's wait must read the other side's offset reports correctly: after a burst
of concurrent acknowledged sends the master is killed (kill -9) and its store deleted, and the
slave serves every acknowledged message. The same scenario on same-kind pairs is
``test_ha_failover_compat.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.ha_pairs import PairEnv, running_pair, send_burst, wait_served

pytestmark = pytest.mark.compat

TOPIC = "HaMixedT"
BURST_TASKS, BURST_EACH = 4, 50
MASTER_CONF = {"brokerRole": "SYNC_MASTER", "inSyncReplicas": "2"}
SLAVE_CONF = {"slaveReadEnable": "true"}
TIMEOUT_S = 60.0


@pytest.fixture(params=[("ours", "real"), ("real", "ours")], ids=["ours-master", "real-master"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PairEnv]:
    with running_pair(tmp_path, request.param, TOPIC, MASTER_CONF, SLAVE_CONF, TIMEOUT_S) as env:
        yield env


def test_slave_of_the_other_kind_keeps_every_acknowledged_message(env: PairEnv) -> None:
    acked = send_burst(env.pair.master_addr, TOPIC, BURST_TASKS, BURST_EACH)
    env.pair.kill_master(destroy_store=True)
    assert len(acked) == BURST_TASKS * BURST_EACH
    wait_served(env.pair.slave_addr, TOPIC, acked, TIMEOUT_S)
