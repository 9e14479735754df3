"""Server-side filtering: tag subscriptions (``subscribe(topic, "TagB")``) and SQL92 selectors
(``MessageSelector.bySql``, ``rmqcompat.FilterScenario``). A broker without property filtering
(``enablePropertyFilter=false``, the default of Apache RocketMQ) refuses the SQL92 subscription
when the consumer starts, with "The broker does not support consumer to filter message by SQL92":
that row is then "unsupported" with the broker's remark."""

from __future__ import annotations

from compat_tests.tool.catalogue.common import consume, per_line, produce
from compat_tests.tool.clients import remoting
from compat_tests.tool.model import Context, Scenario, Unsupported, check

FILTER = "rmqcompat.FilterScenario"
MESSAGES = "TagA|a=1;TagB|a=2;TagA|a=3;TagB|a=4"  # bodies m0..m3


def tag_filter(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group()
    sent = produce(ctx, client, topic, 6, tags="TagA,TagB")
    wanted = sorted(s["msgId"] for s in sent if s["tags"] == "TagB")
    received = consume(ctx, client, topic, group, len(wanted), subscription="TagB")
    check(all(r["tags"] == "TagB" for r in received), "a TagA message reached the TagB subscription")
    check(sorted({r["msgId"] for r in received}) == wanted, "TagB messages missing")


def sql92(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group()
    produced = remoting(ctx, client, "produce", FILTER, topic=topic, messages=MESSAGES).require_ok("producer")
    check(len(produced.of("sent")) == 4, f"sent {len(produced.of('sent'))} of 4")
    result = remoting(
        ctx, client, "consume", FILTER, topic=topic, sql0="a > 1", group0=group, expect0=3, settle_ms=1500
    )
    refused = result.of("start_error")
    if refused:
        raise Unsupported(str(refused[0].get("remark") or refused[0].get("error")))
    bodies = sorted({str(r["body"]) for r in result.require_ok("SQL92 consumer").of("received")})
    check(bodies == ["m1", "m2", "m3"], f"a > 1 selected {bodies}, not m1, m2, m3")


def scenarios() -> list[Scenario]:
    return [
        *per_line("tag", "tag filter", {"filter", "tag"}, "TagB subscription gets only TagB", tag_filter),
        *per_line("sql", "SQL92 filter", {"filter", "sql92"}, "a > 1 selects by user property", sql92),
    ]
