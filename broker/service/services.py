"""The typed operations of one broker, built once by :mod:`broker.app` and shared by both front
doors (the remoting processors and the gRPC activities), so that, for instance, a gRPC consumer
and a remoting POP consumer of one group share one POP state."""

from __future__ import annotations

from broker.controller import BrokerController
from broker.lite import LiteSubscriptionRegistry
from broker.lite_lifecycle import LiteLifecycleManager
from broker.pop.records import PopConfig
from broker.service.consume import ConsumeService
from broker.service.end_transaction import EndTransactionService
from broker.service.lite_pop import LitePopService
from broker.service.recall import RecallService
from broker.service.send import SendService
from broker.service.send_back import SendBackService


class BrokerServices:
    """One of each service over ``broker``; ``pop`` configures the consume service."""

    __slots__ = (
        "consume",
        "end_transaction",
        "lite",
        "lite_lifecycle",
        "lite_pop",
        "recall",
        "send",
        "send_back",
    )

    def __init__(self, broker: BrokerController, pop: PopConfig) -> None:
        self.send = SendService(broker)
        self.recall = RecallService(broker)
        self.end_transaction = EndTransactionService(broker)
        self.consume = ConsumeService(broker, pop)
        self.send_back = SendBackService(broker)
        #: The lite subscriptions (gRPC SyncLiteSubscription changes them, the lite admin reads them).
        self.lite = LiteSubscriptionRegistry()
        #: Lite topic expiry, and PARTIAL_ADD / PARTIAL_REMOVE with the group's settings (offset
        #: option, exclusive takeover, offset resets) for both doors.
        self.lite_lifecycle = LiteLifecycleManager(broker, self.lite, self.consume.orders, self.consume.state)
        #: The lite consumers' pop (gRPC ReceiveMessage and POP_LITE_MESSAGE).
        self.lite_pop = LitePopService(broker, self.consume, self.lite)
