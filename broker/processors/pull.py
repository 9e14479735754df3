"""PULL_MESSAGE and LITE_PULL_MESSAGE (``PullMessageProcessor``).

The pre-checks run in Java's order (``PullMessageProcessor.processRequest``) and a failed one
raises :class:`PullRejected`, which the dispatcher answers with its code, remark and
``forbiddenType``; the store's status maps to the response code and ``nextBeginOffset`` as in
Java's ``PullMessageResultHandler``; a pull that finds nothing and may be suspended is held until
a matching message arrives or its suspend time runs out (:mod:`broker.long_polling`) and is then
run once more without suspension. The COMMIT flag's offset is stored on the first processing only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection

import trio

from broker.controller import BrokerController
from broker.filter import ConsumerFilterManager, is_tag_type
from broker.filter.pull_filter import PullFilter, filter_from_header, filter_from_registered, get_message
from broker.stats import BrokerStats
from codec.bodies.heartbeat import EXPRESSION_TAG, SUB_ALL, SubscriptionData
from codec.bodies.register import PERM_READ
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader, PullSysFlag
from gateway.transport.dispatch import Dispatcher, RequestContext
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


def tags_filter(sub: SubscriptionData) -> Collection[int] | None:
    """The tag hash codes a subscription accepts; ``None`` when it accepts everything."""
    if sub.sub_string.strip() in ("", SUB_ALL) or not sub.code_set:
        return None
    return frozenset(sub.code_set)


class PullMessageProcessor:
    def __init__(self, broker: BrokerController, stats: BrokerStats) -> None:
        self.broker = broker
        self.stats = stats
        self.held_total = 0
        self.filters = ConsumerFilterManager()  # SQL92: compiled once per subscription version

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.PULL_MESSAGE, self.pull, PullMessageRequestHeader)
        dispatcher.register(RequestCode.LITE_PULL_MESSAGE, self.pull, PullMessageRequestHeader)

    async def pull(
        self, ctx: RequestContext, request: RemotingCommand, header: PullMessageRequestHeader
    ) -> RemotingCommand:
        tags_codes = self._check(ctx, request, header)
        broker = self.broker
        flags = header.sys_flag
        if flags & PullSysFlag.COMMIT_OFFSET and broker.topics.select(header.topic) is not None:
            broker.offsets.commit(header.consumer_group, header.topic, header.queue_id, header.commit_offset)
        result = self._get(header, tags_codes)
        code = self._code(header, result)
        if code == ResponseCode.PULL_NOT_FOUND and flags & PullSysFlag.SUSPEND and not broker.stopping:
            timeout_ms = (
                header.suspend_timeout_millis
                if broker.config.long_polling_enable
                else broker.config.short_polling_time_mills
            )
            result = await self._hold(header, tags_codes, result, timeout_ms / 1000)
            code = self._code(header, result)
        self.stats.record_group_get(
            header.topic, header.consumer_group, result.message_count, result.buffer_total_size
        )
        return self._response(request, header, result, code)

    def _check(
        self, ctx: RequestContext, request: RemotingCommand, header: PullMessageRequestHeader
    ) -> PullFilter:
        broker = self.broker
        config = broker.config
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
        group = broker.groups.find(header.consumer_group)
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
        topic = broker.topics.select(header.topic)
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
        if header.sys_flag & PullSysFlag.SUBSCRIPTION:
            expression_type = header.expression_type or EXPRESSION_TAG
            if not is_tag_type(expression_type):  # SQL92 carried by the pull (broker/filter/)
                return filter_from_header(
                    config,
                    self.filters,
                    header.topic,
                    header.consumer_group,
                    header.subscription,
                    expression_type,
                    header.sub_version,
                )
            sub = SubscriptionData.build(header.topic, header.subscription, header.sub_version)
            return tags_filter(sub)
        info = broker.clients.consumers.get(header.consumer_group)
        if info is None:
            raise PullRejected(
                ResponseCode.SUBSCRIPTION_NOT_EXIST,
                f"the consumer's group info not exist, group: {header.consumer_group}",
            )
        if info.is_broadcasting and not group.consume_broadcast_enable:
            raise PullRejected(
                ResponseCode.NO_PERMISSION,
                f"the consumer group[{header.consumer_group}] can not consume by broadcast way",
                FORBIDDEN_BROADCASTING,
            )
        registered = info.subscriptions.get(header.topic)
        if registered is None:
            raise PullRejected(
                ResponseCode.SUBSCRIPTION_NOT_EXIST,
                f"the consumer's subscription not exist, group: {header.consumer_group}",
            )
        if registered.sub_version < header.sub_version:
            raise PullRejected(
                ResponseCode.SUBSCRIPTION_NOT_LATEST,
                f"the consumer's subscription not latest, group: {header.consumer_group}",
            )
        if not is_tag_type(registered.expression_type):  # the heartbeat's SQL92 (broker/filter/)
            return filter_from_registered(
                config, self.filters, header.consumer_group, registered, header.sub_version
            )
        return tags_filter(registered)

    def _get(self, header: PullMessageRequestHeader, tags_codes: PullFilter) -> GetMessageResult:
        max_bytes = (
            header.max_msg_bytes if header.max_msg_bytes and header.max_msg_bytes > 0 else MAX_PULL_BYTES
        )
        # Tag codes go to the store as before; a SQL92 filter reads through it and keeps matches.
        start = time.perf_counter()
        result = get_message(
            self.broker.store,
            header.topic,
            header.queue_id,
            header.queue_offset,
            header.max_msg_nums,
            max_bytes,
            tags_codes,
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
        self,
        header: PullMessageRequestHeader,
        tags_codes: PullFilter,
        result: GetMessageResult,
        timeout_s: float,
    ) -> GetMessageResult:
        """Park the pull until a matching message arrives or the suspend time ends, then pull again."""
        hold = self.broker.hold
        arrived = trio.Event()
        held = hold.hold(header.topic, header.queue_id, header.queue_offset, tags_codes, arrived.set)
        self.held_total += 1
        try:
            with trio.move_on_after(max(timeout_s, 0.0)):
                await arrived.wait()
        finally:
            hold.release(header.topic, header.queue_id, held)
        return self._get(header, tags_codes)

    def _response(
        self,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        result: GetMessageResult,
        code: int,
    ) -> RemotingCommand:
        broker = self.broker
        next_begin = result.next_begin_offset
        if result.status in (GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.NO_MATCHED_LOGIC_QUEUE):
            next_begin = 0
        topic = broker.topics.select(header.topic)
        group = broker.groups.find(header.consumer_group, create=False)
        response_header = PullMessageResponseHeader(
            suggest_which_broker_id=0,
            next_begin_offset=next_begin,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
            topic_sys_flag=topic.topic_sys_flag if topic is not None else None,
            group_sys_flag=group.group_sys_flag if group is not None else None,
        )
        body = result.body() if code == ResponseCode.SUCCESS else b""
        return request.make_response(code, result.status.name, header=response_header, body=body)
