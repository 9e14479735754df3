"""QUERY_ASSIGNMENT (400), SET_MESSAGE_REQUEST_MODE (401), GET_ALL_MESSAGE_REQUEST_MODE (402) and
POP_ROLLBACK (200056).

Mirrors ``QueryAssignmentProcessor``, ``MessageRequestModeManager`` (persisted as
``config/messageRequestMode.json``, fastjson's ``{"messageRequestModeMap":{topic:{group:{...}}}}``),
``AllocateMessageQueueAveragely`` / ``AllocateMessageQueueAveragelyByCircle`` and
``AdminBrokerProcessor.getAllMessageRequestMode``.

A group in POP mode gets, per broker of the route, the queue ``-1`` (the broker picks among its
queues) unless ``popShareQueueNum`` narrows it. The route is this broker's own queues: Java asks
the NameServer (``TopicRouteInfoManager``), which for a topic served by one broker is the same set.
"""

from __future__ import annotations

import logging
from typing import Any

from broker.config_tables import ConfigTable
from broker.controller import BrokerController
from broker.pop.records import PopConfig
from codec.bodies.lock import MessageQueue
from codec.bodies.pop import (
    MessageQueueAssignment,
    MessageRequestModeSerializeWrapper,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.extra_info import RETRY_GROUP_TOPIC_PREFIX
from codec.headers.base import EmptyHeader
from gateway.transport.dispatch import Dispatcher, RequestContext

logger = logging.getLogger(__name__)

MESSAGE_REQUEST_MODE_JSON = "messageRequestMode.json"
POP = "POP"
PULL = "PULL"
_MODES = (PULL, POP)


def allocate_averagely(client_id: str, queues: list[MessageQueue], clients: list[str]) -> list[MessageQueue]:
    """``AllocateMessageQueueAveragely.allocate``."""
    if client_id not in clients or not queues:
        return []
    index = clients.index(client_id)
    mod = len(queues) % len(clients)
    if len(queues) <= len(clients):
        size = 1
    elif mod > 0 and index < mod:
        size = len(queues) // len(clients) + 1
    else:
        size = len(queues) // len(clients)
    start = index * size if mod > 0 and index < mod else index * size + mod
    return [queues[(start + i) % len(queues)] for i in range(min(size, len(queues) - start))]


def allocate_by_circle(client_id: str, queues: list[MessageQueue], clients: list[str]) -> list[MessageQueue]:
    """``AllocateMessageQueueAveragelyByCircle.allocate``."""
    if client_id not in clients:
        return []
    return queues[clients.index(client_id) :: len(clients)]


STRATEGIES = {"AVG": allocate_averagely, "AVG_BY_CIRCLE": allocate_by_circle}


def allocate_for_pop(
    strategy: Any, client_id: str, queues: list[MessageQueue], clients: list[str], share: int
) -> list[MessageQueue]:
    """``allocate4Pop``."""
    if share <= 0 or share >= len(clients) - 1:
        return [MessageQueue(q.topic, q.broker_name, -1) for q in queues]
    if len(clients) <= len(queues):
        result = list(strategy(client_id, queues, clients))
        if client_id in clients:
            index = clients.index(client_id)
            for _ in range(share):
                index = (index + 1) % len(clients)
                result.extend(strategy(clients[index], queues, clients))
        return result
    if client_id not in clients:
        return []
    return [queues[clients.index(client_id) % len(queues)]]


class MessageRequestModeManager:
    """``topic`` → ``group`` → mode; its table (``messageRequestMode.json``) is registered with the
    broker's owner of persisted tables, read on first use and written on each change."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self._modes: dict[str, dict[str, SetMessageRequestModeRequestBody]] | None = None
        broker.tables.register(
            ConfigTable(MESSAGE_REQUEST_MODE_JSON, self.to_obj, self._decode, strict=False)
        )

    def _decode(self, doc: Any) -> None:
        self._modes = MessageRequestModeSerializeWrapper.from_obj(doc).message_request_mode_map

    @property
    def modes(self) -> dict[str, dict[str, SetMessageRequestModeRequestBody]]:
        if self._modes is None:
            self._modes = {}
            self.broker.tables.load(MESSAGE_REQUEST_MODE_JSON)
        return self._modes

    def get(self, topic: str, group: str) -> SetMessageRequestModeRequestBody | None:
        return self.modes.get(topic, {}).get(group)

    def set(self, body: SetMessageRequestModeRequestBody) -> None:
        self.modes.setdefault(body.topic, {})[body.consumer_group] = body
        self.broker.tables.changed(MESSAGE_REQUEST_MODE_JSON)

    def to_obj(self) -> dict[str, Any]:
        return MessageRequestModeSerializeWrapper(self.modes).to_obj()


class QueryAssignmentProcessor:
    def __init__(self, broker: BrokerController, pop: PopConfig) -> None:
        self.broker = broker
        self.pop = pop
        self.modes = MessageRequestModeManager(broker)

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.QUERY_ASSIGNMENT, self.query_assignment, EmptyHeader)
        dispatcher.register(RequestCode.SET_MESSAGE_REQUEST_MODE, self.set_message_request_mode, EmptyHeader)
        dispatcher.register(
            RequestCode.GET_ALL_MESSAGE_REQUEST_MODE, self.get_all_message_request_mode, EmptyHeader
        )
        dispatcher.register(RequestCode.POP_ROLLBACK, self.pop_rollback, EmptyHeader)

    def _mode_of(self, topic: str, group: str) -> SetMessageRequestModeRequestBody:
        stored = self.modes.get(topic, group)
        if stored is not None:
            return stored
        mode = PULL if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else self.pop.default_message_request_mode
        share = self.pop.default_pop_share_queue_num if mode == POP else 0
        return SetMessageRequestModeRequestBody(group, mode, share, topic)

    def query_assignment(
        self, _ctx: RequestContext, request: RemotingCommand, _header: EmptyHeader
    ) -> RemotingCommand:
        body = QueryAssignmentRequestBody.decode(request.body or b"{}")
        mode = self._mode_of(body.topic, body.consumer_group)
        queues = self._load_balance(body, mode)
        answer = QueryAssignmentResponseBody(
            None
            if queues is None
            else [MessageQueueAssignment(message_queue=q, mode=mode.mode) for q in queues]
        )
        return request.make_response(ResponseCode.SUCCESS, body=answer.encode())

    def _subscribe_info(self, topic: str) -> list[MessageQueue] | None:
        config = self.broker.topics.select(topic)
        if config is None:
            return None
        name = self.broker.config.broker_name
        return [MessageQueue(topic, name, q) for q in range(config.read_queue_nums)]

    def _load_balance(
        self, body: QueryAssignmentRequestBody, mode: SetMessageRequestModeRequestBody
    ) -> list[MessageQueue] | None:
        queues = self._subscribe_info(body.topic)
        if body.message_model == "BROADCASTING" or queues is None:
            return queues
        info = self.broker.clients.consumers.get(body.consumer_group)
        if info is None:
            return None
        clients = sorted(info.client_ids())
        queues.sort(key=lambda q: (q.topic, q.broker_name, q.queue_id))
        strategy = STRATEGIES.get(body.strategy_name or "")
        if strategy is None:
            logger.warning("QueryLoad: unsupported strategy [%s]", body.strategy_name)
            return None
        if mode.mode == POP:
            result = allocate_for_pop(strategy, body.client_id, queues, clients, mode.pop_share_queue_num)
        else:
            result = strategy(body.client_id, queues, clients)
        return sorted(set(result), key=lambda q: (q.topic, q.broker_name, q.queue_id))

    def set_message_request_mode(
        self, _ctx: RequestContext, request: RemotingCommand, _header: EmptyHeader
    ) -> RemotingCommand:
        body = SetMessageRequestModeRequestBody.decode(request.body or b"{}")
        if body.mode not in _MODES:
            raise RocketMQError(
                f"unknown message request mode {body.mode!r}", response_code=ResponseCode.SYSTEM_ERROR
            )
        if body.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise RocketMQError(
                "retry topic is not allowed to set mode", response_code=ResponseCode.NO_PERMISSION
            )
        if self.broker.topics.select(body.topic) is None:
            raise RocketMQError(f"topic[{body.topic}] not exist", response_code=ResponseCode.TOPIC_NOT_EXIST)
        if self.broker.groups.find(body.consumer_group) is None:
            raise RocketMQError(
                "subscription group does not exist", response_code=ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
            )
        self.modes.set(body)
        return request.make_response(ResponseCode.SUCCESS)

    def pop_rollback(
        self, _ctx: RequestContext, request: RemotingCommand, _header: EmptyHeader
    ) -> RemotingCommand:
        """POP_ROLLBACK (``mqadmin exportPopRecord``): ``AdminBrokerProcessor.transferPopToFsStore``
        moves the RocksDB POP records (``popConsumerKVServiceEnable``) to the revive topic; this
        broker keeps them there always, so there is nothing to move, as on a 5.3.3 broker with the
        default ``popConsumerKVServiceEnable=false``."""
        return request.make_response(ResponseCode.SUCCESS)

    def get_all_message_request_mode(
        self, _ctx: RequestContext, request: RemotingCommand, _header: EmptyHeader
    ) -> RemotingCommand:
        body = MessageRequestModeSerializeWrapper(self.modes.modes).encode()
        return request.make_response(ResponseCode.SUCCESS, body=body)
