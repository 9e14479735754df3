"""POP assembled for the broker: its processors registered and its revive loop.

``register_pop`` is the one call :mod:`broker.app` makes while building the dispatcher; the
returned :class:`PopService` has the Trio loop that steps the revive service every
``reviveInterval`` (``PopReviveService.run``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from broker.controller import BrokerController
from broker.pop.assignment import QueryAssignmentProcessor
from broker.pop.notification import NotificationProcessor
from broker.pop.order_info import CONSUMER_ORDER_INFO_JSON
from broker.pop.processor import PopProcessor
from broker.pop.records import PopConfig
from broker.pop.revive import PopReviveService
from codec.errors import RocketMQError
from gateway.transport.dispatch import Dispatcher
from store.errors import StoreError

logger = logging.getLogger(__name__)


class PopService:
    def __init__(
        self, broker: BrokerController, timer_caught_up: Callable[[int], bool] = lambda _now_ms: True
    ) -> None:
        self.config = PopConfig.of(broker.config)
        self.processor = PopProcessor(broker, self.config)
        self.revive = PopReviveService(
            broker, self.config, self.processor.writer, self.processor.state, timer_caught_up
        )
        self.assignment = QueryAssignmentProcessor(broker, self.config)
        processor = self.processor
        self.notification = NotificationProcessor(
            broker, self.config, processor.state, processor.polling, processor.orders
        )
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
        orders = self.processor.orders
        if not orders.dirty:
            return
        orders.dirty = False
        broker = self.broker

        def exists(topic: str, group: str, queue_id: int) -> bool:
            config = broker.topics.select(topic)
            found = config is not None and queue_id < config.read_queue_nums
            return found and broker.groups.find(group, create=False) is not None

        try:
            broker.store.config_files.persist(CONSUMER_ORDER_INFO_JSON, orders.to_obj(exists))
        except StoreError as err:
            logger.error("could not persist %s: %s", CONSUMER_ORDER_INFO_JSON, err)


def register_pop(
    broker: BrokerController,
    dispatcher: Dispatcher,
    timer_caught_up: Callable[[int], bool] = lambda _now_ms: True,
) -> PopService:
    """Register the POP request codes on ``dispatcher``; the service whose ``run`` revives.
    ``timer_caught_up``: whether the timer, which delivers the revive records, is caught up."""
    service = PopService(broker, timer_caught_up)
    service.revive.ensure_topic()
    service.processor.register(dispatcher)
    service.assignment.register(dispatcher)
    service.notification.register(dispatcher)
    return service
