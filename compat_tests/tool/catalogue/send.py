"""Sending with the remoting clients (``DefaultMQProducer``): sync, async, oneway, batch, a large
compressed body, orderly sends through a ``MessageQueueSelector`` consumed orderly, and
broadcasting consumers. Each scenario sends a few messages to a topic of its own and checks that a
push consumer gets every one intact."""

from __future__ import annotations

from compat_tests.tool.catalogue.common import (
    LineBody,
    consume,
    per_line,
    produce,
    same_bodies,
    same_messages,
)
from compat_tests.tool.clients import start_remoting
from compat_tests.tool.model import Context, Scenario, check

COUNT = 4


def _send_mode(mode: str) -> LineBody:
    def body(ctx: Context, client: str) -> None:
        topic, group = ctx.topic(), ctx.group()
        sent = produce(ctx, client, topic, COUNT, mode=mode, tags="TagA", keys_prefix="k-", props="color:red")
        check(len(sent) == COUNT, f"{len(sent)} of {COUNT} sends reported")
        received = consume(ctx, client, topic, group, COUNT)
        if mode == "oneway":
            same_bodies(sent, received)
        else:
            same_messages(sent, received)
        check(all(r.get("props", {}).get("color") == "red" for r in received), "a user property was lost")

    return body


def batch(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group()
    sent = produce(ctx, client, topic, COUNT * 2, batch=COUNT, keys_prefix="b-")
    received = consume(ctx, client, topic, group, COUNT * 2)
    same_bodies(sent, received)


def big_body(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group()
    sent = produce(ctx, client, topic, 1, body_size=300_000, body_kind="pattern")
    received = consume(ctx, client, topic, group, 1)
    check(
        [(r.get("bodyLen"), r.get("bodySha1")) for r in received]
        == [(sent[0]["bodyLen"], sent[0]["bodySha1"])],
        "the 300 kB body (compressed by the client) arrived changed",
    )


def orderly(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group()
    sent = produce(ctx, client, topic, 20, selector_keys=2, keys_prefix="o-")
    received = consume(ctx, client, topic, group, 20, orderly=True)
    index = {s["msgId"]: s["i"] for s in sent}
    shard = {s["msgId"]: s["shardKey"] for s in sent}
    per_key: dict[str, list[int]] = {}
    for r in received:
        if r["msgId"] in index:
            per_key.setdefault(shard[r["msgId"]], []).append(index[r["msgId"]])
    for key, order in per_key.items():
        check(order == sorted(order), f"shard {key} consumed out of order: {order}")
    check(sum(len(v) for v in per_key.values()) >= 20, "messages missing")


def broadcast(ctx: Context, client: str) -> None:
    topic, group = ctx.topic(), ctx.group(broadcast=True)
    sent = produce(ctx, client, topic, COUNT)
    members = [
        start_remoting(
            ctx, client, "consume", group=group, topic=topic, expect=COUNT, model="broadcasting", instance=n
        )
        for n in ("a", "b")
    ]
    try:
        results = [m.finish(ctx.remaining()) for m in members]
    finally:
        for m in members:
            m.kill()
    for name, result in zip("ab", results, strict=True):
        same_messages(sent, result.require_ok(f"broadcast member {name}").of("received"))


def scenarios() -> list[Scenario]:
    return [
        *per_line(
            "sync", "send sync", {"send"}, "sync sends with tags, keys and a property", _send_mode("sync")
        ),
        *per_line("async", "send async", {"send"}, "async sends, callbacks all SEND_OK", _send_mode("async")),
        *per_line("oneway", "send oneway", {"send"}, "oneway sends all arrive", _send_mode("oneway")),
        *per_line("batch", "send batch", {"send", "batch"}, "two batches of four", batch),
        *per_line("big", "large body", {"send"}, "a 300 kB body, compressed by the client", big_body),
        *per_line("order", "orderly", {"order"}, "selector sends, consumed orderly per key", orderly),
        *per_line("bcast", "broadcast", {"broadcast"}, "two broadcasting members each get all", broadcast),
    ]
