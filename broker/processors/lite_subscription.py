"""LITE_SUBSCRIPTION_CTL (5.5): the lite subscription changes a cluster-mode Proxy sends its broker
for its gRPC clients' SyncLiteSubscription calls.

Mirrors org.apache.rocketmq.broker.processor.LiteSubscriptionCtlProcessor (5.5.0): the body is a
``LiteSubscriptionCtlRequestBody``, ``{"subscriptionSet": [LiteSubscriptionDTO, ...]}``, each entry
an ``action`` (PARTIAL_ADD, PARTIAL_REMOVE, COMPLETE_ADD, COMPLETE_REMOVE), ``clientId``,
``group``, ``topic`` (the parent topic), ``liteTopicSet``, ``offsetOption`` and ``version``.
Entries with a blank client id, group or topic are skipped. An add needs a group allowed to
consume (else ILLEGAL_OPERATION with the ``IllegalStateException`` text) and, for PARTIAL_ADD,
fewer active subscriptions on the broker than ``maxLiteSubscriptionCount`` (else
LITE_SUBSCRIPTION_QUOTA_EXCEEDED with the ``LiteQuotaException`` text). A missing body or an
empty set is ILLEGAL_OPERATION. The changes go to the registry the gRPC endpoint uses
(:mod:`broker.lite`), a PARTIAL_ADD and a PARTIAL_REMOVE through the same
:class:`broker.lite_lifecycle.LiteLifecycleManager` path as the gRPC door's: a PARTIAL_ADD's
``offsetOption`` (``{"type": "POLICY", "value": 1}``) moves the group's offset on each lite topic
added, and an exclusive group's (``lite.sub.model=Exclusive``) lite topic is taken from its other
clients. An add records the connection it came on (``updateClientChannel``), where a client that
loses a lite topic so is told with NOTIFY_UNSUBSCRIBE_LITE (:mod:`broker.lite_notify`).
"""

from __future__ import annotations

import logging
from typing import Any

from broker.controller import BrokerController
from broker.lite import OFFSET_TYPES, LiteQuotaError, OffsetOption
from broker.lite_notify import LiteUnsubscribeNotifier
from broker.service.services import BrokerServices
from codec import fastjson
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import BodyError, RocketMQError
from codec.headers.base import EmptyHeader
from gateway.transport.dispatch import Dispatcher, RequestContext

logger = logging.getLogger(__name__)

ACTIONS = ("PARTIAL_ADD", "PARTIAL_REMOVE", "COMPLETE_ADD", "COMPLETE_REMOVE")  # LiteSubscriptionAction
NOT_ALLOWED = "java.lang.IllegalStateException: Consumer group is not allowed to consume."


def _entries(body: bytes) -> list[dict[str, Any]]:
    """The ``subscriptionSet`` entries; raises RocketMQError (SYSTEM_ERROR) for a body fastjson
    could not read into a ``LiteSubscriptionCtlRequestBody``."""
    try:
        obj = fastjson.loads(body)
    except BodyError as err:
        raise RocketMQError(
            f"bad LiteSubscriptionCtlRequestBody: {err}", response_code=ResponseCode.SYSTEM_ERROR
        ) from err
    entries = obj.get("subscriptionSet") if isinstance(obj, dict) else None
    if entries is not None and not isinstance(entries, list):
        raise RocketMQError(
            "bad LiteSubscriptionCtlRequestBody: subscriptionSet", response_code=ResponseCode.SYSTEM_ERROR
        )
    found = [entry for entry in entries or () if isinstance(entry, dict)]
    for entry in found:
        if entry.get("action") not in ACTIONS:
            raise RocketMQError(
                f"unknown LiteSubscriptionAction: {entry.get('action')}",
                response_code=ResponseCode.SYSTEM_ERROR,
            )
    return found


def _offset_option(entry: dict[str, Any]) -> OffsetOption | None:
    """The entry's ``offsetOption``, None when absent; raises RocketMQError (SYSTEM_ERROR) for
    one fastjson could not read into an ``OffsetOption``."""
    found = entry.get("offsetOption")
    if found is None:
        return None
    kind = found.get("type") if isinstance(found, dict) else None
    value = found.get("value", 0) if isinstance(found, dict) else None
    if kind not in OFFSET_TYPES or not isinstance(value, int) or isinstance(value, bool):
        raise RocketMQError(f"bad OffsetOption: {found}", response_code=ResponseCode.SYSTEM_ERROR)
    return OffsetOption(str(kind), value)


class LiteSubscriptionCtlProcessor:
    """LITE_SUBSCRIPTION_CTL over the broker's shared lite registry (module docstring)."""

    def __init__(
        self,
        broker: BrokerController,
        services: BrokerServices,
        notifier: LiteUnsubscribeNotifier | None = None,
    ) -> None:
        """``notifier``: where each client's connection is recorded, for NOTIFY_UNSUBSCRIBE_LITE
        (:mod:`broker.lite_notify`); None: not recorded."""
        self.broker = broker
        self.services = services
        self.notifier = notifier

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.LITE_SUBSCRIPTION_CTL, self.lite_subscription_ctl, EmptyHeader)

    def _consume_enabled(self, group: str) -> bool:
        """``LiteMetadataUtil.isConsumeEnable``."""
        config = self.broker.groups.find(group)
        return config is not None and config.consume_enable

    def _record_channel(self, ctx: RequestContext, client_id: str) -> None:
        """``updateClientChannel``: the connection to tell of a subscription dropped."""
        if self.notifier is not None:
            self.notifier.update_channel(client_id, ctx.connection.peer)

    def lite_subscription_ctl(
        self, ctx: RequestContext, request: RemotingCommand, _header: EmptyHeader
    ) -> RemotingCommand:
        if not request.body:
            return request.make_response(ResponseCode.ILLEGAL_OPERATION, "Request body is null.")
        entries = _entries(bytes(request.body))
        if not entries:
            return request.make_response(
                ResponseCode.ILLEGAL_OPERATION, "LiteSubscriptionCtlRequestBody is empty."
            )
        registry, lifecycle = self.services.lite, self.services.lite_lifecycle
        for entry in entries:
            client_id, group, topic = (
                str(entry.get(k) or "").strip() for k in ("clientId", "group", "topic")
            )
            if not (client_id and group and topic):
                logger.warning("lite subscription entry without client id, group or topic: %s", entry)
                continue
            lite_topics = [str(t) for t in entry.get("liteTopicSet") or ()]
            action = entry["action"]
            if action in ("PARTIAL_ADD", "COMPLETE_ADD") and not self._consume_enabled(group):
                return request.make_response(ResponseCode.ILLEGAL_OPERATION, NOT_ALLOWED)
            if action == "PARTIAL_ADD":
                option = _offset_option(entry)
                self._record_channel(ctx, client_id)
                try:
                    lifecycle.subscribe_partial(client_id, group, topic, lite_topics, option)
                except LiteQuotaError as err:
                    return request.make_response(err.response_code, str(err))
                registry.open_events(client_id, self.broker.now_ms())
            elif action == "PARTIAL_REMOVE":
                lifecycle.unsubscribe_partial(client_id, group, topic, lite_topics)
            elif action == "COMPLETE_ADD":
                self._record_channel(ctx, client_id)
                registry.add_complete(client_id, group, topic, lite_topics)
                registry.open_events(client_id, self.broker.now_ms())
            else:
                registry.remove_complete(client_id)
                if self.notifier is not None:
                    self.notifier.remove_channel(client_id)
            self.services.consume.polling.wake(topic, group, -1)
        return request.make_response(ResponseCode.SUCCESS)
