"""A stored record as the 5.x clients see a message (``GrpcConverter.buildMessage``).

Used where the server hands a message to a client: a transaction check-back
(RecoverOrphanedTransactionCommand) here, received messages once POP is served. User properties
are every property but the system ones (``MessageConst.STRING_HASH_SET``); the body digest is
MD5 as the Proxy sends it. A priority message (5.5.0's ``GrpcConverter``) carries its type PRIORITY
and its ``priority``; a lite message its type LITE and its ``lite_topic``; the priority and lite
topic properties are system ones (5.5.0's ``STRING_HASH_SET``).
"""

from __future__ import annotations

import hashlib
import socket

from broker.grpc.namespace import resource_of
from broker.lite import PROPERTY_LITE_TOPIC
from broker.priority import PROPERTY_PRIORITY, message_priority
from codec.message import MessageRecord, MessageSysFlag
from codec.properties import decode_properties
from gateway.transport.address import join_address
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

# MessageConst.STRING_HASH_SET: the property names a client may not set and never sees as its own.
SYSTEM_PROPERTIES = frozenset(
    {
        "TRACE_ON", "MSG_REGION", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC",
        "REAL_QID", "TRAN_MSG", "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID",
        "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG", "CORRECTION_FLAG", "MQ2_FLAG", "RECONSUME_TIME",
        "UNIQ_KEY", "MAX_RECONSUME_TIMES", "CONSUME_START_TIME", "POP_CK", "POP_CK_OFFSET",
        "1ST_POP_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "DUP_INFO", "EXTEND_UNIQ_INFO", "INSTANCE_ID",
        "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER",
        "MSG_TYPE", "INNER_MULTI_QUEUE_OFFSET", "TIMER_DELAY_MS", "TIMER_DELAY_SEC",
        "TIMER_DELIVER_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES",
        "TIMER_OUT_MS", "TIMER_DEL_UNIQKEY", "TIMER_DELAY_LEVEL", "__BORNHOST", "BORN_TIMESTAMP",
        "DLQ_ORIGIN_TOPIC", "DLQ_ORIGIN_MESSAGE_ID", "__CRC32#", PROPERTY_PRIORITY,
        PROPERTY_LITE_TOPIC,
    }
)  # fmt: skip


def host_string(host: bytes, port: int) -> str:
    """``NetworkUtil.socketAddress2String``: ``host:port`` of record address bytes."""
    family = socket.AF_INET if len(host) == 4 else socket.AF_INET6
    return join_address(socket.inet_ntop(family, host), port)


def message_type_of_record(props: dict[str, str]) -> pb.MessageType:
    if props.get("TRAN_MSG") == "true":
        return pb.TRANSACTION
    if any(k in props for k in ("DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC")):
        return pb.DELAY
    if "__SHARDINGKEY" in props:
        return pb.FIFO
    if PROPERTY_PRIORITY in props:
        return pb.PRIORITY
    return pb.LITE if PROPERTY_LITE_TOPIC in props else pb.NORMAL


def to_message(record: MessageRecord, props: dict[str, str] | None = None) -> pb.Message:
    """``GrpcConverter.buildMessage`` of ``record`` (``props``: its properties, when decoded)."""
    props = decode_properties(record.properties) if props is None else props
    system = pb.SystemProperties(
        message_id=props.get("UNIQ_KEY", ""),
        body_digest=pb.Digest(type=pb.MD5, checksum=hashlib.md5(record.body).hexdigest().upper()),
        body_encoding=pb.GZIP if record.sys_flag & MessageSysFlag.COMPRESSED_FLAG else pb.IDENTITY,
        message_type=message_type_of_record(props),
        born_host=props.get("__BORNHOST") or host_string(record.born_host, record.born_port),
        store_host=host_string(record.store_host, record.store_port),
        queue_id=record.queue_id,
        queue_offset=record.queue_offset,
        delivery_attempt=record.reconsume_times + 1,
    )
    if "TAGS" in props:
        system.tag = props["TAGS"]
    if "KEYS" in props:
        system.keys.extend(props["KEYS"].split(" "))
    system.born_timestamp.FromMilliseconds(record.born_timestamp)
    system.store_timestamp.FromMilliseconds(record.store_timestamp)
    if "TIMER_DELIVER_MS" in props and props["TIMER_DELIVER_MS"].isdigit():
        system.delivery_timestamp.FromMilliseconds(int(props["TIMER_DELIVER_MS"]))
    if "__SHARDINGKEY" in props:
        system.message_group = props["__SHARDINGKEY"]
    priority = message_priority(props)
    if priority >= 0:
        system.priority = priority
    if PROPERTY_LITE_TOPIC in props:
        system.lite_topic = props[PROPERTY_LITE_TOPIC]
    if "TRACE_CONTEXT" in props:
        system.trace_context = props["TRACE_CONTEXT"]
    user = {k: v for k, v in props.items() if k not in SYSTEM_PROPERTIES}
    return pb.Message(
        topic=resource_of(record.topic), user_properties=user, system_properties=system, body=record.body
    )
