"""NOTIFICATION (200054): does the group have something to pop here? (``NotificationProcessor``).

The same checks as POP, then ``hasMsg``: a queue of the topic (all readable ones for queue -1, from
a random one) or of the group's POP retry topic whose max offset is beyond the group's pop offset
(committed, else the queue's min, at least the offset after the last popped batch). The retry topic
is looked at first one request in five (``randomQ % 5 == 0``), else last; for an orderly request a
blocked queue counts as empty. Nothing there: the
request waits like a POP (:mod:`broker.pop.long_polling`) and is answered once more when a message
arrives or its poll time ends; ``pollingFull`` when too many requests wait already. It never
returns messages.
"""

from __future__ import annotations

from broker.controller import BrokerController
from broker.pop.long_polling import POLLING_FULL, POLLING_SUSPENDED, PopPolling
from broker.pop.order_info import ConsumerOrderInfoManager
from broker.pop.pop_message import check_queue_and_group
from broker.pop.records import PopConfig
from broker.pop.state import PopState
from codec.bodies.register import PERM_READ
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.extra_info import build_pop_retry_topic, polling_key
from codec.headers.pop import NotificationRequestHeader, NotificationResponseHeader
from gateway.transport.dispatch import Dispatcher, RequestContext


class NotificationProcessor:
    def __init__(
        self,
        broker: BrokerController,
        pop: PopConfig,
        state: PopState,
        polling: PopPolling,
        orders: ConsumerOrderInfoManager,
    ) -> None:
        self.orders = orders
        self.broker = broker
        self.pop = pop
        self.state = state
        self.polling = polling

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.NOTIFICATION, self.notification, NotificationRequestHeader)

    def _check(self, header: NotificationRequestHeader) -> None:
        broker = self.broker
        config = broker.config
        if not config.broker_permission & PERM_READ:
            raise RocketMQError(
                f"the broker[{config.broker_ip1}] peeking message is forbidden",
                response_code=ResponseCode.NO_PERMISSION,
            )
        check_queue_and_group(broker, header.topic, header.queue_id, header.consumer_group)

    def _has_in_queue(self, topic: str, group: str, queue_id: int, header: NotificationRequestHeader) -> bool:
        if header.is_order() and self.orders.check_block(header.attempt_id, header.topic, group, queue_id, 0):
            return False  # a blocked orderly queue has nothing to pop
        store = self.broker.store
        offset = self.broker.offsets.query(group, topic, queue_id)
        if offset < 0:
            offset = store.get_min_offset_in_queue(topic, queue_id)
        offset = max(offset, self.state.latest_offset(polling_key(topic, group, queue_id)))
        return store.get_max_offset_in_queue(topic, queue_id) - offset > 0

    def _has_in_topic(self, topic: str, group: str, random_q: int, header: NotificationRequestHeader) -> bool:
        config = self.broker.topics.select(topic)
        if config is None or config.read_queue_nums <= 0:
            return False
        n = config.read_queue_nums
        return any(self._has_in_queue(topic, group, (random_q + i) % n, header) for i in range(n))

    def _has_in_retry(self, header: NotificationRequestHeader, random_q: int) -> bool:
        v2 = self.pop.enable_retry_topic_v2
        group = header.consumer_group
        if self._has_in_topic(build_pop_retry_topic(header.topic, group, v2), group, random_q, header):
            return True
        return (
            v2
            and self.pop.retrieve_message_from_pop_retry_topic_v1
            and self._has_in_topic(build_pop_retry_topic(header.topic, group), group, random_q, header)
        )

    def has_msg(self, header: NotificationRequestHeader) -> bool:
        random_q = self.state.random_percent()
        need_retry = random_q % 5 == 0
        if need_retry and self._has_in_retry(header, random_q):
            return True
        if header.queue_id < 0:
            found = self._has_in_topic(header.topic, header.consumer_group, random_q, header)
        else:
            found = self._has_in_queue(header.topic, header.consumer_group, header.queue_id, header)
        return found or (not need_retry and self._has_in_retry(header, random_q))

    async def notification(
        self, ctx: RequestContext, request: RemotingCommand, header: NotificationRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        if not header.born_time:
            header.born_time = broker.now_ms()
        self._check(header)
        has_msg = self.has_msg(header)
        full = False
        if not has_msg and header.poll_time > 0 and not broker.stopping:
            queues = self._queues_of(header)
            outcome = await self.polling.wait(
                header.topic,
                header.consumer_group,
                header.queue_id,
                queues,
                None,
                header.born_time + header.poll_time,
            )
            full = outcome == POLLING_FULL
            ctx.suspended = outcome == POLLING_SUSPENDED
            if not full:
                has_msg = self.has_msg(header)
        response_header = NotificationResponseHeader(has_msg=has_msg, polling_full=full)
        return request.make_response(ResponseCode.SUCCESS, header=response_header)

    def _queues_of(self, header: NotificationRequestHeader) -> list[tuple[str, int]]:
        topics = self.broker.topics
        queues: list[tuple[str, int]] = []
        if header.queue_id >= 0:
            queues.append((header.topic, header.queue_id))
        else:
            topic = topics.select(header.topic)
            if topic is not None:
                queues.extend((header.topic, q) for q in range(topic.read_queue_nums))
        retry_name = build_pop_retry_topic(
            header.topic, header.consumer_group, self.pop.enable_retry_topic_v2
        )
        retry = topics.select(retry_name)
        if retry is not None:
            queues.extend((retry_name, q) for q in range(retry.read_queue_nums))
        return queues
