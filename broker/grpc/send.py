"""SendMessage: a 5.x client's messages through the broker's own send processor.

Mirrors ``SendMessageActivity`` (validation, the protobuf message to RocketMQ properties, the
queue choice, the answer per message), ``ProducerProcessor.sendMessage`` (the topic message type
check) and ``LocalMessageService.sendMessage``, which in local mode hands a SEND_MESSAGE command to
the broker's ``SendMessageProcessor``: so does this, so stored records are exactly a remoting
send's. Several messages in one request go as one batch, as ``LocalMessageService`` sends them:
a SEND_MESSAGE with ``batch`` set whose header carries the first message's properties (so, as on
the Proxy, the broker appends them to every inner message's: the first message's tag, keys and
id win), answered with one entry whose id is a new one of the batch's.
RecallMessage (``RecallMessageActivity``) hands RECALL_MESSAGE to the broker's processor likewise.
"""

from __future__ import annotations

import collections
import inspect
import itertools
from collections.abc import Sequence

from broker.controller import BrokerController
from broker.grpc.common import OK, ClientContext, StatusError, status
from broker.grpc.convert import SYSTEM_PROPERTIES
from broker.grpc.route import check_topic, topic_message_type
from broker.grpc.transaction import TransactionActivity, TransactionData
from broker.grpc.validation import timestamp_valid
from broker.processors.recall import RecallMessageProcessor
from broker.processors.send import SendMessageProcessor
from broker.timer.service import TIMER_DELIVER_MS
from broker.topic_config_manager import DEFAULT_TOPIC, DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from codec.batch import BatchEntry, encode_batch
from codec.bodies.register import PERM_WRITE
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import CodecError, RocketMQError
from codec.hashing import java_string_hash
from codec.headers.recall import RecallMessageRequestHeader
from codec.headers.send import SendMessageRequestHeader
from codec.message import MessageSysFlag
from codec.message_id import UniqIdGenerator, decode_offset_msg_id
from codec.properties import (
    CHECK_IMMUNITY_TIME_IN_SECONDS,
    DELAY,
    KEY_SEPARATOR,
    KEYS,
    PGROUP,
    RECONSUME_TIME,
    TAGS,
    TRAN_MSG,
    UNIQ_KEY,
    encode_properties,
)
from codec.recall_handle import RecallHandle
from gateway.transport.dispatch import ConnectionInfo, RequestContext
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

# MessageConst property names the Proxy sets.
SHARDING_KEY = "__SHARDINGKEY"
TRACE_CONTEXT = "TRACE_CONTEXT"
BORN_HOST = "__BORNHOST"
BORN_TIMESTAMP = "BORN_TIMESTAMP"
_TIMER_KEYS = (DELAY, TIMER_DELIVER_MS, "TIMER_DELAY_SEC", "TIMER_DELAY_MS")
DEFAULT_TOPIC_QUEUE_NUMS = 4  # the header's defaultTopicQueueNums (ProducerProcessor)
_PUT_STATUS: dict[int, pb.Code] = {  # SendMessageActivity.convertToSendMessageResponse
    ResponseCode.SUCCESS: pb.OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: pb.MASTER_PERSISTENCE_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: pb.SLAVE_PERSISTENCE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: pb.HA_NOT_AVAILABLE,
}


def message_properties(message: pb.Message, producer_group: str, remote_addr: str) -> dict[str, str]:
    """``SendMessageActivity.buildMessageProperty``; raises StatusError for what it refuses."""
    system = message.system_properties
    props = dict(message.user_properties)
    for key in props:
        if key in SYSTEM_PROPERTIES:
            raise StatusError(pb.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {key}")
    if system.HasField("tag"):  # checked: broker.grpc.validation.validate_tag
        props[TAGS] = system.tag
    for key in system.keys:
        if key and not key.strip():
            raise StatusError(pb.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
    if system.keys:
        props[KEYS] = KEY_SEPARATOR.join(system.keys)
    if not system.message_id.strip():
        raise StatusError(pb.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    props[UNIQ_KEY] = system.message_id
    if system.message_type == pb.TRANSACTION:
        props[TRAN_MSG] = "true"
        if system.HasField("orphaned_transaction_recovery_duration"):
            props[CHECK_IMMUNITY_TIME_IN_SECONDS] = str(system.orphaned_transaction_recovery_duration.seconds)
    if system.HasField("delivery_timestamp"):
        props[TIMER_DELIVER_MS] = str(system.delivery_timestamp.ToMilliseconds())
    props[RECONSUME_TIME] = str(system.delivery_attempt)
    props[PGROUP] = producer_group
    if system.HasField("message_group") and system.message_group:
        if not system.message_group.strip():
            raise StatusError(
                pb.ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace"
            )
        props[SHARDING_KEY] = system.message_group
    if system.trace_context:
        props[TRACE_CONTEXT] = system.trace_context
    born_host = system.born_host.strip() or remote_addr
    if born_host:
        props[BORN_HOST] = born_host
    if system.HasField("born_timestamp") and timestamp_valid(system.born_timestamp):  # else dropped
        props[BORN_TIMESTAMP] = str(system.born_timestamp.ToMilliseconds())
    return props


def message_type_of(props: dict[str, str]) -> str:
    """``TopicMessageType.parseFromMessageProperty``."""
    if props.get(TRAN_MSG) == "true":
        return "TRANSACTION"
    if any(k in props for k in _TIMER_KEYS):
        return "DELAY"
    return "FIFO" if SHARDING_KEY in props else "NORMAL"


def consistent_hash(value: int, buckets: int) -> int:
    """Guava's ``Hashing.consistentHash(long, int)`` (its linear congruential walk)."""
    state = value & 0xFFFFFFFFFFFFFFFF
    candidate = 0
    while True:
        state = (2862933555777941757 * state + 1) & 0xFFFFFFFFFFFFFFFF
        next_double = ((state >> 33) + 1) / 2**31
        following = int((candidate + 1) / next_double)
        if 0 <= following < buckets:
            candidate = following
        else:
            return candidate


class SendActivity:
    """SendMessage over :class:`SendMessageProcessor`; see the module docstring."""

    def __init__(self, broker: BrokerController, transactions: TransactionActivity | None = None) -> None:
        """``transactions`` learns the half message of each transactional send (for its end)."""
        self.broker = broker
        self.transactions = transactions
        self.processor = SendMessageProcessor(broker)
        self.recaller = RecallMessageProcessor(broker)
        self._round_robin: dict[str, itertools.count[int]] = collections.defaultdict(itertools.count)
        self._connections = itertools.count(1 << 47)
        self._batch_ids = UniqIdGenerator()  # MessageClientIDSetter.setUniqID(msgBatch)

    def _queue_id(self, request: pb.SendMessageRequest, topic: str, write_queues: int) -> int:
        """``SendMessageQueueSelector``: a single message's group hashes to a queue, else round robin."""
        if write_queues <= 0:
            raise StatusError(pb.FORBIDDEN, "no writable queue")
        group = request.messages[0].system_properties.message_group if len(request.messages) == 1 else ""
        if group:
            return consistent_hash(java_string_hash(group), write_queues)
        return next(self._round_robin[topic]) % write_queues

    async def send_message(
        self, ctx: ClientContext, request: pb.SendMessageRequest
    ) -> pb.SendMessageResponse:
        if not request.messages:
            raise StatusError(pb.MESSAGE_CORRUPTED, "no message to send")
        first = request.messages[0]
        name = check_topic(first.topic, self.broker.topics)
        topic = self.broker.topics.select(name)
        if topic is None:
            raise StatusError(pb.TOPIC_NOT_FOUND, f"No topic route info in name server for the topic: {name}")
        max_size = self.broker.config.max_message_size
        all_props = []
        for message in request.messages:
            if message.topic != first.topic:
                raise StatusError(pb.MESSAGE_CORRUPTED, "topic in message is not same")
            if not message.body:
                raise StatusError(pb.MESSAGE_BODY_EMPTY, "message body cannot be empty")
            if len(message.body) > max_size:
                raise StatusError(pb.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {max_size}")
            all_props.append(message_properties(message, name, ctx.remote_addr))
        if not name.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            expected, actual = topic_message_type(topic), message_type_of(all_props[0])
            if actual != expected and expected != "MIXED":
                raise StatusError(
                    pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                    f"TopicMessageType validate failed, the expected type is {expected},"
                    f" but actual type is {actual}",
                )
        sys_flag = 0
        if first.system_properties.body_encoding == pb.GZIP:
            sys_flag |= MessageSysFlag.COMPRESSED_FLAG
        if first.system_properties.message_type == pb.TRANSACTION:
            sys_flag |= MessageSysFlag.TRANSACTION_PREPARED_TYPE
        queue_id = self._queue_id(request, name, topic.write_queue_nums if topic.perm & PERM_WRITE else 0)
        connection = RequestContext(ConnectionInfo(next(self._connections), ctx.remote_addr, ""))
        entries = [
            await self._send_messages(connection, name, queue_id, sys_flag, request.messages, all_props)
        ]
        codes = {entry.status.code for entry in entries}
        overall = (
            OK if codes == {pb.OK} else status(pb.MULTIPLE_RESULTS) if len(codes) > 1 else entries[0].status
        )
        return pb.SendMessageResponse(status=overall, entries=entries)

    async def _send_messages(
        self,
        ctx: RequestContext,
        topic: str,
        queue_id: int,
        sys_flag: int,
        messages: Sequence[pb.Message],
        all_props: list[dict[str, str]],
    ) -> pb.SendResultEntry:
        """One message as a SEND_MESSAGE; several as ``LocalMessageService.sendMessage`` sends a
        ``MessageBatch``: the first one's properties and born time in the header, a new id."""
        first = all_props[0]
        if len(messages) == 1:
            body, message_id = messages[0].body, first[UNIQ_KEY]
            born, reconsume_times = self.broker.now_ms(), messages[0].system_properties.delivery_attempt
        else:
            pairs = zip(messages, all_props, strict=True)
            body = encode_batch([BatchEntry(0, m.body, encode_properties(p)) for m, p in pairs])
            message_id, reconsume_times = self._batch_ids.next_id(), 0
            stamp = first.get(BORN_TIMESTAMP, "")
            born = int(stamp) if stamp.isdigit() else self.broker.now_ms()
        header = SendMessageRequestHeader(
            producer_group=topic,
            topic=topic,
            default_topic=DEFAULT_TOPIC,
            default_topic_queue_nums=DEFAULT_TOPIC_QUEUE_NUMS,
            queue_id=queue_id,
            sys_flag=sys_flag,
            born_timestamp=born,
            flag=0,
            properties=encode_properties(first),
            reconsume_times=reconsume_times,
            batch=True if len(messages) > 1 else None,
        )
        return await self._send(ctx, header, body, message_id)

    async def _send(
        self, ctx: RequestContext, header: SendMessageRequestHeader, body: bytes, message_id: str
    ) -> pb.SendResultEntry:
        """The SEND_MESSAGE through the broker's processor, and its answer as a result entry."""
        topic, sys_flag = header.topic, header.sys_flag or 0
        command = RemotingCommand.request(RequestCode.SEND_MESSAGE, header, body=body)
        answer = self.processor.send(ctx, command, header)
        response = await answer if inspect.isawaitable(answer) else answer
        code = _PUT_STATUS.get(response.code)
        if code is None:
            # LocalMessageService: a failed send is a ProxyException(INTERNAL_SERVER_ERROR, remark).
            raise RocketMQError(response.remark or str(response.code))
        if code != pb.OK:
            return pb.SendResultEntry(status=status(code, f"send message failed, sendStatus={response.code}"))
        fields = response.ext_fields or {}
        transaction_id = fields.get("transactionId", "")
        prepared = sys_flag & MessageSysFlag.TRANSACTION_PREPARED_TYPE and transaction_id
        if prepared and self.transactions and "," not in fields.get("msgId", ""):  # not a batch
            # ProducerProcessor.fillTransactionData: where the half message is, for the end.
            _host, _port, commit_log_offset = decode_offset_msg_id(fields.get("msgId", ""))
            data = TransactionData(int(fields.get("queueOffset", "0")), commit_log_offset)
            self.transactions.remember(topic, transaction_id, data)
        return pb.SendResultEntry(
            status=OK,
            message_id=message_id,
            transaction_id=transaction_id,
            offset=int(fields.get("queueOffset", "0")),
            recall_handle=fields.get("recallHandle", ""),
        )

    async def recall_message(
        self, ctx: ClientContext, request: pb.RecallMessageRequest
    ) -> pb.RecallMessageResponse:
        """``RecallMessageActivity`` and ``ProducerProcessor.recallMessage``: the topic must take
        delayed messages; the broker's refusal comes back as INTERNAL_SERVER_ERROR with its remark
        (``LocalMessageService.recallMessage``), as does a handle that does not decode."""
        name = check_topic(request.topic, self.broker.topics)
        expected = topic_message_type(self.broker.topics.select(name))
        if expected not in ("DELAY", "MIXED"):  # DefaultTopicMessageTypeValidator
            raise StatusError(
                pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                f"TopicMessageType validate failed, the expected type is {expected},"
                " but actual type is DELAY",
            )
        try:
            handle = RecallHandle.decode(request.recall_handle)
        except CodecError as err:
            raise StatusError(pb.INTERNAL_SERVER_ERROR, str(err)) from None
        header = RecallMessageRequestHeader(
            topic=name, recall_handle=request.recall_handle, broker_name=handle.broker_name
        )
        connection = RequestContext(ConnectionInfo(next(self._connections), ctx.remote_addr, ""))
        command = RemotingCommand.request(RequestCode.RECALL_MESSAGE, header)
        try:
            response = await self.recaller.recall(connection, command, header)
        except RocketMQError as err:
            raise StatusError(pb.INTERNAL_SERVER_ERROR, str(err)) from None
        return pb.RecallMessageResponse(status=OK, message_id=(response.ext_fields or {}).get("msgId", ""))
