"""POP revive records move between our broker and the real Apache RocketMQ 5.3.3 broker.

One broker pops two messages and acks one, then stops; the other is started on the same store
directory and must revive the unacknowledged message (and only it) once its invisible time has
passed: it reads the checkpoint and ack records (``rmq_sys_REVIVE_LOG_DefaultCluster``, put through
the timer topic ``rmq_sys_wheel_timer``, where the real broker's timer picks ours up and ours
picks up the real broker's) and the ``CID_RMQ_SYS_REVIVE_GROUP`` offsets. Both directions.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from compat_tests.pop_raw import (
    RawSession,
    ack,
    broker_of,
    expect_revived_once,
    pop,
    popped,
    wait_offset_persisted,
    wait_route,
)
from compat_tests.reference import ReferenceServers, run_mqadmin
from compat_tests.scenario import of, run_scenario
from compat_tests.store_checks import offsets_file
from compat_tests.targets import GatewayTarget

pytestmark = pytest.mark.compat

INVISIBLE_MS = 20_000
LONG_INVISIBLE_MS = 45_000  # beyond the real broker's stop (about 20 s)
COMMIT_LOG_FILE = 256 * 1024 * 1024  # the size both brokers map their commit-log files with
SUCCESS = 0


def test_real_broker_revives_what_ours_popped(tmp_path: Path) -> None:
    topic, group = "CrossPopT", "crossPopG"
    ours = GatewayTarget(tmp_path, {"mappedFileSizeCommitLog": str(COMMIT_LOG_FILE)})
    try:
        out = run_mqadmin(
            ours.namesrv_addr, "updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "1", "-w", "1",
            home=tmp_path,
        )  # fmt: skip
        assert "success" in out, out
        wait_route(ours.namesrv_addr, topic)
        sent = of(
            run_scenario("5.3.3", "produce", ours.namesrv_addr, tmp_path, 90, topic=topic, count=2), "sent"
        )
        assert len(sent) == 2
        with RawSession(broker_of(ours.namesrv_addr, topic)) as s:
            first, second = popped(pop(s, topic, group, -1, INVISIBLE_MS))
            popped_at = time.monotonic()
            assert ack(s, topic, group, 0, first["queue_offset"], first["handle"])["code"] == SUCCESS
    finally:
        ours.stop()
    assert time.monotonic() - popped_at < INVISIBLE_MS / 1000 - 5, "our broker took too long to stop"
    real = ReferenceServers.on_loopback(tmp_path, extra_conf=(f"mappedFileSizeCommitLog={COMMIT_LOG_FILE}",))
    try:
        real.start_namesrv()
        real.start_broker()
        real.wait_registered()
        with RawSession(real.broker_addr) as s:
            expect_revived_once(s, topic, group, second, popped_at, INVISIBLE_MS / 1000)
    finally:
        real.stop()


def test_ours_revives_what_the_real_broker_popped(tmp_path: Path) -> None:
    """The other way round; the real broker is stopped well before the checkpoint is due (its own
    reviver never saw it due), so the message can only come back through our revive service."""
    topic, group = "CrossPopR", "crossPopRG"
    real = ReferenceServers.on_loopback(tmp_path, extra_conf=(f"mappedFileSizeCommitLog={COMMIT_LOG_FILE}",))
    try:
        real.start_namesrv()
        real.start_broker()
        real.wait_registered()
        out = run_mqadmin(
            real.namesrv_addr, "updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "1", "-w", "1",
            home=tmp_path,
        )  # fmt: skip
        assert "success" in out, out
        wait_route(real.namesrv_addr, topic)
        sent = of(
            run_scenario("5.3.3", "produce", real.namesrv_addr, tmp_path, 90, topic=topic, count=2), "sent"
        )
        assert len(sent) == 2
        with RawSession(real.broker_addr) as s:
            first, second = popped(pop(s, topic, group, -1, LONG_INVISIBLE_MS))
            popped_at = time.monotonic()
            assert ack(s, topic, group, 0, first["queue_offset"], first["handle"])["code"] == SUCCESS
        wait_offset_persisted(lambda: offsets_file(real.store), topic, group)
    finally:
        real.stop()
    assert time.monotonic() - popped_at < LONG_INVISIBLE_MS / 1000 - 5, (
        "the real broker took too long to stop"
    )
    ours = GatewayTarget(tmp_path, {"mappedFileSizeCommitLog": str(COMMIT_LOG_FILE)})
    try:
        with RawSession(broker_of(ours.namesrv_addr, topic)) as s:
            expect_revived_once(s, topic, group, second, popped_at, LONG_INVISIBLE_MS / 1000)
    finally:
        ours.stop()
