"""What the remoting scenarios share: one producer run, one consumer run, the comparison of what
was sent with what arrived, and the two-client-line fan-out of a scenario body."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from compat_tests.tool.clients import remoting
from compat_tests.tool.model import JAVA_498, JAVA_533, Context, Failed, Scenario, check

Event = dict[str, Any]
LineBody = Callable[[Context, str], None]


def produce(ctx: Context, client: str, topic: str, count: int, **args: object) -> list[Event]:
    """Run ``Scenario produce``; every send must succeed (else :class:`Failed` with the error)."""
    result = remoting(ctx, client, "produce", topic=topic, count=count, **args).require_ok("producer")
    errors = result.of("send_error")
    check(not errors, f"send refused: {errors[0].get('error') if errors else ''}")
    return result.of("sent")


def consume(ctx: Context, client: str, topic: str, group: str, expect: int, **args: object) -> list[Event]:
    """Run ``Scenario consume`` until ``expect`` distinct messages were acknowledged."""
    result = remoting(ctx, client, "consume", group=group, topic=topic, expect=expect, **args)
    return result.require_ok(f"consumer of {expect}").of("received")


def fields(event: Event) -> tuple[Any, ...]:
    return (event.get("tags"), event.get("keys"), event.get("body"), event.get("bodySha1"))


def same_messages(sent: list[Event], received: list[Event]) -> None:
    """Every sent message arrived once at least, with its tags, keys and body intact."""
    by_id = {e["msgId"]: e for e in sent if e.get("msgId")}
    got = {e["msgId"]: e for e in received}
    missing = sorted(set(by_id) - set(got))
    check(not missing, f"{len(missing)} of {len(by_id)} sent messages never arrived")
    for msg_id, event in by_id.items():
        if fields(event) != fields(got[msg_id]):
            raise Failed(f"{msg_id} arrived changed: sent {fields(event)}, received {fields(got[msg_id])}")


def same_bodies(sent: Iterable[Event], received: Iterable[Event]) -> None:
    """The multiset of bodies sent equals the set received (oneway sends carry no message id)."""
    want = sorted(str(e.get("body")) for e in sent)
    got = sorted({str(e.get("body")) for e in received})
    check(want == got, f"bodies differ: sent {want[:3]}..., received {got[:3]}...")


def per_line(
    key: str,
    feature: str,
    tags: Iterable[str],
    description: str,
    body: LineBody,
    clients: tuple[str, ...] = (JAVA_498, JAVA_533),
) -> list[Scenario]:
    """One scenario per remoting client line; the 5.3.3 one is the feature's ``--quick`` pick."""

    def bind(client: str) -> Callable[[Context], None]:
        return lambda ctx: body(ctx, client)

    return [
        Scenario(
            key=f"{key}{client.replace('java-', '').replace('.', '')}",
            feature=feature,
            client=client,
            tags=frozenset({*tags, "remoting"}),
            body=bind(client),
            description=description,
            quick=client == clients[-1],
        )
        for client in clients
    ]
