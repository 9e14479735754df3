"""NOTIFY_UNSUBSCRIBE_LITE (200073) as raw remoting frames, for compat_tests/test_grpc55_compat.py:
two connections play two cluster-mode Proxies, each sending LITE_SUBSCRIPTION_CTL for its client
of an exclusive lite group (``lite.sub.model=Exclusive``); the second one's PARTIAL_ADD of the
same lite topic makes the broker tell the first client, on the first connection, that it lost
it (``LiteSubscriptionRegistryImpl.excludeClientByLmqName``, ``Broker2Client.notifyUnsubscribeLite``).
"""

from __future__ import annotations

from typing import Any

import trio

from codec.codes import RequestCode
from codec.command import RemotingCommand
from codec.headers.lite import NotifyUnsubscribeLiteRequestHeader
from compat_tests.lite55_admin import PARENT, ctl_request
from gateway.transport.client import connect
from gateway.transport.dispatch import Dispatcher, RequestContext

SOLO_GROUP = "LiteSoloGroup"  # bound to PARENT, lite.sub.model=Exclusive
SOLO_ATTRIBUTES = f"+lite.bind.topic={PARENT},+lite.sub.model=Exclusive"
NOTICE_TIMEOUT_S = 15.0  # the broker sends the notice while it answers the second PARTIAL_ADD


class Notices:
    """A connection's dispatcher that keeps each NOTIFY_UNSUBSCRIBE_LITE the broker sends."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, bool]] = []
        self.arrived = trio.Event()
        self.dispatcher = Dispatcher("lite-notify-check")
        self.dispatcher.register(
            RequestCode.NOTIFY_UNSUBSCRIBE_LITE, self.notice, NotifyUnsubscribeLiteRequestHeader
        )

    def notice(
        self, _ctx: RequestContext, request: RemotingCommand, header: NotifyUnsubscribeLiteRequestHeader
    ) -> None:
        self.seen.append((header.client_id, header.consumer_group, header.lite_topic, request.is_oneway))
        self.arrived.set()


def exclusive_takeover(broker_addr: str) -> dict[str, Any]:
    """Client solo-a subscribes to l7 and l8 over connection A, then solo-b to l7 over connection
    B: the answers' codes, and the notices each connection got (A's awaited)."""
    entry = {"group": SOLO_GROUP, "topic": PARENT, "version": 0, "action": "PARTIAL_ADD"}

    async def run() -> dict[str, Any]:
        first, second = Notices(), Notices()
        async with (
            connect(broker_addr, first.dispatcher) as conn_a,
            connect(broker_addr, second.dispatcher) as conn_b,
        ):
            add_a = await conn_a.invoke(
                ctl_request([{**entry, "clientId": "solo-a", "liteTopicSet": ["l7", "l8"]}]), 10
            )
            add_b = await conn_b.invoke(
                ctl_request([{**entry, "clientId": "solo-b", "liteTopicSet": ["l7"]}]), 10
            )
            with trio.move_on_after(NOTICE_TIMEOUT_S):
                await first.arrived.wait()
            return {
                "add a": add_a.code,
                "add b": add_b.code,
                "notices to a": first.seen,
                "notices to b": second.seen,
            }

    return trio.run(run)
