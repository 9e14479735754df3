"""SendMessage: a 5.x client's messages through the broker's send service.

Mirrors ``SendMessageActivity`` (validation, the protobuf message to RocketMQ properties, the
queue choice, the answer per message) and ``ProducerProcessor.sendMessage`` (the topic message type
check). The messages become a :class:`~broker.service.send_values.SendRequest` straight from protobuf
(the properties dict built once, the bodies as they came) for the same
:class:`~broker.service.send.SendService` a remoting send uses, so stored records are exactly a
remoting send's; its outcome becomes the result entry. Several messages in one request go as one
batch, as the Proxy's ``LocalMessageService`` sends them: the first message's properties are the
batch-level ones (so, as on the Proxy, the broker appends them to every inner message's: the
first message's tag, keys and id win), answered with one entry whose id is a new one of the
batch's. A transactional message's half-message position (queue offset, commit-log offset) comes
from the outcome, for the EndTransaction that follows. A ``priority`` becomes the priority
property as 5.5.0's Proxy sets it (``broker.priority`` places the message by it); a
``lite_topic``, checked as ``GrpcValidator.validateLiteTopic`` does, becomes ``__LITE_TOPIC`` (the
broker stores the message in that lite topic's queue: ``broker.lite``).
RecallMessage (``RecallMessageActivity``) adapts onto the same recall service as RECALL_MESSAGE.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Sequence

from broker.controller import BrokerController
from broker.grpc.common import OK, ClientContext, StatusError, status
from broker.grpc.convert import SYSTEM_PROPERTIES
from broker.grpc.route import check_topic, topic_message_type
from broker.grpc.transaction import TransactionActivity, TransactionData
from broker.grpc.validation import timestamp_valid
from broker.lite import LITE_TYPE, PROPERTY_LITE_TOPIC, lite_topic_problem
from broker.priority import PRIORITY_TYPE, PROPERTY_PRIORITY
from broker.service.recall import RecallRefused, RecallRequest, RecallService
from broker.service.send import SendService
from broker.service.send_values import BatchItem, SendOutcome, SendRequest
from broker.timer.service import TIMER_DELIVER_MS
from broker.topic_config_manager import DEFAULT_TOPIC, DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from codec.bodies.register import PERM_WRITE
from codec.codes import ResponseCode
from codec.errors import CodecError
from codec.hashing import java_string_hash
from codec.message import MessageSysFlag
from codec.message_id import UniqIdGenerator
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
)
from codec.recall_handle import RecallHandle
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

# MessageConst property names the Proxy sets.
SHARDING_KEY = "__SHARDINGKEY"
TRACE_CONTEXT = "TRACE_CONTEXT"
BORN_HOST = "__BORNHOST"
BORN_TIMESTAMP = "BORN_TIMESTAMP"
_TIMER_KEYS = (DELAY, TIMER_DELIVER_MS, "TIMER_DELAY_SEC", "TIMER_DELAY_MS")
NEGATIVE_PRIORITY = (  # what the 5.5.0 Proxy answers for a negative priority
    "The priority must be greater than or equal to 0. IllegalArgumentException."
    " org.apache.rocketmq.common.message.Message.setPriority(Message.java:161)"
)
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
    if system.HasField("priority"):
        props[PROPERTY_PRIORITY] = str(checked_priority(system.priority))
    props[RECONSUME_TIME] = str(system.delivery_attempt)
    props[PGROUP] = producer_group
    if system.HasField("message_group") and system.message_group:
        if not system.message_group.strip():
            raise StatusError(
                pb.ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace"
            )
        props[SHARDING_KEY] = system.message_group
    if system.HasField("lite_topic") and system.lite_topic:
        problem = lite_topic_problem(system.lite_topic)
        if problem is not None:
            raise StatusError(pb.ILLEGAL_LITE_TOPIC, problem)
        props[PROPERTY_LITE_TOPIC] = system.lite_topic
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
    if SHARDING_KEY in props:
        return "FIFO"
    if PROPERTY_PRIORITY in props:
        return PRIORITY_TYPE
    return LITE_TYPE if PROPERTY_LITE_TOPIC in props else "NORMAL"


def type_conflict(expected: str, actual: str) -> StatusError:
    """``DefaultTopicMessageTypeValidator``'s refusal as the Proxy answers it: the ProxyException
    reaches ``ResponseBuilder`` wrapped in a ``GrpcProxyException``, whose message is the wrapped
    exception's ``toString``, class name first (seen on the real 5.5.0 Proxy)."""
    return StatusError(
        pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
        "org.apache.rocketmq.proxy.common.ProxyException: TopicMessageType validate failed,"
        f" the expected type is {expected}, but actual type is {actual}",
    )


def checked_priority(priority: int) -> int:
    """``Message.setPriority``: a negative priority is refused with its IllegalArgumentException,
    which the Proxy's ``ResponseBuilder`` answers as an internal error with the exception's
    message, class and first stack frame (``ExceptionUtils.getErrorDetailMessage``)."""
    if priority < 0:
        raise StatusError(pb.INTERNAL_SERVER_ERROR, NEGATIVE_PRIORITY)
    return priority


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
    """SendMessage over :class:`SendService`; see the module docstring."""

    def __init__(
        self,
        broker: BrokerController,
        transactions: TransactionActivity | None = None,
        service: SendService | None = None,
        recalls: RecallService | None = None,
    ) -> None:
        """``transactions`` learns the half message of each transactional send (for its end);
        ``service`` and ``recalls``: the broker's send and recall services (default: own ones)."""
        self.broker = broker
        self.transactions = transactions
        self.service = service if service is not None else SendService(broker)
        self.recalls = recalls if recalls is not None else RecallService(broker)
        self._round_robin: dict[str, itertools.count[int]] = collections.defaultdict(itertools.count)
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
                raise type_conflict(expected, actual)
        sys_flag = 0
        if first.system_properties.body_encoding == pb.GZIP:
            sys_flag |= MessageSysFlag.COMPRESSED_FLAG
        if first.system_properties.message_type == pb.TRANSACTION:
            sys_flag |= MessageSysFlag.TRANSACTION_PREPARED_TYPE
        queue_id = self._queue_id(request, name, topic.write_queue_nums if topic.perm & PERM_WRITE else 0)
        entries = [await self._send_messages(ctx, name, queue_id, sys_flag, request.messages, all_props)]
        codes = {entry.status.code for entry in entries}
        overall = (
            OK if codes == {pb.OK} else status(pb.MULTIPLE_RESULTS) if len(codes) > 1 else entries[0].status
        )
        return pb.SendMessageResponse(status=overall, entries=entries)

    async def _send_messages(
        self,
        ctx: ClientContext,
        topic: str,
        queue_id: int,
        sys_flag: int,
        messages: Sequence[pb.Message],
        all_props: list[dict[str, str]],
    ) -> pb.SendResultEntry:
        """One message as one send; several as ``LocalMessageService.sendMessage`` sends a
        ``MessageBatch``: the first one's properties and born time for the batch, a new id."""
        first = all_props[0]
        request = SendRequest(
            topic=topic,
            queue_id=queue_id,
            properties=first,
            sys_flag=sys_flag,
            producer_group=topic,
            default_topic=DEFAULT_TOPIC,
            default_topic_queue_nums=DEFAULT_TOPIC_QUEUE_NUMS,
            remote_addr=ctx.remote_addr,
        )
        if len(messages) == 1:
            message_id = first[UNIQ_KEY]
            request.body = messages[0].body
            request.born_timestamp = self.broker.now_ms()
            request.reconsume_times = messages[0].system_properties.delivery_attempt
        else:
            message_id = self._batch_ids.next_id()
            stamp = first.get(BORN_TIMESTAMP, "")
            request.born_timestamp = int(stamp) if stamp.isdigit() else self.broker.now_ms()
            # The batch-level properties are a copy: the first item keeps its own dict.
            request.properties = dict(first)
            request.batch = [BatchItem(m.body, 0, p) for m, p in zip(messages, all_props, strict=True)]
        answer = self.service.send(request)
        outcome = answer if isinstance(answer, SendOutcome) else await answer
        code = _PUT_STATUS[outcome.code]
        if code != pb.OK:
            return pb.SendResultEntry(
                status=status(code, f"send message failed, sendStatus={int(outcome.code)}")
            )
        transaction_id = outcome.transaction_id or ""
        prepared = sys_flag & MessageSysFlag.TRANSACTION_PREPARED_TYPE and transaction_id
        if prepared and self.transactions and len(outcome.physical_offsets) == 1:  # not a batch
            # ProducerProcessor.fillTransactionData: where the half message is, for the end.
            data = TransactionData(outcome.queue_offset, outcome.physical_offsets[0])
            self.transactions.remember(topic, transaction_id, data)
        return pb.SendResultEntry(
            status=OK,
            message_id=message_id,
            transaction_id=transaction_id,
            offset=outcome.queue_offset,
            recall_handle=outcome.recall_handle or "",
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
            raise type_conflict(expected, "DELAY")
        try:
            RecallHandle.decode(request.recall_handle)  # the Proxy decodes it to find the broker
        except CodecError as err:
            raise StatusError(pb.INTERNAL_SERVER_ERROR, str(err)) from None
        try:
            outcome = await self.recalls.recall(
                RecallRequest(name, request.recall_handle, remote_addr=ctx.remote_addr)
            )
        except RecallRefused as err:
            raise StatusError(pb.INTERNAL_SERVER_ERROR, str(err)) from None
        return pb.RecallMessageResponse(status=OK, message_id=outcome.message_id)
