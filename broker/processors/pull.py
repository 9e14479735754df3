"""PULL_MESSAGE and LITE_PULL_MESSAGE (``PullMessageProcessor``).

The pre-checks run in Java's order (``PullMessageProcessor.processRequest``) and a failed one
raises :class:`PullRejected`, which the dispatcher answers with its code, remark and
``forbiddenType``; the checks that pass leave a :class:`PullPlan` (the topic and group configs and
the store filter of the subscription) that the read, the hold and the response use. Every pull
is one ``MessageStore.get_message`` call with that filter, tags and SQL92 alike (Java's
``DefaultMessageStore.getMessage`` with a ``MessageFilter``); the store's status maps to the
response code and ``nextBeginOffset`` as in Java's ``PullMessageResultHandler``; a pull that finds
nothing and may be suspended is held until a message its filter lets through arrives or its
suspend time runs out (:mod:`broker.long_polling`) and is then run once more without suspension.
The COMMIT flag's offset is stored on the first processing only. ``suggestWhichBrokerId`` and a
slave's PULL_RETRY_IMMEDIATELY for a consumer that is not behind: :mod:`broker.ha.roles`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import trio

from broker.controller import BrokerController
from broker.filter import is_tag_type
from broker.filter.subscription_filter import filter_from_header, filter_from_registered, tags_filter
from broker.ha.roles import MASTER_ID, suggest_which_broker_id
from broker.stats import BrokerStats
from broker.subscription_group_manager import SubscriptionGroupConfig
from codec.bodies.heartbeat import EXPRESSION_TAG, SubscriptionData
from codec.bodies.register import PERM_READ, TopicConfig
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader, PullSysFlag
from gateway.transport.dispatch import Dispatcher, RequestContext
from store.message_filter import MessageFilter
from store.results import GetMessageResult, GetMessageStatus

logger = logging.getLogger(__name__)

FORBIDDEN_BROKER = 1
FORBIDDEN_GROUP = 2
FORBIDDEN_TOPIC = 3
FORBIDDEN_BROADCASTING = 4
MAX_PULL_BYTES = 128 * 1024 * 1024

_STATUS_CODES = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_RESET: ResponseCode.PULL_OFFSET_MOVED,
}


class PullRejected(RocketMQError):
    """A pre-check refused the pull; ``forbidden_type`` says which permission was missing."""

    def __init__(self, code: int, remark: str, forbidden_type: int | None = None) -> None:
        fields = {"forbiddenType": str(forbidden_type)} if forbidden_type is not None else None
        super().__init__(remark, response_code=code, ext_fields=fields)


@dataclass(frozen=True, slots=True)
class PullPlan:
    """What the pre-checks established about a pull: the configs of the topic and group it reads
    for, and the store filter of its subscription (``None``: every message)."""

    topic: TopicConfig
    group: SubscriptionGroupConfig
    message_filter: MessageFilter | None


class PullMessageProcessor:
    def __init__(self, broker: BrokerController, stats: BrokerStats) -> None:
        self.broker = broker
        self.stats = stats
        self.held_total = 0

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.PULL_MESSAGE, self.pull, PullMessageRequestHeader)
        dispatcher.register(RequestCode.LITE_PULL_MESSAGE, self.pull, PullMessageRequestHeader)

    async def pull(
        self, ctx: RequestContext, request: RemotingCommand, header: PullMessageRequestHeader
    ) -> RemotingCommand:
        plan = self._check(ctx, request, header)
        broker = self.broker
        flags = header.sys_flag
        if flags & PullSysFlag.COMMIT_OFFSET:
            broker.offsets.commit(header.consumer_group, header.topic, header.queue_id, header.commit_offset)
        result = self._get(header, plan)
        code = self._code(header, result)
        slave = broker.config.broker_id != MASTER_ID
        if slave and not result.suggest_pulling_from_slave and result.status is not GetMessageStatus.FOUND:
            code = ResponseCode.PULL_RETRY_IMMEDIATELY  # a slave sends a consumer not behind to the master
        if code == ResponseCode.PULL_NOT_FOUND and flags & PullSysFlag.SUSPEND and not broker.stopping:
            timeout_ms = (
                header.suspend_timeout_millis
                if broker.config.long_polling_enable
                else broker.config.short_polling_time_mills
            )
            ctx.suspended = True
            result = await self._hold(header, plan, timeout_ms / 1000)
            code = self._code(header, result)
        self.stats.record_group_get(
            header.topic, header.consumer_group, result.message_count, result.buffer_total_size
        )
        return self._response(request, header, plan, result, code)

    # -- pre-checks ------------------------------------------------------------------------------

    def _check(
        self, ctx: RequestContext, request: RemotingCommand, header: PullMessageRequestHeader
    ) -> PullPlan:
        """Java's checks in Java's order; raises :class:`PullRejected` or, for a filter that
        cannot be built, :class:`RocketMQError`."""
        self._check_broker(request)
        group = self._check_group(header)
        topic = self._check_topic(ctx, header)
        if header.sys_flag & PullSysFlag.SUBSCRIPTION:
            return PullPlan(topic, group, self._carried_filter(header))
        return PullPlan(topic, group, self._registered_filter(header, group))

    def _check_broker(self, request: RemotingCommand) -> None:
        config = self.broker.config
        if not config.broker_permission & PERM_READ:
            raise PullRejected(
                ResponseCode.NO_PERMISSION,
                f"the broker[{config.broker_ip1}] pulling message is forbidden",
                FORBIDDEN_BROKER,
            )
        if request.code == RequestCode.LITE_PULL_MESSAGE and not config.lite_pull_message_enable:
            raise PullRejected(
                ResponseCode.NO_PERMISSION,
                f"the broker[{config.broker_ip1}] for lite pull consumer is forbidden",
                FORBIDDEN_BROKER,
            )

    def _check_group(self, header: PullMessageRequestHeader) -> SubscriptionGroupConfig:
        group = self.broker.groups.find(header.consumer_group)
        if group is None:
            raise PullRejected(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{header.consumer_group}] does not exist",
            )
        if not group.consume_enable:
            raise PullRejected(
                ResponseCode.NO_PERMISSION,
                f"subscription group no permission, {header.consumer_group}",
                FORBIDDEN_GROUP,
            )
        return group

    def _check_topic(self, ctx: RequestContext, header: PullMessageRequestHeader) -> TopicConfig:
        topic = self.broker.topics.select(header.topic)
        if topic is None:
            raise PullRejected(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{header.topic}] not exist, apply first please!",
            )
        if not topic.perm & PERM_READ:
            raise PullRejected(
                ResponseCode.NO_PERMISSION,
                f"the topic[{header.topic}] pulling message is forbidden",
                FORBIDDEN_TOPIC,
            )
        if header.queue_id < 0 or header.queue_id >= topic.read_queue_nums:
            raise PullRejected(
                ResponseCode.INVALID_PARAMETER,
                f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] "
                f"topicConfig.readQueueNums:[{topic.read_queue_nums}] "
                f"consumer:[{ctx.connection.remote_addr}]",
            )
        return topic

    def _carried_filter(self, header: PullMessageRequestHeader) -> MessageFilter | None:
        """The filter of the subscription the pull carries (the SUBSCRIPTION flag)."""
        expression_type = header.expression_type or EXPRESSION_TAG
        if is_tag_type(expression_type):
            return tags_filter(SubscriptionData.build(header.topic, header.subscription, header.sub_version))
        return filter_from_header(
            self.broker.config,
            self.broker.filters,
            header.topic,
            header.consumer_group,
            header.subscription,
            expression_type,
            header.sub_version,
        )

    def _registered_filter(
        self, header: PullMessageRequestHeader, group: SubscriptionGroupConfig
    ) -> MessageFilter | None:
        """The filter of the subscription the group's heartbeat registered for the topic."""
        name = header.consumer_group
        info = self.broker.clients.consumers.get(name)
        if info is None:
            raise PullRejected(
                ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's group info not exist, group: {name}"
            )
        if info.is_broadcasting and not group.consume_broadcast_enable:
            raise PullRejected(
                ResponseCode.NO_PERMISSION,
                f"the consumer group[{name}] can not consume by broadcast way",
                FORBIDDEN_BROADCASTING,
            )
        registered = info.subscriptions.get(header.topic)
        if registered is None:
            raise PullRejected(
                ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist, group: {name}"
            )
        if registered.sub_version < header.sub_version:
            raise PullRejected(
                ResponseCode.SUBSCRIPTION_NOT_LATEST, f"the consumer's subscription not latest, group: {name}"
            )
        if is_tag_type(registered.expression_type):
            return tags_filter(registered)
        broker = self.broker
        return filter_from_registered(broker.config, broker.filters, name, registered, header.sub_version)

    # -- reading ---------------------------------------------------------------------------------

    def _get(self, header: PullMessageRequestHeader, plan: PullPlan) -> GetMessageResult:
        """The pull's one store read through its filter, counted in the statistics."""
        max_bytes = (
            header.max_msg_bytes if header.max_msg_bytes and header.max_msg_bytes > 0 else MAX_PULL_BYTES
        )
        start = time.perf_counter()
        result = self.broker.store.get_message(
            header.topic,
            header.queue_id,
            header.queue_offset,
            header.max_msg_nums,
            max_bytes,
            plan.message_filter,
        )
        count = result.message_count
        self.stats.record_get(count > 0, count, int((time.perf_counter() - start) * 1000))
        return result

    @staticmethod
    def _code(header: PullMessageRequestHeader, result: GetMessageResult) -> int:
        status = result.status
        if status in (GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.NO_MATCHED_LOGIC_QUEUE):
            return ResponseCode.PULL_OFFSET_MOVED if header.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        if status is GetMessageStatus.FOUND and not result.buffers:
            return ResponseCode.PULL_RETRY_IMMEDIATELY
        return _STATUS_CODES.get(status, ResponseCode.SYSTEM_ERROR)

    async def _hold(
        self, header: PullMessageRequestHeader, plan: PullPlan, timeout_s: float
    ) -> GetMessageResult:
        """Park the pull until a message its filter lets through arrives or the suspend time ends,
        then pull again."""
        hold = self.broker.hold
        arrived = trio.Event()
        held = hold.hold(header.topic, header.queue_id, header.queue_offset, plan.message_filter, arrived.set)
        self.held_total += 1
        try:
            with trio.move_on_after(max(timeout_s, 0.0)):
                await arrived.wait()
        finally:
            hold.release(header.topic, header.queue_id, held)
        return self._get(header, plan)

    def _response(
        self,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        plan: PullPlan,
        result: GetMessageResult,
        code: int,
    ) -> RemotingCommand:
        next_begin = result.next_begin_offset
        if result.status in (GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.NO_MATCHED_LOGIC_QUEUE):
            next_begin = 0
        response_header = PullMessageResponseHeader(
            suggest_which_broker_id=suggest_which_broker_id(
                self.broker.config,
                plan.group.which_broker_when_consume_slowly,
                plan.group.broker_id,
                result.suggest_pulling_from_slave,
            ),
            next_begin_offset=next_begin,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
            topic_sys_flag=plan.topic.topic_sys_flag,
            group_sys_flag=plan.group.group_sys_flag,
        )
        body = result.body() if code == ResponseCode.SUCCESS else b""
        return request.make_response(code, result.status.name, header=response_header, body=body)
