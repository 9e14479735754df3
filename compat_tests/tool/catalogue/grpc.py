"""The RocketMQ 5 gRPC clients against ``--grpc``: rocketmq-client-java 5.0.8 (``rmqgrpc.*``:
send, SimpleConsumer receive and ack, PushConsumer, FIFO message groups, transactions with the
check-back, recall of a timer message), rocketmq-python-client (send, receive) and the Go client
rocketmq-clients/golang/v5 (send with tag, keys and a property; receive, ack). Without an
endpoint every row is "not run: no endpoint". Topics get the ``message.type`` attribute the 5.x
proxy checks (FIFO, TRANSACTION, DELAY)."""

from __future__ import annotations

from collections.abc import Callable

from compat_tests.tool.clients import grpc_go, grpc_java, grpc_python
from compat_tests.tool.model import (
    GO_GRPC,
    JAVA_GRPC,
    PYTHON_GRPC,
    Context,
    Failed,
    Scenario,
    Unsupported,
    check,
)
from compat_tests.tool.process import Finished

COUNT = 3
RECALL_DELAY_MS = "8000"


def _tls(ctx: Context) -> str:
    return str(ctx.target.tls).lower()


def _seconds(ctx: Context) -> str:
    return str(int(max(5, ctx.remaining() - 25)))


def _sent(result_lines: list[list[str]], count: int, failed: list[list[str]]) -> None:
    check(len(result_lines) == count, f"{len(result_lines)} of {count} sends succeeded: {failed[:1]}")


def java_send_receive(ctx: Context, mode: str = "simple") -> None:
    topic, group = ctx.topic(), ctx.group()
    produced = grpc_java(ctx, "Produce", _tls(ctx), topic, str(COUNT)).require_ok("gRPC producer")
    _sent(produced.lines("SENT"), COUNT, produced.lines("FAILED") + produced.lines("START_FAILED"))
    consumed = grpc_java(ctx, "Consume", mode, topic, group, str(COUNT), _seconds(ctx)).require_ok(
        "gRPC consumer"
    )
    bodies = sorted({line[1] for line in consumed.lines("RECEIVED")})
    check(
        bodies == [f"grpc_message_{i}_中文" for i in range(COUNT)],
        f"received {bodies} {consumed.lines('FAILED')[:1]}",
    )


def java_fifo(ctx: Context) -> None:
    topic, group = ctx.topic(attributes="+message.type=FIFO"), ctx.group(orderly=True)
    produced = grpc_java(ctx, "Produce", _tls(ctx), topic, str(COUNT), "group=g1").require_ok("FIFO producer")
    _sent(produced.lines("SENT"), COUNT, produced.lines("FAILED"))
    consumed = grpc_java(ctx, "Consume", "simple", topic, group, str(COUNT), _seconds(ctx)).require_ok(
        "consumer"
    )
    order = [line[1] for line in consumed.lines("RECEIVED")]
    check(order[:COUNT] == [f"grpc_message_{i}_中文" for i in range(COUNT)], f"message group order: {order}")


def java_transaction(ctx: Context) -> None:
    topic = ctx.topic(attributes="+message.type=TRANSACTION")
    result = grpc_java(ctx, "Transact", _tls(ctx), topic, _seconds(ctx)).require_ok("transaction producer")
    ended = sorted(line[1] for line in result.lines("ENDED"))
    check(ended == ["commit", "rollback"], f"ended {ended}; {result.lines('FAILED')[:1]}")
    check(bool(result.lines("CHECKED")), "the open transaction was never checked back")


def java_recall(ctx: Context) -> None:
    topic = ctx.topic(attributes="+message.type=DELAY")
    result = grpc_java(ctx, "Recall", topic, RECALL_DELAY_MS).require_ok("recall producer")
    failed = [line for line in result.lines("RECALL_FAILED") if line[1] == "recalled"]
    if failed and "forbidden" in " ".join(failed[0]):
        raise Unsupported(" ".join(failed[0][2:]))
    recalled = [line[1] for line in result.lines("RECALLED")]
    check(recalled[:1] == ["recalled"], f"recall of a pending timer message: {failed[:1] or recalled}")


def python_send_receive(ctx: Context) -> None:
    topic, group = ctx.topic(), ctx.group()
    produced = grpc_python(ctx, "grpc_python_producer", topic, str(COUNT)).require_ok("Python producer")
    _sent(produced.lines("SENT"), COUNT, produced.lines("FAILED") + produced.lines("START_FAILED"))
    consumed = grpc_python(ctx, "grpc_python_consumer", topic, group, str(COUNT), _seconds(ctx)).require_ok(
        "consumer"
    )
    bodies = sorted({line[1] for line in consumed.lines("RECEIVED")})
    check(bodies == [f"python_grpc_message_{i}_中文" for i in range(COUNT)], f"received {bodies}")


def _go_events(result: Finished, what: str) -> None:
    """The Go program exits 0 whatever its client met: its ``*_failed`` events say what."""
    result.require_ok(what)
    failures = [e for e in result.events() if str(e.get("event", "")).endswith("_failed")]
    if failures:
        raise Failed(f"{what}: {failures[0].get('event')}: {failures[0].get('error')}")
    check(result.of("done") != [], f"{what} did not finish: {result.error()}")


def go_expected(i: int, message_id: str) -> dict[str, object]:
    """What the Go consumer must see of the Go producer's message ``i`` (``grpc_go/main.go``)."""
    return {
        "id": message_id,
        "body": f"go grpc message {i} 中文",
        "tag": "TagG",
        "keys": [f"gkey-{i}", f"gkey-{i}-b"],
        "props": {"index": str(i)},
    }


def go_send_receive(ctx: Context) -> None:
    topic, group = ctx.topic(), ctx.group()
    produced = grpc_go(ctx, "produce", topic=topic, count=COUNT)
    _go_events(produced, "Go producer")
    sent = {int(e["i"]): str(e["id"]) for e in produced.of("sent")}
    check(len(sent) == COUNT, f"{len(sent)} of {COUNT} sends succeeded")
    consumed = grpc_go(
        ctx, "consume", topic=topic, group=group, count=COUNT, change="false", timeout=f"{_seconds(ctx)}s"
    )
    _go_events(consumed, "Go consumer")
    views = [{k: e.get(k) for k in ("id", "body", "tag", "keys", "props")} for e in consumed.of("received")]
    expected = [go_expected(i, message_id) for i, message_id in sorted(sent.items())]
    missing, other = [e for e in expected if e not in views], [v for v in views if v not in expected]
    check(not missing and not other, f"{len(missing)} of {COUNT} arrived changed or not at all: {other[:1]}")
    acked = sorted(str(e["id"]) for e in consumed.of("acked"))
    check(acked == sorted(sent.values()), f"acknowledged {len(acked)} of {COUNT}")
    check(consumed.of("empty") != [], "a receive after the acknowledgements still found messages")


def _one(
    key: str, feature: str, client: str, tags: set[str], body: Callable[[Context], None], text: str
) -> Scenario:
    return Scenario(key, feature, client, frozenset({*tags, "grpc"}), body, text, quick=True)


def scenarios() -> list[Scenario]:
    return [
        _one(
            "gsend", "gRPC send/receive", JAVA_GRPC, {"send"}, java_send_receive, "send, SimpleConsumer ack"
        ),
        _one(
            "gpush", "gRPC push", JAVA_GRPC, set(), lambda ctx: java_send_receive(ctx, "push"), "PushConsumer"
        ),
        _one("gfifo", "gRPC FIFO", JAVA_GRPC, {"order"}, java_fifo, "one message group, in order"),
        _one(
            "gtx", "gRPC transaction", JAVA_GRPC, {"transaction"}, java_transaction, "commit, rollback, check"
        ),
        _one("grecall", "gRPC recall", JAVA_GRPC, {"delay"}, java_recall, "recall a pending timer message"),
        Scenario(
            "psend",
            "gRPC send/receive",
            PYTHON_GRPC,
            frozenset({"send", "grpc"}),
            python_send_receive,
            "Python producer and SimpleConsumer",
        ),
        Scenario(
            "gosend",
            "gRPC send/receive",
            GO_GRPC,
            frozenset({"send", "grpc"}),
            go_send_receive,
            "Go producer (tag, keys, property) and SimpleConsumer ack",
        ),
    ]
