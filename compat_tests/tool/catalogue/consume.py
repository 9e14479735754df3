"""Consuming other than by push: ``DefaultMQPullConsumer`` from offset 0, ``DefaultLitePullConsumer``
subscribed and assigned with a seek (resetting where it reads), and the redelivery path of push
consumers: RECONSUME_LATER brings a message back through the group's retry topic, and past its
maximum the broker moves it to the group's dead-letter topic (``%DLQ%<group>``)."""

from __future__ import annotations

import time

from compat_tests.tool.catalogue.common import consume, per_line, produce, same_messages
from compat_tests.tool.clients import remoting, start_remoting
from compat_tests.tool.model import Context, NotRun, Scenario, check

COUNT = 8
SEEK = 2
QUEUES = 4


def pull(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group()
    sent = produce(ctx, client, topic, COUNT)
    result = remoting(ctx, client, "pull", group=group, topic=topic, expect=COUNT).require_ok("pull consumer")
    same_messages(sent, result.of("received"))


def lite_pull(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group()
    sent = produce(ctx, client, topic, COUNT)
    result = remoting(ctx, client, "litepull", group=group, topic=topic, expect=COUNT).require_ok("lite pull")
    same_messages(sent, result.of("received"))


def seek(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(queues=QUEUES), ctx.group()
    sent = produce(ctx, client, topic, COUNT * 2)
    wanted = {s["msgId"] for s in sent if s["queueOffset"] >= SEEK}
    args = {"group": group, "topic": topic, "mode": "assign", "seek": SEEK, "expect": len(wanted)}
    result = remoting(ctx, client, "litepull", **args).require_ok("lite pull with seek")
    got = {r["msgId"] for r in result.of("received")}
    check(got == wanted, f"after seek({SEEK}) got {len(got)} messages, {len(got - wanted)} from before it")


def retry(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group()
    [sent] = produce(ctx, client, topic, 1)
    received = consume(ctx, client, topic, group, 1, reconsume_later=1)
    times = [
        r["reconsumeTimes"]
        for r in received
        if r["uid"] == sent["offsetMsgId"] or r["msgId"] == sent["msgId"]
    ]
    check(times[:2] == [0, 1], f"deliveries by reconsumeTimes: {times} (expected [0, 1])")


def dead_letter(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group(retry_max=1)
    [sent] = produce(ctx, client, topic, 1)
    duration = int(max(10, ctx.remaining() - 30))
    args = {"group": group, "topic": topic, "duration": duration, "reconsume_later": 99, "max_reconsume": 1}
    failing = start_remoting(ctx, client, "consume", **args)
    try:
        dlq = f"%DLQ%{group}"
        ctx.topics.append(dlq)
        while not ctx.admin.routed(dlq):
            if ctx.remaining() < 40:
                raise NotRun(f"no route of {dlq} appeared (the message was never dead-lettered)")
            time.sleep(0.5)
        reader = ctx.group()
        [dead] = consume(ctx, client, dlq, reader, 1)[:1]
        check(dead.get("body") == sent.get("body"), "the dead letter's body differs from what was sent")
    finally:
        failing.kill()


def scenarios() -> list[Scenario]:
    return [
        *per_line("pull", "pull", {"pull"}, "DefaultMQPullConsumer from offset 0", pull),
        *per_line("lite", "lite pull", {"pull", "litepull"}, "DefaultLitePullConsumer subscribe", lite_pull),
        *per_line("seek", "offset reset", {"pull", "offset"}, "assign + seek skips earlier offsets", seek),
        *per_line("retry", "retry", {"retry"}, "RECONSUME_LATER redelivers once", retry),
        *per_line("dlq", "dead letter", {"retry", "dlq"}, "past max reconsume: %DLQ% topic", dead_letter),
    ]
