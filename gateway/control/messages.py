"""The stored messages of a topic as JSON, for a test to check what a producer stored.

Read through the store's own reader (:meth:`store.message_reader.MessageReader.get_message`, as a
pull reads them) from each queue's min offset: nothing is written, so no consumer's offset moves.
The messages come in store order (commit-log offset), across queues.
"""

from __future__ import annotations

import base64
import heapq
from typing import Any

from codec.errors import MessageFormatError
from codec.message import MessageRecord, decode_record
from codec.message_id import encode_offset_msg_id
from codec.properties import KEYS, TAGS, UNIQ_KEY, decode_properties
from store.message_reader import MessageReader
from store.results import GetMessageStatus

DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000  # a reply of that many small messages is some tens of MB of JSON
_BATCH = 64  # records per read of one queue


def queue_ids_of(store: MessageReader, topic: str) -> list[int]:
    """The queues of ``topic`` the store holds, in order."""
    return sorted(cq.queue_id for cq in store.queues if cq.topic == topic)


def read_queue(store: MessageReader, topic: str, queue_id: int, limit: int) -> list[MessageRecord]:
    """Up to ``limit`` records of one queue from its min offset."""
    records: list[MessageRecord] = []
    offset = store.get_min_offset_in_queue(topic, queue_id)
    max_offset = store.get_max_offset_in_queue(topic, queue_id)
    while len(records) < limit and offset < max_offset:
        result = store.get_message(topic, queue_id, offset, min(_BATCH, limit - len(records)))
        for data in result.buffers:
            try:
                records.append(decode_record(data))
            except MessageFormatError:
                continue  # a damaged record is skipped, as a pull would
        if result.next_begin_offset <= offset or result.status not in (
            GetMessageStatus.FOUND,
            GetMessageStatus.NO_MATCHED_MESSAGE,
            GetMessageStatus.OFFSET_FOUND_NULL,
            GetMessageStatus.MESSAGE_WAS_REMOVING,
        ):
            break
        offset = result.next_begin_offset
    return records


def stored_messages(store: MessageReader, topic: str, limit: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
    """The first ``limit`` messages of ``topic`` in store order, each as :func:`message_json`."""
    queues = [read_queue(store, topic, queue_id, limit) for queue_id in queue_ids_of(store, topic)]
    merged = heapq.merge(*queues, key=lambda record: record.physical_offset)
    return [message_json(record) for _, record in zip(range(limit), merged, strict=False)]


def message_json(record: MessageRecord) -> dict[str, Any]:
    """One record as the control endpoint shows it: ``msgId`` is the UNIQ_KEY a producer's
    ``SendResult.getMsgId()`` returns (the offset id when there is none), ``body`` the text when
    the body is UTF-8 (else ``None``), ``bodyBase64`` always; bodies the producer compressed are
    shown inflated."""
    properties = decode_properties(record.properties)
    offset_msg_id = encode_offset_msg_id(record.store_host, record.store_port, record.physical_offset)
    try:
        body = record.uncompressed_body()
    except MessageFormatError:
        body = record.body
    try:
        text: str | None = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {
        "topic": record.topic,
        "msgId": properties.get(UNIQ_KEY, offset_msg_id),
        "offsetMsgId": offset_msg_id,
        "queueId": record.queue_id,
        "queueOffset": record.queue_offset,
        "commitLogOffset": record.physical_offset,
        "keys": properties.get(KEYS),
        "tags": properties.get(TAGS),
        "properties": properties,
        "body": text,
        "bodyBase64": base64.b64encode(body).decode("ascii"),
        "bornTimestamp": record.born_timestamp,
        "storeTimestamp": record.store_timestamp,
        "reconsumeTimes": record.reconsume_times,
        "sysFlag": record.sys_flag,
    }
