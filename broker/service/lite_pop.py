"""The lite consumers' pop, typed: one front-door-free service both doors adapt onto.

Mirrors org.apache.rocketmq.broker.processor.PopLiteMessageProcessor (5.5.0): a pop for a client
reads the LMQ queues of the client's lite topics one after the other, each **orderly** (a queue's
next message waits until the one handed out is acknowledged or invisible no more: FIFO per lite
topic, as the broker's ``consumerOrderInfoManager`` keeps it; a queue's first read starts at its
end, ``ConsumeInitMode.MAX``), until the batch is full. Nothing found: it waits for an arrival on
any of those queues (or a change of the client's subscription, or one of them ceasing to be
blocked) up to the long-polling time (``PopLiteLongPollingService``), then pops once more. A lite
topic unsubscribed is never popped again.

Java's broker learns which lite topics have new messages from its dispatch events
(``LiteEventDispatcher``); here a pop simply walks the client's subscribed queues, from a
rotating start so that one busy lite topic does not starve the others.

The doors: gRPC's ReceiveMessage of a lite consumer (:mod:`broker.grpc.lite`) and the remoting
POP_LITE_MESSAGE a cluster-mode Proxy sends (:mod:`broker.processors.pop_lite`), whose checks
(``PopLiteMessageProcessor.preCheck``) are :func:`check_lite_pop`. A Proxy acknowledges a lite
message with ACK_MESSAGE naming its ``liteTopic`` (no 5.5.0 processor serves ACK_LITE_MESSAGE) and
renews it with CHANGE_MESSAGE_INVISIBLETIME likewise: :func:`lite_ack_queue`.
"""

from __future__ import annotations

import itertools
import logging

from broker.controller import BrokerController
from broker.lite import LiteSubscriptionRegistry, is_lite_topic, lite_bind_topic, to_lmq_name
from broker.pop.long_polling import POLLING_FULL
from broker.pop.pop_message import PopBatch, PopRequest
from broker.pop.records import MAX_BATCH_NUMS
from broker.service.consume import ConsumeService
from codec.bodies.heartbeat import EXPRESSION_TAG
from codec.bodies.register import PERM_READ
from codec.codes import ResponseCode
from codec.errors import RocketMQError
from codec.extra_info import POP_ORDER_REVIVE_QUEUE, parse_extra_info
from codec.headers.pop import CONSUME_INIT_MODE_MAX, TIMEOUT_TOO_MUCH_MS

logger = logging.getLogger(__name__)

#: What a pop found: each pop of one LMQ queue that found messages, with its request.
LitePops = list[tuple[PopRequest, PopBatch]]


def check_lite_pop(
    broker: BrokerController, topic: str, group: str, max_num: int, born_ms: int, poll_ms: int
) -> None:
    """``PopLiteMessageProcessor.preCheck``, in its order; raises :class:`RocketMQError` with
    Java's code and remark."""
    config = broker.config
    if broker.now_ms() - born_ms - poll_ms > TIMEOUT_TOO_MUCH_MS:
        raise RocketMQError(
            f"the broker[{config.broker_ip1}] pop message is timeout too much",
            response_code=ResponseCode.POLLING_TIMEOUT,
        )
    if not config.broker_permission & PERM_READ:
        raise RocketMQError(
            f"the broker[{config.broker_ip1}] pop message is forbidden",
            response_code=ResponseCode.NO_PERMISSION,
        )
    if max_num > MAX_BATCH_NUMS:
        raise RocketMQError(
            f"the broker[{config.broker_ip1}] pop message's num is greater than 32",
            response_code=ResponseCode.INVALID_PARAMETER,
        )
    topic_config = broker.topics.select(topic)
    if topic_config is None:
        raise RocketMQError(
            f"topic [{topic}] not exist, apply first please!", response_code=ResponseCode.TOPIC_NOT_EXIST
        )
    if not topic_config.perm & PERM_READ:
        raise RocketMQError(
            f"the topic [{topic}] peeking message is forbidden", response_code=ResponseCode.NO_PERMISSION
        )
    if not is_lite_topic(topic_config.attributes):
        raise RocketMQError(
            f"the topic [{topic}] message type not match", response_code=ResponseCode.INVALID_PARAMETER
        )
    group_config = broker.groups.find(group)
    if group_config is None:
        raise RocketMQError(
            f"subscription group [{group}] not exist", response_code=ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        )
    if not group_config.consume_enable:
        raise RocketMQError(
            f"subscription group no permission, {group}", response_code=ResponseCode.NO_PERMISSION
        )
    if lite_bind_topic(group_config.attributes) != topic:
        raise RocketMQError(
            f"subscription bind topic not match, {group}", response_code=ResponseCode.INVALID_PARAMETER
        )


def lite_ack_queue(
    broker: BrokerController,
    group: str,
    topic: str,
    lite_topic: str,
    queue_id: int,
    extra_info: str,
    *,
    is_ack: bool,
) -> str:
    """The LMQ queue an ACK_MESSAGE (``is_ack``) or CHANGE_MESSAGE_INVISIBLETIME naming a
    ``liteTopic`` reaches: ``AckMessageProcessor.ackLite`` and
    ``ChangeInvisibleTimeProcessor.processChangeInvisibleTimeForLite`` after the parent topic's
    checks. Raises :class:`RocketMQError` with Java's code and remark (CodecError for a garbage
    handle)."""
    config = broker.topics.select(topic)
    if config is None:
        raise RocketMQError(
            f"topic[{topic}] not exist, apply first please!", response_code=ResponseCode.TOPIC_NOT_EXIST
        )
    if queue_id < 0 or queue_id >= config.read_queue_nums:
        raise RocketMQError(
            f"queueId[{queue_id}] is illegal, topic:[{topic}] "
            f"topicConfig.readQueueNums:[{config.read_queue_nums}]",
            response_code=ResponseCode.MESSAGE_ILLEGAL,
        )
    if is_ack:
        group_config = broker.groups.find(group, create=False)
        if group_config is None or lite_bind_topic(group_config.attributes) != topic:
            raise RocketMQError(
                "group type or bind topic not match.", response_code=ResponseCode.INVALID_PARAMETER
            )
        if queue_id != 0 or parse_extra_info(extra_info).revive_qid != POP_ORDER_REVIVE_QUEUE:
            raise RocketMQError("ack queue illegal.", response_code=ResponseCode.INVALID_PARAMETER)
    return to_lmq_name(topic, lite_topic)


class LitePopService:
    """The lite pop over the consume service's POP state and the lite registry (module docstring)."""

    def __init__(
        self, broker: BrokerController, consume: ConsumeService, registry: LiteSubscriptionRegistry
    ) -> None:
        self.broker = broker
        self.consume = consume
        self.registry = registry
        self._starts: dict[str, itertools.count[int]] = {}

    def forget(self, client_id: str) -> None:
        """A client gone: no rotation left behind (its subscription is the registry's)."""
        self._starts.pop(client_id, None)

    def _order(self, client_id: str) -> list[str]:
        names = self.registry.lmq_names_of(client_id)
        if len(names) > 1:
            start = next(self._starts.setdefault(client_id, itertools.count())) % len(names)
            names = names[start:] + names[:start]
        return names

    async def _pop_once(
        self, client_id: str, group: str, wanted: int, invisible_ms: int, attempt_id: str | None
    ) -> LitePops:
        found: LitePops = []
        pop_time = self.broker.now_ms()  # one for the whole answer: a handle names one popTime
        for lmq_name in self._order(client_id):
            if wanted <= 0:
                break
            request = PopRequest(
                consumer_group=group,
                topic=lmq_name,
                queue_id=0,
                max_msg_nums=wanted,
                invisible_time=invisible_ms,
                poll_time=0,
                born_time=pop_time,
                init_mode=CONSUME_INIT_MODE_MAX,  # PopLiteMessageProcessor.getPopOffset
                exp_type=EXPRESSION_TAG,
                exp="*",
                order=True,
                attempt_id=attempt_id,
            )
            try:
                outcome = await self.consume.pop_message(request, pop_time)
            except RocketMQError as err:  # this queue only (a name no queue can have, a group gone)
                logger.debug("lite pop of %s for %s refused: %s", lmq_name, group, err)
                continue
            if outcome.code == ResponseCode.SUCCESS and outcome.batch.buffers:
                found.append((request, outcome.batch))
                wanted -= len(outcome.batch.buffers)
        return found

    async def pop(
        self,
        client_id: str,
        group: str,
        topic: str,
        batch_size: int,
        invisible_ms: int,
        poll_ms: int,
        attempt_id: str | None,
    ) -> tuple[LitePops, bool]:
        """The pops that found messages (each with its request), after a wait of up to ``poll_ms``
        when none did; and whether the wait was refused because the long polling is full."""
        self.registry.touch(client_id, self.broker.now_ms())
        found = await self._pop_once(client_id, group, batch_size, invisible_ms, attempt_id)
        if found or poll_ms <= 0 or self.broker.stopping:
            return found, False
        queues = [(name, 0) for name in self.registry.lmq_names_of(client_id)]
        now = self.broker.now_ms()
        deadline = now + poll_ms
        for name, _ in queues:  # a blocked lite topic freeing up ends the wait too
            free_at = self.consume.orders.unblock_time(name, group, 0)
            if free_at > now:
                deadline = min(deadline, free_at + 1)
        waited = await self.consume.polling.wait(topic, group, -1, queues, None, deadline)
        if waited == POLLING_FULL:
            return [], True
        return await self._pop_once(client_id, group, batch_size, invisible_ms, attempt_id), False
