"""SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and CONSUMER_SEND_MSG_BACK.

Mirrors ``SendMessageProcessor`` / ``AbstractSendMessageProcessor`` in the order of spec 3.1 and
3.6: validation, auto-creation, queue choice, retry/DLQ redirection, broker-added properties,
delay levels through ``SCHEDULE_TOPIC_XXXX`` (6.4), the store put, and the response fields the
client reads (``msgId``, ``queueId``, ``queueOffset``, ``transactionId`` plus ``MSG_REGION`` and
``TRACE_ON``, which keep ``extFields`` non-null even on errors).
"""

from __future__ import annotations

import logging
import random
from typing import Any

from broker.controller import BrokerController
from broker.topic_config_manager import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    TopicValidationError,
    dlq_topic,
    retry_topic,
    validate_topic,
)
from codec.batch import decode_batch
from codec.bodies.register import PERM_READ, PERM_WRITE, TopicConfig
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import MessageFormatError
from codec.hashing import java_hashmap_order
from codec.headers.client import ConsumerSendMsgBackRequestHeader
from codec.headers.send import SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader
from codec.message import MessageRecord, MessageSysFlag
from codec.message_id import encode_offset_msg_id
from codec.properties import (
    CLUSTER,
    DELAY,
    MAX_RECONSUME_TIMES,
    MSG_REGION,
    ORIGIN_MESSAGE_ID,
    POP_CK,
    PROPERTY_SEPARATOR,
    REAL_QID,
    REAL_TOPIC,
    RECONSUME_TIME,
    RETRY_TOPIC,
    TRACE_ON,
    TRAN_MSG,
    UNIQ_KEY,
    decode_properties,
    encode_properties,
)
from codec.versions import version_ordinal
from gateway.dispatch import Dispatcher, RequestContext
from store.results import PutMessageResult, PutMessageStatus

logger = logging.getLogger(__name__)

V3_4_9 = version_ordinal("V3_4_9")

FORBIDDEN_SEND_TOPICS = frozenset(
    {
        SCHEDULE_TOPIC,
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)
TOPIC_FILTER_MULTI_TAG = "MULTI_TAG"
_PROPERTIES_MAP_CAPACITY = 128  # MessageDecoder.string2messageProperties: new HashMap<>(128)

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


def _sys_flag(header: Any, topic_config: TopicConfig) -> int:
    """The header's sysFlag, plus MULTI_TAGS for topics whose filter type says so (spec 3.1 step 8)."""
    if topic_config.topic_filter_type == TOPIC_FILTER_MULTI_TAG:
        return int(header.sys_flag) | MessageSysFlag.MULTI_TAGS_FLAG
    return int(header.sys_flag)


class SendError(Exception):
    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


class SendMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.SEND_MESSAGE, self.send, SendMessageRequestHeader)
        dispatcher.register(RequestCode.SEND_MESSAGE_V2, self.send, SendMessageRequestHeaderV2)
        dispatcher.register(RequestCode.SEND_BATCH_MESSAGE, self.send, SendMessageRequestHeaderV2)
        dispatcher.register(
            RequestCode.CONSUMER_SEND_MSG_BACK, self.consumer_send_msg_back, ConsumerSendMsgBackRequestHeader
        )

    def _extras(self) -> dict[str, str]:
        config = self.broker.config
        return {MSG_REGION: config.region_id, TRACE_ON: "true" if config.trace_on else "false"}

    def _error(self, request: RemotingCommand, code: int, remark: str) -> RemotingCommand:
        return request.make_response(code, remark, header=self._extras())

    # -- SEND_MESSAGE / V2 / BATCH ---------------------------------------------------------------

    async def send(self, ctx: RequestContext, request: RemotingCommand, header: Any) -> RemotingCommand:
        try:
            topic_config, queue_id = self._check(ctx, request, header)
            if header.batch:
                records, batch_uniq = self._batch_records(ctx, request, header, topic_config, queue_id)
                result = await self.broker.messages.put(records)
                return self._response(request, records, result, records[0].queue_id, batch_uniq)
            record, props = self._single_record(ctx, request, header, topic_config, queue_id)
        except SendError as err:
            return self._error(request, err.code, err.remark)
        result = await self.broker.messages.put([record], properties=[props])
        # A delayed message answers with the queue it will be delivered to, not the schedule queue.
        real_queue_id = int(props[REAL_QID]) if record.topic == SCHEDULE_TOPIC else record.queue_id
        return self._response(request, [record], result, real_queue_id, props[UNIQ_KEY])

    def _check(self, ctx: RequestContext, request: RemotingCommand, header: Any) -> tuple[TopicConfig, int]:
        broker = self.broker
        topic: str = header.topic
        if not broker.config.broker_permission & PERM_WRITE and broker.topics.is_order_topic(topic):
            raise SendError(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker.config.broker_ip1}] sending message is forbidden",
            )
        try:
            validate_topic(topic)
        except TopicValidationError as err:
            raise SendError(ResponseCode.INVALID_PARAMETER, str(err)) from None
        if topic in FORBIDDEN_SEND_TOPICS:
            raise SendError(ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
        topic_config = broker.topics.select(topic)
        if topic_config is None:
            topic_config = broker.topics.create_in_send(
                topic, header.default_topic, header.default_topic_queue_nums, 0
            )
            if topic_config is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                topic_config = broker.topics.create_if_absent(topic, 1, PERM_READ | PERM_WRITE)
            if topic_config is None:
                raise SendError(
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"topic[{topic}] not exist, apply first please!",
                )
        if not topic_config.perm & PERM_WRITE:
            raise SendError(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        queue_id: int = header.queue_id
        limit = max(topic_config.write_queue_nums, topic_config.read_queue_nums)
        if queue_id >= limit:
            raise SendError(
                ResponseCode.INVALID_PARAMETER,
                f"request queueId[{queue_id}] is illegal, {topic_config} "
                f"Producer: {ctx.connection.remote_addr}",
            )
        if queue_id < 0:
            queue_id = random.randrange(max(topic_config.write_queue_nums, 1))
        return topic_config, queue_id

    def _base_record(
        self, ctx: RequestContext, header: Any, topic: str, queue_id: int, body: bytes, properties: str
    ) -> MessageRecord:
        broker = self.broker
        born_host, born_port = broker.client_address(ctx.connection.remote_addr)
        return MessageRecord(
            topic=topic,
            queue_id=queue_id,
            body=body,
            properties=properties,
            flag=header.flag,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=born_host,
            born_port=born_port,
            store_host=broker.store_host,
            store_port=broker.store_port,
            reconsume_times=header.reconsume_times or 0,
        )

    @staticmethod
    def _encode_java_order(props: dict[str, str]) -> str:
        """The properties string as the Java broker writes it: its ``HashMap(128)`` iteration order."""
        return encode_properties(
            {k: props[k] for k in java_hashmap_order(list(props), _PROPERTIES_MAP_CAPACITY)}
        )

    def _add_broker_properties(self, props: dict[str, str]) -> None:
        config = self.broker.config
        if UNIQ_KEY not in props:
            props[UNIQ_KEY] = self.broker.uniq_ids.next_id()
        props[MSG_REGION] = config.region_id
        props[TRACE_ON] = "true" if config.trace_on else "false"
        props[CLUSTER] = config.broker_cluster_name
        props.pop(POP_CK, None)

    def _single_record(
        self,
        ctx: RequestContext,
        request: RemotingCommand,
        header: Any,
        topic_config: TopicConfig,
        queue_id: int,
    ) -> tuple[MessageRecord, dict[str, str]]:
        """The record to store and its properties (as stored, decoded: the store indexes them)."""
        broker = self.broker
        props = decode_properties(header.properties)
        topic: str = header.topic
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            topic, queue_id = self._retry_or_dlq(request, header, topic, queue_id, props)
        sys_flag = _sys_flag(header, topic_config)
        self._add_broker_properties(props)
        if props.get(TRAN_MSG) == "true" and not (header.reconsume_times and props.get(DELAY)):
            if broker.config.reject_transaction_message:
                raise SendError(
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{broker.config.broker_ip1}] sending transaction message is forbidden",
                )
            raise SendError(ResponseCode.SYSTEM_ERROR, "transactional messages are not supported yet")
        record = self._base_record(ctx, header, topic, queue_id, bytes(request.body), "")
        record.sys_flag = sys_flag
        self._apply_delay(record, props)
        record.properties = self._encode_java_order(props)
        return record, props

    def _retry_or_dlq(
        self, request: RemotingCommand, header: Any, topic: str, queue_id: int, props: dict[str, str]
    ) -> tuple[str, int]:
        """Spec 3.1 step 7: a message sent to a retry topic may be redirected to the DLQ."""
        broker = self.broker
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        group_config = broker.groups.find(group)
        if group_config is None:
            raise SendError(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}"
            )
        max_times = group_config.retry_max_times
        if request.version > V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        reconsume = header.reconsume_times or 0
        if reconsume > max_times or broker.locks.holds_any(group, broker.now_ms()):
            dlq = dlq_topic(group)
            broker.topics.create_if_absent(dlq, 1, PERM_READ | PERM_WRITE)
            props[DELAY] = "-1"
            return dlq, 0
        return topic, queue_id

    def _apply_delay(self, record: MessageRecord, props: dict[str, str]) -> None:
        """Spec 6.4: a positive DELAY level sends the record through ``SCHEDULE_TOPIC_XXXX``."""
        text = props.get(DELAY)
        if not text:
            return
        try:
            level = int(text)
        except ValueError:
            return
        kind = MessageSysFlag.transaction_type(record.sys_flag)
        if level <= 0 or kind not in (
            MessageSysFlag.TRANSACTION_NOT_TYPE,
            MessageSysFlag.TRANSACTION_COMMIT_TYPE,
        ):
            return
        level = min(level, self.broker.schedule.max_level)
        props[DELAY] = str(level)
        props[REAL_TOPIC] = record.topic
        props[REAL_QID] = str(record.queue_id)
        record.properties = encode_properties(props)
        record.topic = SCHEDULE_TOPIC
        record.queue_id = level - 1

    def _batch_records(
        self,
        ctx: RequestContext,
        request: RemotingCommand,
        header: Any,
        topic_config: TopicConfig,
        queue_id: int,
    ) -> tuple[list[MessageRecord], str | None]:
        """The inner records, and the batch-level UNIQ_KEY (a 5.x client's) that answers as the
        response's ``transactionId``, as from the real broker (absent for 4.x batches)."""
        topic: str = header.topic
        if len(topic) > 127:
            raise SendError(ResponseCode.MESSAGE_ILLEGAL, f"message topic length too long {len(topic)}")
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise SendError(
                ResponseCode.MESSAGE_ILLEGAL, "batch request does not support retry group " + topic
            )
        try:
            entries = decode_batch(request.body)
        except MessageFormatError as err:
            raise SendError(ResponseCode.MESSAGE_ILLEGAL, f"bad batch body: {err}") from None
        if not entries:
            raise SendError(ResponseCode.MESSAGE_ILLEGAL, "empty batch")
        sys_flag = _sys_flag(header, topic_config)
        # As the 5.x broker (MessageExtEncoder.encodeBatch): each inner message keeps its own
        # properties string and gets the batch-level ones appended (the header's, plus region,
        # trace switch and cluster), so a batch UNIQ_KEY from a 5.x client overrides the inner ones.
        batch_props = decode_properties(header.properties)
        config = self.broker.config
        batch_props[MSG_REGION] = config.region_id
        batch_props[TRACE_ON] = "true" if config.trace_on else "false"
        batch_props[CLUSTER] = config.broker_cluster_name
        batch_props.pop(POP_CK, None)
        suffix = self._encode_java_order(batch_props)
        records = []
        for entry in entries:
            own = entry.properties
            if own and not own.endswith(PROPERTY_SEPARATOR):
                own += PROPERTY_SEPARATOR
            props = decode_properties(own)
            if UNIQ_KEY not in props and UNIQ_KEY not in batch_props:
                own += encode_properties({UNIQ_KEY: self.broker.uniq_ids.next_id()})
            record = self._base_record(ctx, header, topic, queue_id, entry.body, "")
            record.properties = own + suffix
            record.flag = entry.flag
            record.sys_flag = sys_flag
            records.append(record)
        return records, batch_props.get(UNIQ_KEY)

    def _response(
        self,
        request: RemotingCommand,
        records: list[MessageRecord],
        result: PutMessageResult,
        queue_id: int,
        uniq_key: str | None,
    ) -> RemotingCommand:
        code = _PUT_STATUS_CODES.get(result.status, ResponseCode.SYSTEM_ERROR)
        if code not in _OK_CODES or result.append_result is None:
            remark = result.remark or result.status.name
            if result.status is PutMessageStatus.MESSAGE_ILLEGAL:
                remark = f"the message is illegal, maybe msg body or properties length not matched. {remark}"
            return self._error(request, code, remark)
        broker = self.broker
        ids = ",".join(
            encode_offset_msg_id(broker.store_host, broker.store_port, r.physical_offset) for r in records
        )
        header = SendMessageResponseHeader(
            msg_id=ids,
            queue_id=queue_id,
            queue_offset=result.append_result.logics_offset,
            transaction_id=uniq_key,
        )
        fields = header.to_ext_fields()
        fields.update(self._extras())
        return request.make_response(code, None, header=fields)

    # -- CONSUMER_SEND_MSG_BACK ------------------------------------------------------------------

    async def consumer_send_msg_back(
        self, ctx: RequestContext, request: RemotingCommand, header: ConsumerSendMsgBackRequestHeader
    ) -> RemotingCommand:
        broker = self.broker
        group_config = broker.groups.find(header.group)
        if group_config is None:
            return request.make_response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {header.group}"
            )
        if not broker.config.broker_permission & PERM_WRITE:
            return request.make_response(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker.config.broker_ip1}] sending message is forbidden",
            )
        if group_config.retry_queue_nums <= 0:
            return request.make_response(ResponseCode.SUCCESS)
        original = broker.look_message(header.offset)
        if original is None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {header.offset}"
            )
        props = decode_properties(original.properties)
        props.setdefault(RETRY_TOPIC, original.topic)
        max_times = group_config.retry_max_times
        if request.version > V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        delay_level = header.delay_level
        if original.reconsume_times >= max_times or delay_level < 0:
            topic = dlq_topic(header.group)
            broker.topics.create_if_absent(topic, 1, PERM_READ | PERM_WRITE)
            queue_id = 0
            props.pop(DELAY, None)
        else:
            topic = retry_topic(header.group)
            config = broker.topics.create_if_absent(
                topic, group_config.retry_queue_nums, PERM_READ | PERM_WRITE
            )
            queue_id = random.randrange(max(config.write_queue_nums, 1))
            if delay_level == 0:
                delay_level = 3 + original.reconsume_times
            props[DELAY] = str(delay_level)
        if ORIGIN_MESSAGE_ID not in props:
            props[ORIGIN_MESSAGE_ID] = encode_offset_msg_id(
                original.store_host, original.store_port, original.physical_offset
            )
        props.pop(RECONSUME_TIME, None)
        props.pop(MAX_RECONSUME_TIMES, None)
        record = MessageRecord(
            topic=topic,
            queue_id=queue_id,
            body=original.body,
            properties=encode_properties(props),
            flag=original.flag,
            sys_flag=original.sys_flag,
            born_timestamp=original.born_timestamp,
            born_host=original.born_host,
            born_port=original.born_port,
            store_host=broker.store_host,
            store_port=broker.store_port,
            reconsume_times=original.reconsume_times + 1,
        )
        self._apply_delay(record, props)
        if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
            logger.info("message %s of group %s moved to %s", props.get(UNIQ_KEY), header.group, topic)
        result = await broker.messages.put([record])
        if result.ok:
            return request.make_response(ResponseCode.SUCCESS)
        return request.make_response(ResponseCode.SYSTEM_ERROR, result.status.name)
