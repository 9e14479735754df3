"""Broker-level faults of a running gateway, for tests: a full disk, a broker taken out of the
NameServer's routes, a group's messages delivered again. The control endpoint
(:mod:`gateway.control.api`) and :class:`gateway.testing.inprocess.InProcessGateway` reach them
through :attr:`gateway.launcher.Gateway.broker_faults`; every call runs in the servers' Trio
thread. ``POST /reset`` undoes the first two (:meth:`BrokerFaults.clear`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.app import BrokerApp
from namesrv.app import NamesrvApp

logger = logging.getLogger(__name__)


class BrokerFaults:
    """The faults over the gateway's broker and NameServer (None: not in this process)."""

    def __init__(
        self, broker_of: Callable[[], BrokerApp | None], namesrv_of: Callable[[], NamesrvApp | None]
    ) -> None:
        self.broker_of = broker_of
        self.namesrv_of = namesrv_of

    def rewind(self, group: str, topic: str, count: int = 1) -> dict[int, int]:
        """Deliver ``group``'s last ``count`` messages of each queue of ``topic`` again
        (:func:`broker.service.rewind.rewind`), live remoting consumers told with
        RESET_CONSUMER_CLIENT_OFFSET; the new offsets. Raises ``RewindError`` without a broker,
        for an unknown topic or a group without offsets there."""
        from broker.processors.client_ops import reset_notifier
        from broker.service.rewind import RewindError, rewind

        broker_app = self.broker_of()
        if broker_app is None:
            raise RewindError("no broker in this process")
        broker = broker_app.broker
        controller = broker.controller
        return rewind(controller, broker.services.consume, group, topic, count, reset_notifier(controller))

    def withhold_route(self, broker_name: str, on: bool | None = None) -> list[str]:
        """Take the broker named ``broker_name`` out of the NameServer's topic routes and cluster
        info (``on``), or put it back (``on=False``); it stays registered, so re-registrations do
        not bring it back. Returns the broker names withheld now; [] without a NameServer."""
        namesrv = self.namesrv_of()
        if namesrv is None:
            return []
        withheld = namesrv.routes.withheld
        if on is True and broker_name not in withheld:
            withheld.add(broker_name)
            logger.info("broker %s taken out of the routes (injected)", broker_name)
        elif on is False and broker_name in withheld:
            withheld.discard(broker_name)
            logger.info("broker %s put back into the routes", broker_name)
        return sorted(withheld)

    def disk_full(self, on: bool | None = None) -> bool:
        """Whether the broker refuses writes as on a full disk (``SERVICE_NOT_AVAILABLE`` with the
        broker's "disk is full" remark, INTERNAL_SERVER_ERROR over gRPC, as the Proxy relays it);
        ``on`` sets it first. Returns the state before; False without a broker."""
        broker_app = self.broker_of()
        if broker_app is None:
            return False
        store = broker_app.controller.store
        before = store.disk_full_injected
        if on is not None and on != before:
            store.disk_full_injected = on
            logger.info("disk full %s (injected)", "on" if on else "off")
        return before

    def clear(self) -> dict[str, int]:
        """Turn a full disk off and put withheld brokers back; what went, by kind (for reset)."""
        removed: dict[str, int] = {}
        if self.disk_full(False):
            removed["diskFull"] = 1
        withheld = self.withhold_route("", None)
        for name in withheld:
            self.withhold_route(name, False)
        if withheld:
            removed["withheldRoutes"] = len(withheld)
        return removed
