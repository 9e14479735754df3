"""A Spring Boot 3 application with ``rocketmq-spring-boot-starter`` 2.3.5 (``compat_tests/spring``,
built by ``scripts/setup-spring.sh``) against our broker AND the real Apache RocketMQ 5.3.3 broker,
with identical assertions.

One Spring context per target runs every case: ``RocketMQTemplate`` syncSend, asyncSend,
sendOneWay, a batch syncSend of a List, syncSendOrderly, sendAndReceive answered by a
``RocketMQReplyListener``, and a transactional send left UNKNOWN by its
``RocketMQLocalTransactionListener`` and committed by the broker's check-back; and
``@RocketMQMessageListener`` beans with a TAG selector, a SQL92 selector
(``enablePropertyFilter=true``), ORDERLY consumption and BROADCASTING.
"""

from __future__ import annotations

import subprocess
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.mqadmin_batch import mqadmin_batch
from compat_tests.scenario import TEST_JVM_OPTIONS, Event, java_env, of, parse_events
from compat_tests.targets import Target, start_target
from compat_tests.test_admin_compat import broker_addr

pytestmark = [pytest.mark.compat, pytest.mark.slow]

TARGETS = ("gateway", "reference")
SPRING_DIR = Path(__file__).resolve().parent / "spring"
# transactionOpBatchInterval: the real broker writes ended transactions' op records every 3 s by
# default and checks them again until then; 200 ms leaves the check-back one commit.
CONF = {
    "enablePropertyFilter": "true",
    "transactionTimeOut": "6000",
    "transactionCheckInterval": "5000",
    "transactionOpBatchInterval": "200",
}
TOPICS = ("SpTag", "SpSql", "SpOrder", "SpBroad", "SpTx", "SpReply")
SCENARIO_S = 90.0


def spring_argv(target: Target, home: Path) -> list[str]:
    classes, lib = SPRING_DIR / "target" / "classes", SPRING_DIR / "target" / "lib"
    if not (classes / "rmqspring" / "SpringScenario.class").is_file():
        raise FileNotFoundError(f"{classes}: not compiled; run scripts/setup-spring.sh")
    return [
        "java", "-Xmx256m", *TEST_JVM_OPTIONS, f"-Duser.home={home}",
        f"-Drocketmq.client.logRoot={home / 'logs'}", f"-Dscenario.timeout={SCENARIO_S:g}",
        "-cp", f"{classes}:{lib}/*", "rmqspring.SpringScenario",
        f"--rocketmq.name-server={target.namesrv_addr}", "--rocketmq.producer.group=springPG",
        "--spring.main.banner-mode=off", "--logging.level.root=WARN",
    ]  # fmt: skip


def run_app(target: Target, home: Path) -> list[Event]:
    """Create the topics (8 queues each) and run the application once; its events."""
    home.mkdir(parents=True, exist_ok=True)
    addr = broker_addr(target)
    updates = {t: ["updateTopic", "-b", addr, "-t", t, "-r", "8", "-w", "8"] for t in TOPICS}
    made = mqadmin_batch(target.namesrv_addr, updates, home)
    assert all("success" in out for out in made.values()), made
    result = subprocess.run(
        spring_argv(target, home),
        stdout=subprocess.PIPE,
        stderr=(home / "spring.stderr").open("wb"),
        env=java_env(),
        timeout=SCENARIO_S + 60,
        check=False,
    )
    (home / "spring.stdout").write_bytes(result.stdout)
    events = parse_events(result.stdout.decode("utf-8", errors="replace"))
    assert result.returncode == 0, (events[-5:], (home / "spring.stderr").read_text()[-3000:])
    return events


@pytest.fixture(scope="module", params=TARGETS)
def events(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Event]]:
    name: str = request.param
    target = start_target(name, tmp_path_factory.mktemp(name), CONF)
    try:
        yield run_app(target, tmp_path_factory.mktemp(f"spring-{name}"))
    finally:
        target.discard()


def received(events: list[Event], listener: str) -> list[str]:
    return [e["body"] for e in of(events, "received") if e["listener"] == listener]


def test_every_case_completes(events: list[Event]) -> None:
    """Every send succeeds and every listener gets what it should within the scenario's time."""
    assert not of(events, "error"), events[-5:]
    assert not of(events, "send_error"), events[-5:]
    statuses = {e["status"] for e in of(events, "sent") if e["case"] not in ("oneway", "tx")}
    assert statuses == {"SEND_OK"}
    assert [e["complete"] for e in of(events, "done")] == [True]


def test_tag_selector_gets_sync_async_oneway_and_batch(events: list[Event]) -> None:
    """``TagA || TagC``: the sync, async, oneway and batch sends of TagA and the TagC one, not TagB."""
    want = ["async", "batch-0", "batch-1", "batch-2", "oneway", "sync-a", "sync-c"]
    assert sorted(received(events, "tag")) == want


def test_sql92_selector(events: list[Event]) -> None:
    """``k IS NOT NULL AND k > 2`` over k = 1..4 and a message without k."""
    assert sorted(received(events, "sql")) == ["sql-3", "sql-4"]


def test_orderly_listener_sees_each_hash_key_in_order(events: list[Event]) -> None:
    """syncSendOrderly puts each hash key on one queue; the ORDERLY listener sees each key's
    messages in send order."""
    per_key: dict[str, list[str]] = defaultdict(list)
    for body in received(events, "orderly"):
        per_key[body.split("-")[0]].append(body)
    assert per_key == {"o0": ["o0-0", "o0-2", "o0-4"], "o1": ["o1-1", "o1-3", "o1-5"]}
    queues = {e["queueId"] for e in of(events, "sent") if e["case"] == "orderly"}
    assert len(queues) <= 2


def test_broadcasting_listener(events: list[Event]) -> None:
    assert sorted(received(events, "broadcast")) == ["broadcast-0", "broadcast-1"]


def test_send_and_receive_through_the_reply_listener(events: list[Event]) -> None:
    """sendAndReceive (callback form) reaches the ``RocketMQReplyListener`` and its answer comes back."""
    assert received(events, "reply") == ["ping"]
    assert [e["body"] for e in of(events, "reply")] == ["pong:ping"]


def test_unknown_transaction_is_committed_by_the_check_back(events: list[Event]) -> None:
    """The local transaction answers UNKNOWN; the broker checks back, the listener commits, and
    the message is delivered once."""
    [tx] = [e for e in of(events, "sent") if e["case"] == "tx"]
    assert (tx["status"], tx["localTransactionState"]) == ("SEND_OK", "UNKNOW")
    assert len(of(events, "check")) >= 1
    assert received(events, "tx") == ["tx"]
