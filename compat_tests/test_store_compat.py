"""Store directories move both ways between the real Apache RocketMQ 5.3.3 broker and our store.

(a) The real broker stores messages sent by a real producer (keys, tags, several queues, a batch,
    rolling commit-log files); after a clean stop our :class:`store.message_store.MessageStore`
    opens its directory and finds every message at its queue offset and physical offset, and by
    every key. With ``RMQ_STORE_WRITE_GOLDEN=1`` the directory is also copied to
    ``tests/golden/store/real-5.3.3`` for the Java-free test ``tests/store/test_golden_store.py``.
(b) Our store writes a directory (and ``config/topics.json``); the real broker starts on it and a
    real ``DefaultLitePullConsumer`` receives every message with its queue offset, keys, tags and
    body, and ``DefaultMQAdminExt.queryMessage`` finds them by key through our index files. After
    the real broker stops, our store opens the directory again.

Both use small files (``SMALL_STORE``) so that commit logs and consume queues roll. The Java side
is a small scenario program (``tests/golden/store/java/StoreScenario.java``) compiled at test time
against the reference jars; the servers are :class:`compat_tests.reference.ReferenceServers`
with the small file sizes added to their broker.conf; the checks of (a) are in
``compat_tests/store_checks.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codec.message import MessageRecord, decode_record
from codec.properties import KEYS, TAGS, UNIQ_KEY, encode_properties
from compat_tests.reference import REFERENCE_LIB, ReferenceServers
from compat_tests.scenario import TEST_JVM_OPTIONS
from compat_tests.store_checks import COUNT, SMALL_STORE, check_real_store, store_config
from store.message_store import MessageStore
from store.metadata import TOPICS_JSON, data_version, topic_config_entry

pytestmark = pytest.mark.compat

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "tests" / "golden" / "store" / "java" / "StoreScenario.java"
GOLDEN_DIR = REPO / "tests" / "golden" / "store" / "real-5.3.3"


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not REFERENCE_LIB.is_dir():
        pytest.fail("reference jars missing: run scripts/setup-java.sh")
    out = tmp_path_factory.mktemp("scenario")
    subprocess.run(
        ["javac", "-nowarn", "-cp", f"{REFERENCE_LIB}/*", "-d", str(out), str(SCENARIO)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return out


def run_scenario(classes: Path, home: Path, *args: str, timeout: float = 120) -> list[list[str]]:
    result = subprocess.run(
        ["java", "-Xmx128m", *TEST_JVM_OPTIONS, f"-Duser.home={home}",
         "-cp", f"{classes}{os.pathsep}{REFERENCE_LIB}/*", "StoreScenario", *args],
        capture_output=True, timeout=timeout, check=False,
    )  # fmt: skip
    text = result.stdout.decode("utf-8", errors="replace")
    assert "DONE" in text, text[-3000:] + result.stderr.decode(errors="replace")[-3000:]
    return [line.split("\t") for line in text.splitlines() if line[:4] in ("SENT", "BATC", "RECV", "QUER")]


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[ReferenceServers]:
    s = ReferenceServers.on_loopback(
        tmp_path,
        broker_name="broker-store",
        extra_conf=("timerWheelEnable=false", *(f"{k}={v}" for k, v in SMALL_STORE.items())),
    )
    try:
        s.start_namesrv()
        yield s
    finally:
        s.stop()


# -- (a) real broker → our store ------------------------------------------------------------------


def test_real_broker_store_opens_in_our_store(servers: ReferenceServers, scenario: Path) -> None:
    servers.start_broker()
    servers.wait_registered()
    sent = run_scenario(
        scenario, servers.workdir, "produce", servers.namesrv_addr, "StoreCompatReal", str(COUNT)
    )
    assert len(sent) == COUNT + 3
    servers.stop_broker()
    assert not (servers.store / "abort").exists()
    check_real_store(servers.store, sent)
    if os.environ.get("RMQ_STORE_WRITE_GOLDEN") == "1":
        write_golden(servers.store, sent)


def write_golden(store: Path, sent: list[list[str]]) -> None:
    """Copy the store files our reader needs (not the 5.x timer/pop extras) and what was sent."""
    if GOLDEN_DIR.exists():
        shutil.rmtree(GOLDEN_DIR)
    for sub in ("commitlog", "consumequeue/StoreCompatReal", "index", "config"):
        shutil.copytree(store / sub, GOLDEN_DIR / sub)
    shutil.copy(store / "checkpoint", GOLDEN_DIR / "checkpoint")
    (GOLDEN_DIR / "sent.json").write_text(json.dumps({"config": SMALL_STORE, "sent": sent}, indent=1))


# -- (b) our store → real broker ------------------------------------------------------------------


def batch_id(j: int) -> str:
    return f"7F0000010000BA7C{j:016X}"


def write_our_store(root: Path, store_port: int) -> list[tuple[int, int, str, str, str, bytes]]:
    """Messages written by our store: (queue id, queue offset, uniq key, keys, tags, body)."""
    expected = []
    with MessageStore(store_config(root)) as store:
        for i in range(COUNT):
            qid = i % 4
            uniq = f"7F000001{i:024X}"
            keys, tags = f"ours-{i} mine-{i % 5}", f"Tag{i % 3}"
            body = (f"ours {i} " * (60 + i % 50)).encode()
            msg = MessageRecord(
                topic="StoreCompatOurs", queue_id=qid, body=body, born_timestamp=int(time.time() * 1000),
                born_host=b"\x7f\x00\x00\x01", born_port=40000, store_host=b"\x7f\x00\x00\x01",
                store_port=store_port,
                properties=encode_properties({KEYS: keys, UNIQ_KEY: uniq, TAGS: tags, "WAIT": "true"}),
            )  # fmt: skip
            result = store.put_message(msg)
            assert result.ok, result
            expected.append((qid, msg.queue_offset, uniq, keys, tags, body))
        batch = [
            MessageRecord(
                topic="StoreCompatOurs", queue_id=1, body=f"batch {j}".encode(),
                store_host=b"\x7f\x00\x00\x01", store_port=store_port,
                properties=encode_properties({KEYS: f"batch-{j}", UNIQ_KEY: batch_id(j), TAGS: "TagB"}),
            )
            for j in range(3)
        ]  # fmt: skip
        assert store.put_messages(batch).ok
        for j, m in enumerate(batch):
            expected.append((1, m.queue_offset, batch_id(j), f"batch-{j}", "TagB", m.body))
        assert len(store.commit_log.queue.files) >= 2
        topics = {"StoreCompatOurs": topic_config_entry("StoreCompatOurs", 4, 4)}
        store.config_files.persist(
            TOPICS_JSON, {"dataVersion": data_version(1, int(time.time() * 1000)), "topicConfigTable": topics}
        )
    return expected


def test_real_broker_serves_our_store(servers: ReferenceServers, scenario: Path) -> None:
    expected = write_our_store(servers.store, servers.broker_port)
    servers.start_broker()
    servers.wait_registered()
    got = run_scenario(
        scenario, servers.workdir, "consume", servers.namesrv_addr, "StoreCompatOurs", str(len(expected))
    )
    received = {(int(r[1]), int(r[2])): r for r in got}
    assert len(got) == len(expected) == len(received)
    for qid, qoffset, uniq, keys, tags, body in expected:
        _r, _q, _o, msg_id, r_keys, r_tags, r_len, r_body = received[(qid, qoffset)]
        assert (msg_id, r_keys, r_tags, int(r_len), r_body) == (uniq, keys, tags, len(body), body.decode())
    queried = run_scenario(
        scenario, servers.workdir, "query", servers.namesrv_addr, "StoreCompatOurs",
        "ours-7", "mine-3", "batch-2",
    )  # fmt: skip
    counts = {q[1]: int(q[2]) for q in queried}
    assert counts == {"ours-7": 1, "mine-3": min(32, COUNT // 5), "batch-2": 1}, queried
    assert queried[0][3] == f"{7 % 4}:{7 // 4}"
    servers.stop_broker()
    with MessageStore(store_config(servers.store)) as store:
        assert store.last_exit_ok
        for qid, qoffset, _u, _k, _t, body in expected:
            record = decode_record(store.get_message("StoreCompatOurs", qid, qoffset, 1).buffers[0])
            assert record.body == body
