"""Sending messages: a :class:`SendRequest` in, a :class:`SendOutcome` out (``SendMessageProcessor``).

Mirrors ``SendMessageProcessor`` / ``AbstractSendMessageProcessor`` without their remoting: the
SEND_MESSAGE processor (:mod:`broker.processors.send`) and gRPC's SendMessage
(:mod:`broker.grpc.send`) both build a request and call :meth:`SendService.send`. The steps, in
Java's order:

1. checks (``msgCheck``): broker and topic write permission, topic name, topics no producer may
   send to, auto-creation from the default topic (``TBW102``) or of a retry topic, queue id range;
2. the records: a single message's properties get the broker's (``UNIQ_KEY`` if missing,
   ``MSG_REGION``, ``TRACE_ON``, ``CLUSTER``); a batch's inner messages keep their own and get
   the batch-level ones appended, as 5.x ``MessageExtEncoder.encodeBatch`` does;
3. a message sent to a retry topic may be redirected to the group's DLQ
   (``handleRetryAndDLQ``); a transactional one becomes a half message; 5.x timer properties or a
   positive ``DELAY`` level route it through the timer or ``SCHEDULE_TOPIC_XXXX``; a single
   message with a lite topic (``__LITE_TOPIC``) under a LITE topic is stored in that lite topic's
   LMQ queue (:mod:`broker.lite`) instead of a queue of the topic; with ``enableLmqQuota`` a
   message that would create an LMQ queue when the store holds ``maxLmqConsumeQueueNum`` of them
   is refused LMQ_QUOTA_EXCEEDED (``HookUtils.handleLmqQuota``);
4. the store put; under ``SYNC_FLUSH`` the answer waits for the fsync.

A failed check or a put the store refuses raises :class:`SendRefused` with the RocketMQ response
code and remark Java answers; the outcome of a stored send carries what both protocols answer
(the records' commit-log offsets, the queue and queue offset, the unique key, the recall handle).
The request, outcome and refusal types are in :mod:`broker.service.send_values`.

This module is on every send's path and compiled with mypyc (:mod:`gateway.native`): plain
``__slots__`` classes, no dataclasses.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Awaitable

from broker.controller import BrokerController
from broker.lite import PROPERTY_LITE_TOPIC, is_lite_topic, to_lmq_name
from broker.priority import priority_queue
from broker.schedule import apply_delay_level
from broker.service.send_values import BatchItem, SendOutcome, SendRefused, SendRequest
from broker.timer.service import (
    TIMER_OUT_MS,
    TIMER_TOPIC,
    TimerMessageError,
    route_timer_message_by_config,
)
from broker.topic_config_manager import (
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    TopicValidationError,
    dlq_topic,
    validate_topic,
)
from broker.transaction.bridge import HALF_TOPIC, to_half_message
from codec.bodies.register import PERM_READ, PERM_WRITE, TopicConfig
from codec.codes import ResponseCode
from codec.hashing import java_hashmap_order
from codec.message import MessageRecord, MessageSysFlag
from codec.properties import (
    CLUSTER,
    DELAY,
    MSG_REGION,
    POP_CK,
    PROPERTY_SEPARATOR,
    REAL_QID,
    REAL_TOPIC,
    TRACE_ON,
    TRAN_MSG,
    UNIQ_KEY,
    encode_properties,
)
from codec.recall_handle import RecallHandle
from store.results import PutMessageResult, PutMessageStatus

TOPIC_FILTER_MULTI_TAG = "MULTI_TAG"
LMQ_PREFIX = "%LMQ%"  # MixAll.LMQ_PREFIX: every LMQ queue, lite or not
LMQ_QUOTA_REMARK = "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]lmq consume queue num exceeded."  # handlePutMessageResult
_PROPERTIES_MAP_CAPACITY = 128  # MessageDecoder.string2messageProperties: new HashMap<>(128)
#: Topics a send may be stored in instead of its own; the answer names the real queue (REAL_QID).
_ROUTED_TOPICS = frozenset({SCHEDULE_TOPIC, HALF_TOPIC, TIMER_TOPIC})

#: The response code of each put status (``handlePutMessageResult``); any other is SYSTEM_ERROR.
PUT_STATUS_CODES = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
    PutMessageStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutMessageStatus.OS_PAGE_CACHE_BUSY: ResponseCode.SYSTEM_BUSY,
}
#: The codes of a stored message (the others are refusals).
STORED_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    }
)


def encode_java_order(props: dict[str, str]) -> str:
    """The properties string as the Java broker writes it: its ``HashMap(128)`` iteration order."""
    return encode_properties({k: props[k] for k in _java_order(tuple(props))})


@functools.lru_cache(maxsize=1024)  # a producer sends the same property names message after message
def _java_order(names: tuple[str, ...]) -> list[str]:
    return java_hashmap_order(list(names), _PROPERTIES_MAP_CAPACITY)


class SendService:
    """See the module docstring."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def send(self, request: SendRequest) -> SendOutcome | Awaitable[SendOutcome]:
        """The outcome, or under ``SYNC_FLUSH`` an awaitable of it (the put waits for its fsync);
        raises :class:`SendRefused`.

        Not a coroutine function on purpose: under ``ASYNC_FLUSH`` nothing waits, and a caller
        answers a plain return inline instead of starting a task for it."""
        topic_config, queue_id = self.check(request)
        if request.batch is not None:
            records, props_list, uniq_key = self._batch_records(
                request, request.batch, topic_config, queue_id
            )
            real_queue_id = records[0].queue_id
            recall_handle = None
        else:
            record, props = self._single_record(request, topic_config, queue_id)
            records, props_list, uniq_key = [record], [props], props[UNIQ_KEY]
            # A delayed message answers with the queue it will be delivered to, not the schedule queue.
            real_queue_id = int(props[REAL_QID]) if record.topic in _ROUTED_TOPICS else record.queue_id
            recall_handle = self._recall_handle(record, props)
        broker = self.broker
        result = broker.put_nowait(records, props_list)
        wait_flushed = broker.wait_flushed
        if wait_flushed is not None and result.ok:
            return self._after_flush(
                wait_flushed(result), records, result, real_queue_id, uniq_key, recall_handle
            )
        return self._outcome(records, result, real_queue_id, uniq_key, recall_handle)

    async def _after_flush(
        self,
        flushed: Awaitable[None],
        records: list[MessageRecord],
        result: PutMessageResult,
        queue_id: int,
        uniq_key: str | None,
        recall_handle: str | None,
    ) -> SendOutcome:
        await flushed
        return self._outcome(records, result, queue_id, uniq_key, recall_handle)

    def _recall_handle(self, record: MessageRecord, props: dict[str, str]) -> str | None:
        """``attachRecallHandle``: a message routed through the timer (not a retry) answers the
        handle that RECALL_MESSAGE takes back; its time is the slot plus one, "consider of floor"."""
        if record.topic != TIMER_TOPIC or props[REAL_TOPIC].startswith(RETRY_GROUP_TOPIC_PREFIX):
            return None
        timestamp = str(int(props[TIMER_OUT_MS]) + 1)
        return RecallHandle(
            props[REAL_TOPIC], self.broker.config.broker_name, timestamp, props[UNIQ_KEY]
        ).encode()

    def check(self, request: SendRequest) -> tuple[TopicConfig, int]:
        """``msgCheck``: the topic's config (auto-created if need be) and the queue id to store
        in; raises :class:`SendRefused`."""
        broker = self.broker
        topic = request.topic
        if not broker.config.broker_permission & PERM_WRITE and broker.topics.is_order_topic(topic):
            raise SendRefused(
                f"the broker[{broker.config.broker_ip1}] sending message is forbidden",
                response_code=ResponseCode.NO_PERMISSION,
            )
        try:
            validate_topic(topic)
        except TopicValidationError as err:
            raise SendRefused(str(err), response_code=ResponseCode.INVALID_PARAMETER) from None
        if broker.topics.is_not_allowed_send(topic):
            raise SendRefused(
                f"Sending message to topic[{topic}] is forbidden.", response_code=ResponseCode.NO_PERMISSION
            )
        topic_config = broker.topics.select(topic)
        if topic_config is None:
            topic_config = broker.topics.create_in_send(
                topic, request.default_topic, request.default_topic_queue_nums, 0
            )
            if topic_config is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                topic_config = broker.topics.create_if_absent(topic, 1, PERM_READ | PERM_WRITE)
            if topic_config is None:
                raise SendRefused(
                    f"topic[{topic}] not exist, apply first please!",
                    response_code=ResponseCode.TOPIC_NOT_EXIST,
                )
        if not topic_config.perm & PERM_WRITE:
            raise SendRefused(
                f"the topic[{topic}] sending message is forbidden", response_code=ResponseCode.NO_PERMISSION
            )
        queue_id = request.queue_id
        limit = max(topic_config.write_queue_nums, topic_config.read_queue_nums)
        if queue_id >= limit:
            raise SendRefused(
                f"request queueId[{queue_id}] is illegal, {topic_config} Producer: {request.remote_addr}",
                response_code=ResponseCode.INVALID_PARAMETER,
            )
        if queue_id < 0:
            queue_id = random.randrange(max(topic_config.write_queue_nums, 1))
        return topic_config, queue_id

    def check_batch(self, request: SendRequest) -> tuple[TopicConfig, int]:
        """:meth:`check` and a batch's own checks on its topic, which come before its items are
        looked at (for a caller whose items do not decode); raises :class:`SendRefused`."""
        checked = self.check(request)
        self._check_batch_topic(request.topic)
        return checked

    @staticmethod
    def _check_batch_topic(topic: str) -> None:
        if len(topic) > 127:
            raise SendRefused(
                f"message topic length too long {len(topic)}", response_code=ResponseCode.MESSAGE_ILLEGAL
            )
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise SendRefused(
                "batch request does not support retry group " + topic,
                response_code=ResponseCode.MESSAGE_ILLEGAL,
            )

    # -- records ---------------------------------------------------------------------------------

    def base_record(
        self, request: SendRequest, topic_config: TopicConfig, queue_id: int, body: bytes
    ) -> MessageRecord:
        """A record with what single and batch sends share: addresses, times and the sysFlag
        (plus MULTI_TAGS for topics whose filter type says so)."""
        broker = self.broker
        born_host, born_port = broker.client_address(request.remote_addr)
        sys_flag = request.sys_flag
        if topic_config.topic_filter_type == TOPIC_FILTER_MULTI_TAG:
            sys_flag |= MessageSysFlag.MULTI_TAGS_FLAG
        return MessageRecord(
            topic=request.topic,
            queue_id=queue_id,
            body=body,
            properties="",
            flag=request.flag,
            sys_flag=sys_flag,
            born_timestamp=request.born_timestamp,
            born_host=born_host,
            born_port=born_port,
            store_host=broker.store_host,
            store_port=broker.store_port,
            reconsume_times=request.reconsume_times,
        )

    def _stamp_broker_properties(self, props: dict[str, str]) -> None:
        """The properties the broker adds to every stored message (``MSG_REGION``, ``TRACE_ON``,
        ``CLUSTER``); a pop checkpoint property is never stored."""
        config = self.broker.config
        props[MSG_REGION] = config.region_id
        props[TRACE_ON] = "true" if config.trace_on else "false"
        props[CLUSTER] = config.broker_cluster_name
        props.pop(POP_CK, None)

    def _single_record(
        self, request: SendRequest, topic_config: TopicConfig, queue_id: int
    ) -> tuple[MessageRecord, dict[str, str]]:
        """The record to store and its properties (as stored, decoded: the store indexes them)."""
        broker = self.broker
        props = request.properties
        record = self.base_record(request, topic_config, queue_id, request.body)
        if record.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            self._retry_or_dlq(request, record, props)
        if UNIQ_KEY not in props:
            props[UNIQ_KEY] = broker.uniq_ids.next_id()
        record.queue_id = priority_queue(props, record.queue_id, topic_config.write_queue_nums)
        lite_topic = props.get(PROPERTY_LITE_TOPIC)
        if lite_topic and is_lite_topic(topic_config.attributes):
            # SendMessageProcessor: the lite topic's own LMQ queue (INNER_MULTI_DISPATCH there).
            lmq_name = to_lmq_name(request.topic, lite_topic)
            self._check_lmq_quota(lmq_name)
            record.topic, record.queue_id = lmq_name, 0
        self._stamp_broker_properties(props)
        if props.get(TRAN_MSG) == "true" and not (request.reconsume_times and props.get(DELAY)):
            if broker.config.reject_transaction_message:
                raise SendRefused(
                    f"the broker[{broker.config.broker_ip1}] sending transaction message is forbidden",
                    response_code=ResponseCode.NO_PERMISSION,
                )
            to_half_message(record, props)
            record.properties = encode_java_order(props)
            return record, props
        self._route_timer(record, props)
        apply_delay_level(record, props, broker.schedule.max_level)
        record.properties = encode_java_order(props)
        return record, props

    def _check_lmq_quota(self, lmq_name: str) -> None:
        """``HookUtils.handleLmqQuota``: with ``enableLmqQuota``, a message for an LMQ queue that
        does not exist yet is refused once the store holds ``maxLmqConsumeQueueNum`` LMQ queues
        (lite topics' and any other ``%LMQ%`` queue); counted only then, so a message for an
        existing lite topic costs one lookup."""
        store = self.broker.store
        config = store.config
        if not config.enable_lmq_quota or store.queues.find(lmq_name, 0) is not None:
            return
        count = sum(1 for cq in store.queues if cq.topic.startswith(LMQ_PREFIX))
        if count >= config.max_lmq_consume_queue_num:
            raise SendRefused(LMQ_QUOTA_REMARK, response_code=ResponseCode.LMQ_QUOTA_EXCEEDED)

    def _route_timer(self, record: MessageRecord, props: dict[str, str]) -> None:
        """5.x timer properties (``HookUtils.handleScheduleMessage``); see :mod:`broker.timer`."""
        try:
            route_timer_message_by_config(self.broker.config, record, props, self.broker.now_ms())
        except TimerMessageError as err:
            raise SendRefused(str(err), response_code=err.response_code) from None

    def _retry_or_dlq(self, request: SendRequest, record: MessageRecord, props: dict[str, str]) -> None:
        """``handleRetryAndDLQ``: a message sent to a retry topic goes to the group's DLQ once it was
        reconsumed too often, or when the group consumes orderly (holds queue locks)."""
        broker = self.broker
        group = record.topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        group_config = broker.groups.find(group)
        if group_config is None:
            raise SendRefused(
                f"subscription group not exist, {group}",
                response_code=ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            )
        max_times = group_config.retry_max_times
        if request.max_reconsume_times is not None:
            max_times = request.max_reconsume_times
        if request.reconsume_times > max_times or broker.locks.holds_any(group, broker.now_ms()):
            record.topic = dlq_topic(group)
            record.queue_id = 0
            broker.topics.create_if_absent(record.topic, 1, PERM_READ | PERM_WRITE)
            props[DELAY] = "-1"

    def _batch_records(
        self, request: SendRequest, items: list[BatchItem], topic_config: TopicConfig, queue_id: int
    ) -> tuple[list[MessageRecord], list[dict[str, str]], str | None]:
        """The inner records, their properties, and the batch-level UNIQ_KEY (a 5.x client's) that
        answers as the transaction id, as from the real broker (absent for 4.x batches)."""
        self._check_batch_topic(request.topic)
        if not items:
            raise SendRefused("empty batch", response_code=ResponseCode.MESSAGE_ILLEGAL)
        # Each inner message keeps its own properties string and gets the batch-level ones
        # appended, so a batch UNIQ_KEY from a 5.x client overrides the inner ones.
        batch_props = request.properties
        self._stamp_broker_properties(batch_props)
        suffix = encode_java_order(batch_props)
        batch_uniq = batch_props.get(UNIQ_KEY)
        template = self.base_record(request, topic_config, queue_id, b"")
        records = []
        props_list = []
        for item in items:
            props = item.properties
            own = item.properties_text
            if own is None:
                own = encode_properties(props)
            elif own and not own.endswith(PROPERTY_SEPARATOR):
                own += PROPERTY_SEPARATOR
            # own ends with a separator, so the stored string own + suffix decodes to own's
            # properties updated with the batch's: built here so the store need not parse it.
            if batch_uniq is None and UNIQ_KEY not in props:
                props[UNIQ_KEY] = self.broker.uniq_ids.next_id()
                own += encode_properties({UNIQ_KEY: props[UNIQ_KEY]})
            props.update(batch_props)
            records.append(
                MessageRecord(  # the template's fields, without recomputing hosts and flags per entry
                    topic=template.topic,
                    queue_id=queue_id,
                    body=item.body,
                    properties=own + suffix,
                    flag=item.flag,
                    sys_flag=template.sys_flag,
                    born_timestamp=template.born_timestamp,
                    born_host=template.born_host,
                    born_port=template.born_port,
                    store_host=template.store_host,
                    store_port=template.store_port,
                    reconsume_times=template.reconsume_times,
                )
            )
            props_list.append(props)
        return records, props_list, batch_uniq

    # -- outcome ---------------------------------------------------------------------------------

    def _outcome(
        self,
        records: list[MessageRecord],
        result: PutMessageResult,
        queue_id: int,
        uniq_key: str | None,
        recall_handle: str | None,
    ) -> SendOutcome:
        """``handlePutMessageResult``: the outcome of a stored put; raises :class:`SendRefused`
        with Java's code and remark for the others."""
        code = PUT_STATUS_CODES.get(result.status, ResponseCode.SYSTEM_ERROR)
        append = result.append_result
        if code not in STORED_CODES or append is None:
            remark = result.remark or result.status.name
            if result.status is PutMessageStatus.MESSAGE_ILLEGAL:
                remark = f"the message is illegal, maybe msg body or properties length not matched. {remark}"
            elif result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
                remark = (  # AbstractSendMessageProcessor / SendMessageProcessor.handlePutMessageResult
                    "service not available now. It may be caused by one of the following reasons: "
                    f"the broker's disk is full [{self.broker.store.disk_util()}], messages are put to "
                    "the slave, message store has been shut down, etc."
                )
            elif result.status is PutMessageStatus.CREATE_MAPPED_FILE_FAILED:
                remark = "create mapped file failed, server is busy or broken."
            raise SendRefused(remark, response_code=code)
        return SendOutcome(
            status=result.status,
            code=code,
            physical_offsets=[r.physical_offset for r in records],
            queue_id=queue_id,
            queue_offset=append.logics_offset,
            transaction_id=uniq_key,
            recall_handle=recall_handle,
        )
