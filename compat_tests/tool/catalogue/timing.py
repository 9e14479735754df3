"""Messages whose delivery waits: delay levels (``Message.setDelayTimeLevel``), 5.x timer messages
(``setDeliverTimeMs``), transactions with the broker's check-back
(``rmqcompat.TransactionScenario``) and request/reply (``rmqcompat.RequestReplyScenario``)."""

from __future__ import annotations

from compat_tests.tool.catalogue.common import consume, per_line, produce
from compat_tests.tool.clients import remoting
from compat_tests.tool.model import JAVA_533, Context, Scenario, check

LEVEL_2_MS = 5000  # messageDelayLevel "1s 5s 10s ..."
TIMER_MS = 3000
CLOCK_SLACK_MS = 5


def delay_level(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group()
    [sent] = produce(ctx, client, topic, 1, delay_level=2, tags="Late")
    [got] = consume(ctx, client, topic, group, 1)[:1]
    check(got["msgId"] == sent["msgId"], "another message arrived")
    waited = got["storeTimestamp"] - got["bornTimestamp"]
    check(waited >= LEVEL_2_MS - CLOCK_SLACK_MS, f"level 2 (5 s) delivered after {waited} ms")


def timer(ctx: Context, client: str) -> None:
    topic, group, cgroup = ctx.topic(), ctx.name("P"), ctx.group()
    args = {"topic": topic, "group": group, "cgroup": cgroup, "delay_ms": TIMER_MS}
    result = remoting(ctx, client, "timer", "rmqcompat.RequestReplyScenario", **args).require_ok("timer")
    [sent] = result.of("sent")[:1] or [{}]
    check(sent.get("status") == "SEND_OK", f"timer send: {sent.get('status')}")
    timed = [r for r in result.of("received") if r.get("body") == "timed"]
    check(bool(timed), "the timer message never arrived")
    early = sent["deliverMs"] - timed[0]["arrivedMs"]
    check(early <= CLOCK_SLACK_MS, f"delivered {early} ms before its time")


def transaction(ctx: Context, client: str) -> None:
    topic, cgroup = ctx.topic(), ctx.group()
    args = {"topic": topic, "group": ctx.name("P"), "cgroup": cgroup, "count": 4, "settle_ms": 2000}
    result = remoting(ctx, client, "tx", "rmqcompat.TransactionScenario", **args).require_ok(
        "transaction producer"
    )
    [done] = result.of("done")[-1:] or [{}]
    received = sorted(int(i) for i in done.get("received", {}))
    checks = done.get("checks", {})
    check(received == [0, 2], f"committed 0 and 2 (2 at its check-back); consumer got {received}")
    check(all(checks.get(str(i), 0) >= 1 for i in (2, 3)), f"the broker did not check back: {checks}")
    check(checks.get("0", 0) == 0 and checks.get("1", 0) == 0, f"ended transactions were checked: {checks}")


def request_reply(ctx: Context, client: str) -> None:
    topic, cgroup = ctx.topic(), ctx.group()
    # The callback form: the 5.3.3 client's synchronous request() gives up as soon as the request
    # is sent, on any broker; the callback form waits for the reply on both lines.
    args = {"topic": topic, "group": ctx.name("P"), "cgroup": cgroup, "count": 2, "mode": "callback"}
    result = remoting(ctx, client, "reply", "rmqcompat.RequestReplyScenario", **args).require_ok(
        "request/reply"
    )
    replies = sorted(int(r["i"]) for r in result.of("reply"))
    check(replies == [0, 1], f"replies to requests {replies} of [0, 1]")


def scenarios() -> list[Scenario]:
    return [
        *per_line("delay", "delay level", {"delay"}, "level 2 waits 5 s", delay_level),
        *per_line("timer", "timer", {"delay", "timer"}, "deliver-time 3 s ahead", timer, clients=(JAVA_533,)),
        *per_line("tx", "transaction", {"transaction"}, "commit, rollback, check-back", transaction),
        *per_line("reply", "request/reply", {"reply"}, "two requests answered", request_reply),
    ]
