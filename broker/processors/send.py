"""SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE (``SendMessageProcessor``).

Mirrors ``SendMessageProcessor`` / ``AbstractSendMessageProcessor``. A V2 header (one-letter keys)
is converted to the v1 header once, on arrival, as Java's ``parseRequestHeader`` does; everything
after works on :class:`SendMessageRequestHeader`. The steps, in Java's order:

1. checks (``msgCheck``): broker and topic write permission, topic name, topics no producer may
   send to, auto-creation from the default topic (``TBW102``) or of a retry topic, queue id range;
2. the records: a single message's properties get the broker's (``UNIQ_KEY`` if missing,
   ``MSG_REGION``, ``TRACE_ON``, ``CLUSTER``); a batch's inner messages keep their own and get
   the batch-level ones appended, as 5.x ``MessageExtEncoder.encodeBatch`` does;
3. a message sent to a retry topic may be redirected to the group's DLQ
   (``handleRetryAndDLQ``); a priority message goes to the queue of its priority
   (:mod:`broker.priority`); a positive ``DELAY`` level routes it through ``SCHEDULE_TOPIC_XXXX``;
4. the store put, and the response fields the client reads (``msgId``, ``queueId``,
   ``queueOffset``, ``transactionId``) plus ``MSG_REGION`` and ``TRACE_ON``, which keep
   ``extFields`` non-null even on errors.

A failed check or a put the store refuses raises :class:`SendError`, which the dispatcher
answers with its code and fields.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Awaitable

from broker.controller import BrokerController
from broker.priority import priority_queue
from broker.schedule import apply_delay_level
from broker.timer.service import TIMER_OUT_MS, TIMER_TOPIC, TimerMessageError, route_timer_message
from broker.topic_config_manager import (
    NOT_ALLOWED_SEND_TOPICS,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    TopicValidationError,
    dlq_topic,
    validate_topic,
)
from broker.transaction.bridge import HALF_TOPIC, to_half_message
from codec.batch import decode_batch
from codec.bodies.register import PERM_READ, PERM_WRITE, TopicConfig
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import MessageFormatError, RocketMQError
from codec.hashing import java_hashmap_order
from codec.headers.send import SendMessageRequestHeader, SendMessageRequestHeaderV2
from codec.message import MessageRecord, MessageSysFlag
from codec.message_id import encode_offset_msg_id
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
    decode_properties,
    encode_properties,
)
from codec.recall_handle import RecallHandle
from codec.versions import version_ordinal
from gateway.transport.dispatch import Dispatcher, RequestContext
from store.results import PutMessageResult, PutMessageStatus

logger = logging.getLogger(__name__)

#: Clients after 3.4.9 send their own ``maxReconsumeTimes`` (``SendMessageProcessor``).
V3_4_9 = version_ordinal("V3_4_9")
TOPIC_FILTER_MULTI_TAG = "MULTI_TAG"
_PROPERTIES_MAP_CAPACITY = 128  # MessageDecoder.string2messageProperties: new HashMap<>(128)
#: Topics a send may be stored in instead of its own; the answer names the real queue (REAL_QID).
_ROUTED_TOPICS = frozenset({SCHEDULE_TOPIC, HALF_TOPIC, TIMER_TOPIC})

_PUT_STATUS_CODES = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
    PutMessageStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutMessageStatus.OS_PAGE_CACHE_BUSY: ResponseCode.SYSTEM_BUSY,
}
_OK_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    }
)


class SendError(RocketMQError):
    """A send refused by a check or by the store: the code, the remark and the fields every send
    answer carries."""


def encode_java_order(props: dict[str, str]) -> str:
    """The properties string as the Java broker writes it: its ``HashMap(128)`` iteration order."""
    return encode_properties({k: props[k] for k in _java_order(tuple(props))})


@functools.lru_cache(maxsize=1024)  # a producer sends the same property names message after message
def _java_order(names: tuple[str, ...]) -> list[str]:
    return java_hashmap_order(list(names), _PROPERTIES_MAP_CAPACITY)


class SendMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.SEND_MESSAGE, self.send, SendMessageRequestHeader)
        dispatcher.register(RequestCode.SEND_MESSAGE_V2, self.send_v2, SendMessageRequestHeaderV2)
        dispatcher.register(RequestCode.SEND_BATCH_MESSAGE, self.send_v2, SendMessageRequestHeaderV2)

    def _extras(self) -> dict[str, str]:
        config = self.broker.config
        return {MSG_REGION: config.region_id, TRACE_ON: "true" if config.trace_on else "false"}

    def _refuse(self, code: int, remark: str) -> SendError:
        return SendError(remark, response_code=code, ext_fields=self._extras())

    # -- SEND_MESSAGE / V2 / BATCH ---------------------------------------------------------------

    def send_v2(
        self, ctx: RequestContext, request: RemotingCommand, header: SendMessageRequestHeaderV2
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        return self.send(ctx, request, header.to_v1())

    def send(
        self, ctx: RequestContext, request: RemotingCommand, header: SendMessageRequestHeader
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        """The answer, or under ``SYNC_FLUSH`` an awaitable of it (the put waits for its fsync).

        Not a coroutine function on purpose: under ``ASYNC_FLUSH`` nothing waits, and the
        connection answers a plain return inline instead of starting a task for it."""
        topic_config, queue_id = self._check(ctx, header)
        if header.batch:
            records, props_list, uniq_key = self._batch_records(ctx, request, header, topic_config, queue_id)
            real_queue_id = records[0].queue_id
            recall_handle = None
        else:
            record, props = self._single_record(ctx, request, header, topic_config, queue_id)
            records, props_list, uniq_key = [record], [props], props[UNIQ_KEY]
            # A delayed message answers with the queue it will be delivered to, not the schedule queue.
            real_queue_id = int(props[REAL_QID]) if record.topic in _ROUTED_TOPICS else record.queue_id
            recall_handle = self._recall_handle(record, props)
        result = self.broker.put_nowait(records, props_list)
        wait_flushed = self.broker.wait_flushed
        answer = (request, records, result, real_queue_id, uniq_key, recall_handle)
        if wait_flushed is not None and result.ok:
            return self._after_flush(wait_flushed(result), *answer)
        return self._response(*answer)

    def _recall_handle(self, record: MessageRecord, props: dict[str, str]) -> str | None:
        """``attachRecallHandle``: a message routed through the timer (not a retry) answers the
        handle that RECALL_MESSAGE takes back; its time is the slot plus one, "consider of floor"."""
        if record.topic != TIMER_TOPIC or props[REAL_TOPIC].startswith(RETRY_GROUP_TOPIC_PREFIX):
            return None
        timestamp = str(int(props[TIMER_OUT_MS]) + 1)
        return RecallHandle(
            props[REAL_TOPIC], self.broker.config.broker_name, timestamp, props[UNIQ_KEY]
        ).encode()

    async def _after_flush(
        self,
        flushed: Awaitable[None],
        request: RemotingCommand,
        records: list[MessageRecord],
        result: PutMessageResult,
        queue_id: int,
        uniq_key: str | None,
        recall_handle: str | None,
    ) -> RemotingCommand:
        await flushed
        return self._response(request, records, result, queue_id, uniq_key, recall_handle)

    def _check(self, ctx: RequestContext, header: SendMessageRequestHeader) -> tuple[TopicConfig, int]:
        broker = self.broker
        topic = header.topic
        if not broker.config.broker_permission & PERM_WRITE and broker.topics.is_order_topic(topic):
            raise self._refuse(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker.config.broker_ip1}] sending message is forbidden",
            )
        try:
            validate_topic(topic)
        except TopicValidationError as err:
            raise self._refuse(ResponseCode.INVALID_PARAMETER, str(err)) from None
        if topic in NOT_ALLOWED_SEND_TOPICS:
            raise self._refuse(ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
        topic_config = broker.topics.select(topic)
        if topic_config is None:
            topic_config = broker.topics.create_in_send(
                topic, header.default_topic, header.default_topic_queue_nums, 0
            )
            if topic_config is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                topic_config = broker.topics.create_if_absent(topic, 1, PERM_READ | PERM_WRITE)
            if topic_config is None:
                raise self._refuse(
                    ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!"
                )
        if not topic_config.perm & PERM_WRITE:
            raise self._refuse(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        queue_id = header.queue_id
        limit = max(topic_config.write_queue_nums, topic_config.read_queue_nums)
        if queue_id >= limit:
            raise self._refuse(
                ResponseCode.INVALID_PARAMETER,
                f"request queueId[{queue_id}] is illegal, {topic_config} "
                f"Producer: {ctx.connection.remote_addr}",
            )
        if queue_id < 0:
            queue_id = random.randrange(max(topic_config.write_queue_nums, 1))
        return topic_config, queue_id

    # -- records ---------------------------------------------------------------------------------

    def _base_record(
        self,
        ctx: RequestContext,
        header: SendMessageRequestHeader,
        topic_config: TopicConfig,
        queue_id: int,
        body: bytes,
    ) -> MessageRecord:
        """A record with what single and batch sends share: addresses, times and the sysFlag
        (plus MULTI_TAGS for topics whose filter type says so)."""
        broker = self.broker
        born_host, born_port = broker.client_address(ctx.connection.remote_addr)
        sys_flag = header.sys_flag
        if topic_config.topic_filter_type == TOPIC_FILTER_MULTI_TAG:
            sys_flag |= MessageSysFlag.MULTI_TAGS_FLAG
        return MessageRecord(
            topic=header.topic,
            queue_id=queue_id,
            body=body,
            properties="",
            flag=header.flag,
            sys_flag=sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=born_host,
            born_port=born_port,
            store_host=broker.store_host,
            store_port=broker.store_port,
            reconsume_times=header.reconsume_times or 0,
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
        self,
        ctx: RequestContext,
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        topic_config: TopicConfig,
        queue_id: int,
    ) -> tuple[MessageRecord, dict[str, str]]:
        """The record to store and its properties (as stored, decoded: the store indexes them)."""
        broker = self.broker
        props = decode_properties(header.properties)
        record = self._base_record(ctx, header, topic_config, queue_id, bytes(request.body))
        if record.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            self._retry_or_dlq(request, header, record, props)
        if UNIQ_KEY not in props:
            props[UNIQ_KEY] = broker.uniq_ids.next_id()
        record.queue_id = priority_queue(props, record.queue_id, topic_config.write_queue_nums)
        self._stamp_broker_properties(props)
        if props.get(TRAN_MSG) == "true" and not (header.reconsume_times and props.get(DELAY)):
            if broker.config.reject_transaction_message:
                raise self._refuse(
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{broker.config.broker_ip1}] sending transaction message is forbidden",
                )
            to_half_message(record, props)
            record.properties = encode_java_order(props)
            return record, props
        self._route_timer(record, props)
        apply_delay_level(record, props, broker.schedule.max_level)
        record.properties = encode_java_order(props)
        return record, props

    def _route_timer(self, record: MessageRecord, props: dict[str, str]) -> None:
        """5.x timer properties (``HookUtils.handleScheduleMessage``); see :mod:`broker.timer`."""
        config = self.broker.config
        try:
            route_timer_message(
                record,
                props,
                self.broker.now_ms(),
                max_delay_sec=config.timer_max_delay_sec,
                precision_ms=config.timer_precision_ms,
                wheel_enable=config.timer_wheel_enable,
            )
        except TimerMessageError as err:
            raise self._refuse(err.response_code, str(err)) from None

    def _retry_or_dlq(
        self,
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        record: MessageRecord,
        props: dict[str, str],
    ) -> None:
        """``handleRetryAndDLQ``: a message sent to a retry topic goes to the group's DLQ once it was
        reconsumed too often, or when the group consumes orderly (holds queue locks)."""
        broker = self.broker
        group = record.topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        group_config = broker.groups.find(group)
        if group_config is None:
            raise self._refuse(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}"
            )
        max_times = group_config.retry_max_times
        if request.version > V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        reconsume = header.reconsume_times or 0
        if reconsume > max_times or broker.locks.holds_any(group, broker.now_ms()):
            record.topic = dlq_topic(group)
            record.queue_id = 0
            broker.topics.create_if_absent(record.topic, 1, PERM_READ | PERM_WRITE)
            props[DELAY] = "-1"

    def _batch_records(
        self,
        ctx: RequestContext,
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        topic_config: TopicConfig,
        queue_id: int,
    ) -> tuple[list[MessageRecord], list[dict[str, str]], str | None]:
        """The inner records, their properties decoded, and the batch-level UNIQ_KEY (a 5.x
        client's) that answers as the response's ``transactionId``, as from the real broker
        (absent for 4.x batches)."""
        topic = header.topic
        if len(topic) > 127:
            raise self._refuse(ResponseCode.MESSAGE_ILLEGAL, f"message topic length too long {len(topic)}")
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise self._refuse(
                ResponseCode.MESSAGE_ILLEGAL, "batch request does not support retry group " + topic
            )
        try:
            entries = decode_batch(request.body)
        except MessageFormatError as err:
            raise self._refuse(ResponseCode.MESSAGE_ILLEGAL, f"bad batch body: {err}") from None
        if not entries:
            raise self._refuse(ResponseCode.MESSAGE_ILLEGAL, "empty batch")
        # Each inner message keeps its own properties string and gets the batch-level ones
        # appended, so a batch UNIQ_KEY from a 5.x client overrides the inner ones.
        batch_props = decode_properties(header.properties)
        self._stamp_broker_properties(batch_props)
        suffix = encode_java_order(batch_props)
        batch_uniq = batch_props.get(UNIQ_KEY)
        template = self._base_record(ctx, header, topic_config, queue_id, b"")
        records = []
        props_list = []
        for entry in entries:
            own = entry.properties
            if own and not own.endswith(PROPERTY_SEPARATOR):
                own += PROPERTY_SEPARATOR
            # own ends with a separator, so the stored string own + suffix decodes to own's
            # properties updated with the batch's: built here so the store need not parse it.
            props = decode_properties(own)
            if batch_uniq is None and UNIQ_KEY not in props:
                props[UNIQ_KEY] = self.broker.uniq_ids.next_id()
                own += encode_properties({UNIQ_KEY: props[UNIQ_KEY]})
            props.update(batch_props)
            records.append(
                MessageRecord(  # the template's fields, without recomputing hosts and flags per entry
                    topic=template.topic,
                    queue_id=queue_id,
                    body=entry.body,
                    properties=own + suffix,
                    flag=entry.flag,
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

    # -- response --------------------------------------------------------------------------------

    def _response(
        self,
        request: RemotingCommand,
        records: list[MessageRecord],
        result: PutMessageResult,
        queue_id: int,
        uniq_key: str | None,
        recall_handle: str | None = None,
    ) -> RemotingCommand:
        code = _PUT_STATUS_CODES.get(result.status, ResponseCode.SYSTEM_ERROR)
        if code not in _OK_CODES or result.append_result is None:
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
            raise self._refuse(code, remark)
        broker = self.broker
        host, port = broker.store_host, broker.store_port
        # SendMessageResponseHeader.to_ext_fields written out (per request): its keys in its order.
        fields = {
            "msgId": ",".join(encode_offset_msg_id(host, port, r.physical_offset) for r in records),
            "queueId": str(queue_id),
            "queueOffset": str(result.append_result.logics_offset),
        }
        if uniq_key is not None:
            fields["transactionId"] = uniq_key
        if recall_handle is not None:
            fields["recallHandle"] = recall_handle
        fields.update(self._extras())
        return request.make_response(code, None, header=fields)
