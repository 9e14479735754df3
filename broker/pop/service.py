"""POP's background work: the Trio loop that steps the revive service every ``reviveInterval``
(``PopReviveService.run``) and persists the orderly state.

:mod:`broker.app` builds it over the consume service's POP state (its checkpoint writer, in-flight
counts and orderly bookkeeping) and runs :meth:`PopService.run`; the POP processors are registered
there with the broker's other processors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from broker.controller import BrokerController
from broker.pop.order_info import CONSUMER_ORDER_INFO_JSON, ConsumerOrderInfoManager
from broker.pop.records import PopConfig
from broker.pop.revive import PopReviveService
from broker.pop.state import PopState
from broker.pop.writer import RecordWriter
from codec.errors import RocketMQError
from store.errors import StoreError

logger = logging.getLogger(__name__)


class PopService:
    """``timer_caught_up``: whether the timer, which delivers the revive records, is caught up."""

    def __init__(
        self,
        broker: BrokerController,
        config: PopConfig,
        writer: RecordWriter,
        state: PopState,
        orders: ConsumerOrderInfoManager,
        timer_caught_up: Callable[[int], bool] = lambda _now_ms: True,
    ) -> None:
        self.config = config
        self.orders = orders
        self.revive = PopReviveService(broker, config, writer, state, timer_caught_up)
        self.broker = broker

    async def run(self) -> None:
        """Revive rounds every ``reviveInterval`` ms until cancelled; the orderly state is persisted
        after each round that changed it, and when the loop ends."""
        self.revive.ensure_topic()
        try:
            while True:
                await trio.sleep(self.config.revive_interval_ms / 1000)
                if self.broker.stopping:
                    return
                try:
                    await self.revive.revive_round(self.broker.now_ms())
                except (RocketMQError, StoreError) as err:
                    logger.error("POP revive round failed: %s", err)
                self.persist_order_info()
        finally:
            self.persist_order_info()

    def persist_order_info(self) -> None:
        """The orderly state, when changed (:func:`broker.service.consume.order_info_table`)."""
        self.broker.tables.persist_if_dirty(CONSUMER_ORDER_INFO_JSON)
