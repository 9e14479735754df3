"""What record_golden runs against the reference servers, and which stored records it keeps.

The client side is ``golden_java/GoldenScenario.java`` (this recorder's own scenario program,
compiled against each real client line into ``compat_tests/.cache``), plus one raw Python send for
the empty body the Java clients refuse (:mod:`compat_tests.raw_client`). Every message carries
``KEYS = golden-<kind>-<line>`` so its record can be found in the commit log.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat_tests import raw_client

HERE = Path(__file__).resolve().parent
CLIENT_LIB = HERE / "java" / "target"  # lib-<line>/ resolved by scripts/setup-java.sh
CACHE = HERE / ".cache"
SOURCE = HERE / "golden_java" / "GoldenScenario.java"
MAIN_CLASS = "rmqgolden.GoldenScenario"
RAW_LINE = "python"
STEP_TIMEOUT_S = 120.0
BIG_BODY_LEN = 4 * 1024 * 1024
BIG_BODY_GENERATOR = "bytes(i % 251 for i in range(4194304))"
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
BROKER_EXTRA_CONF = (
    "transactionTimeOut=1000",  # ms before a half message may be checked (default 6000)
    "transactionCheckInterval=1000",  # ms between checks (default 30000)
)


@dataclass(frozen=True)
class Context:
    namesrv: str  # the NameServer proxy, as clients dial it
    broker_addr: tuple[str, int]  # the broker proxy (advertised brokerIP1 and port)
    broker_name: str
    serialize: str
    workdir: Path


def tag(line: str) -> str:
    return line.replace(".", "")


def topic(line: str) -> str:
    return f"Golden{tag(line)}"


def key(kind: str, line: str) -> str:
    return f"golden-{kind}-{line}"


def compile_scenarios(lines: tuple[str, ...]) -> None:
    """javac GoldenScenario.java against each client line (skipped when up to date)."""
    for line in lines:
        out = CACHE / f"golden-classes-{line}"
        stamp = out / ".source"
        source = SOURCE.read_text()
        if stamp.exists() and stamp.read_text() == source:
            continue
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["javac", "-nowarn", "-d", str(out), "-cp", f"{CLIENT_LIB / f'lib-{line}'}/*", str(SOURCE)],
            check=True,
            timeout=STEP_TIMEOUT_S,
            capture_output=True,
        )
        stamp.write_text(source)


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable[[Context, str], dict[str, Any]]


def java_step(command: str, topic_of: Callable[[str], str], group: str) -> Step:
    def run(ctx: Context, line: str) -> dict[str, Any]:
        home = ctx.workdir / f"client-{line}"
        home.mkdir(exist_ok=True)
        classes = CACHE / f"golden-classes-{line}"
        cmd = [
            "java",
            "-Xmx256m",
            f"-Drocketmq.serialize.type={ctx.serialize}",
            f"-Duser.home={home}",
            f"-Drocketmq.client.logRoot={home / 'logs'}",
            "-cp",
            f"{classes}{os.pathsep}{CLIENT_LIB / f'lib-{line}'}/*",
            MAIN_CLASS,
            command,
            ctx.namesrv,
            topic_of(line),
            f"golden_{group}_{tag(line)}",
            line,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=False)
        events = [_event(x) for x in proc.stdout.splitlines() if x.startswith('{"event"')]
        summary = "; ".join(f"{e['event']}: {e['detail']}" for e in events)
        return {
            "exit": proc.returncode,
            "events": events,
            "summary": summary,
            "stderr_tail": proc.stderr[-500:],
        }

    return Step(command, run)


def _event(text: str) -> dict[str, Any]:
    try:
        return dict(json.loads(text))
    except json.JSONDecodeError:
        return {"event": "unparsed", "detail": text}


def raw_empty_body(ctx: Context, line: str) -> dict[str, Any]:
    """The empty body two ways: SEND_MESSAGE_V2 (refused by the broker) and a one-entry batch."""
    single = raw_client.send_message_v2(
        ctx.broker_addr,
        group="golden_raw",
        topic=topic("5.3.3"),
        broker_name=ctx.broker_name,
        body=b"",
        properties=f"KEYS\x01{key('empty-single', RAW_LINE)}\x02WAIT\x01true\x02TAGS\x01TagE\x02",
    )
    entry = raw_client.batch_entry(
        b"", f"KEYS\x01{key('empty', RAW_LINE)}\x02WAIT\x01true\x02TAGS\x01TagE\x02"
    )
    batch = raw_client.send_message_v2(
        ctx.broker_addr,
        group="golden_raw",
        topic=topic("5.3.3"),
        broker_name=ctx.broker_name,
        body=entry,
        properties="WAIT\x01true\x02",
        opaque=2,
        batch=True,
    )
    summary = f"single: code {single['code']} remark {single['remark']}; batch: code {batch['code']}"
    return {"summary": summary, "single": single, "batch": batch}


def plan(layout: str, lines: tuple[str, ...]) -> list[tuple[str, Step]]:
    """(line, step) in order for one layout."""
    if layout.startswith("ipv6"):
        return [(line, java_step("send-ipv6", topic, "producer")) for line in lines]
    steps: list[tuple[str, Step]] = []
    for line in lines:
        steps += [
            (line, java_step("send-basic", topic, "producer")),
            (line, java_step("send-big", lambda ln: f"GoldenBig{tag(ln)}", "big_producer")),
            (line, java_step("transaction", topic, "tx_producer")),
            (line, java_step("consume", topic, "push")),
            (line, java_step("orderly", topic, "orderly")),
            (line, java_step("litepull", topic, "lite")),
            (line, java_step("pull", topic, "pull")),
        ]
    steps.append((RAW_LINE, Step("raw-empty-body", raw_empty_body)))
    return steps


Record = tuple[bytes, dict[str, Any]]


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    find: Callable[[list[Record]], Record | None]
    extra: dict[str, Any] = field(default_factory=dict)


def _first(pred: Callable[[dict[str, Any]], bool]) -> Callable[[list[Record]], Record | None]:
    def find(records: list[Record]) -> Record | None:
        return next((r for r in records if pred(r[1])), None)

    return find


def _keyed(
    k: str, topic_name: str | None = None, tx: str | None = None
) -> Callable[[list[Record]], Record | None]:
    def pred(meta: dict[str, Any]) -> bool:
        keys = meta["properties_map"].get("KEYS", "").split(" ")
        return (
            k in keys
            and (topic_name is None or meta["topic"] == topic_name)
            and (tx is None or meta["transaction_type"] == tx)
        )

    return _first(pred)


def _op_of(k: str) -> Callable[[list[Record]], Record | None]:
    """The transaction op record whose body is the half message's queue offset."""

    def find(records: list[Record]) -> Record | None:
        half = _keyed(k, HALF_TOPIC)(records)
        if half is None:
            return None
        offset = str(half[1]["queue_offset"]).encode()
        return next((r for r in records if r[1]["topic"] == OP_TOPIC and r[0].find(offset) >= 0), None)

    return find


def record_targets(layout: str, lines: tuple[str, ...]) -> list[Target]:
    """The records to keep from one layout's commit log."""
    if layout == "ipv6-born":
        return [
            Target(
                "5.3.3-ipv6-born-host",
                "broker saw the producer over IPv6 (::1)",
                _keyed(key("ipv6", "5.3.3")),
            )
        ]
    if layout == "ipv6-store":
        return [
            Target("5.3.3-ipv6-store-host", "brokerIP1 = ::1: IPv6 store host", _keyed(key("ipv6", "5.3.3")))
        ]
    if layout != "JSON":
        return []
    targets: list[Target] = []
    for line in lines:
        t, retry = topic(line), f"%RETRY%golden_push_{tag(line)}"
        targets += [
            Target(f"{line}-ascii", "ASCII body, tag and key", _keyed(key("ascii", line), t)),
            Target(
                f"{line}-chinese", "Chinese body, tag, key and user property", _keyed(key("chinese", line), t)
            ),
            Target(
                f"{line}-compressed",
                "body > 4 KiB compressed by the client (zlib)",
                _keyed(key("compressed", line)),
            ),
            Target(
                f"{line}-big-4MiB",
                "4 MiB body (the default maxMessageSize), client compression off",
                _keyed(key("big", line)),
                {"body_generator": BIG_BODY_GENERATOR, "body_generator_len": BIG_BODY_LEN},
            ),
            Target(f"{line}-batch-0", "first entry of a 3-message batch", _keyed(key("batch0", line))),
            Target(f"{line}-batch-1", "second entry of the batch", _keyed(key("batch1", line))),
            Target(f"{line}-tx-half", "transaction half message", _keyed(key("txcommit", line), HALF_TOPIC)),
            Target(
                f"{line}-tx-committed",
                "message written by the commit",
                _keyed(key("txcommit", line), t, "COMMIT_TYPE"),
            ),
            Target(f"{line}-tx-rollback-op", "op record of a rollback", _op_of(key("txrollback", line))),
            Target(
                f"{line}-tx-checked-committed",
                "committed after CHECK_TRANSACTION_STATE",
                _keyed(key("txcheck", line), t, "COMMIT_TYPE"),
            ),
            Target(
                f"{line}-retry-original",
                "message consumed with RECONSUME_LATER",
                _keyed(key("retry", line), t),
            ),
            Target(
                f"{line}-retry-scheduled",
                "CONSUMER_SEND_MSG_BACK result parked in the delay topic",
                _keyed(key("retry", line), SCHEDULE_TOPIC),
            ),
            Target(
                f"{line}-retry-delivered",
                "redelivered into the retry topic",
                _keyed(key("retry", line), retry),
            ),
        ]
    targets.append(
        Target(
            "python-empty-body",
            "empty body (sent raw: Java clients refuse it)",
            _keyed(key("empty", RAW_LINE)),
        )
    )
    return targets
