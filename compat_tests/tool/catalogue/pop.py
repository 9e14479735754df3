"""POP consumption (5.x): the group is switched to POP mode (``SET_MESSAGE_REQUEST_MODE``, as
``mqadmin setConsumeMode -m POP``), and a push consumer without client-side rebalancing
(``rmqcompat.PopScenario``) pops every message; one answered RECONSUME_LATER comes back once
through the POP retry topic. The 4.9.8 client has no POP."""

from __future__ import annotations

from compat_tests.tool.catalogue.common import per_line, produce
from compat_tests.tool.clients import remoting
from compat_tests.tool.model import JAVA_533, Context, NotRun, Scenario, check

COUNT = 4


def pop(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group()
    ctx.topics.append(f"%RETRY%{group}_{topic}")  # the POP retry topic (KeyBuilder.buildPopRetryTopic)
    sent = produce(ctx, client, topic, COUNT)
    try:
        ctx.admin.set_pop_mode(topic, group)
    except Exception as err:
        raise NotRun(f"setup failed: set POP mode: {err}") from err
    args = {"topic": topic, "group": group, "expect": COUNT, "settle_ms": 1000, "reconsume_later": 1}
    result = remoting(ctx, client, "consume", "rmqcompat.PopScenario", **args).require_ok("POP consumer")
    received = result.of("received")
    check(
        {r["msgId"] for r in received} == {s["msgId"] for s in sent}, "popped messages differ from those sent"
    )
    again = [r for r in received if r.get("reconsumeTimes", 0) >= 1]
    check(len({r["msgId"] for r in again}) == COUNT, "answered RECONSUME_LATER, not every message came back")


def scenarios() -> list[Scenario]:
    return per_line(
        "pop", "POP", {"pop"}, "pop, change invisible time, pop again, ack", pop, clients=(JAVA_533,)
    )
