"""Put known messages into a running cluster for the network-mode tests: UPDATE_AND_CREATE_TOPIC
and SEND_MESSAGE_V2 over :class:`spark.remote.Connection`, as ``DefaultMQProducer`` sends them (one
message per request, a chosen queue), keeping what each send result says."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from codec.codes import RequestCode, ResponseCode
from codec.headers.admin import CreateTopicRequestHeader
from codec.headers.base import EmptyHeader
from codec.headers.client import UpdateConsumerOffsetRequestHeader
from codec.headers.send import SendMessageRequestHeaderV2, SendMessageResponseHeader
from codec.message_id import UniqIdGenerator
from codec.properties import encode_properties
from spark.remote import Connection, RemoteError, topic_routes


@dataclass(frozen=True)
class Sent:
    topic: str
    queue_id: int
    queue_offset: int
    msg_id: str  # the offset message id of the send result
    uniq_key: str
    body: bytes
    tags: str | None
    keys: str | None
    born_ms: int


def create_topic(broker_addr: str, topic: str, queues: int) -> None:
    header = CreateTopicRequestHeader(
        topic=topic, default_topic="TBW102", read_queue_nums=queues, write_queue_nums=queues, perm=6,
        topic_filter_type="SINGLE_TAG", order=False,
    )  # fmt: skip
    with Connection(broker_addr) as conn:
        response = conn.call(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
    assert response.code == ResponseCode.SUCCESS, response.remark


def wait_route(namesrv: str, topic: str, queues: int, timeout_s: float = 30.0) -> None:
    """Until the NameServer routes every queue of ``topic`` (brokers register topics asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if len(topic_routes(namesrv, topic)) >= queues:
                return
        except RemoteError:
            pass
        assert time.monotonic() < deadline, f"no route of {topic} after {timeout_s} s"
        time.sleep(0.2)


_ids = UniqIdGenerator()


def send(
    conn: Connection, broker: str, topic: str, queue_id: int, body: bytes, tags: str | None, keys: str | None
) -> Sent:
    uniq = _ids.next_id()
    props = {"UNIQ_KEY": uniq, "WAIT": "true"}
    if tags is not None:
        props["TAGS"] = tags
    if keys is not None:
        props["KEYS"] = keys
    born = int(time.time() * 1000)
    header = SendMessageRequestHeaderV2(
        producer_group="spark_net_producer", topic=topic, default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=queue_id, sys_flag=0, born_timestamp=born, flag=0, properties=encode_properties(props),
        reconsume_times=0, unit_mode=False, max_reconsume_times=16, batch=False, broker_name=broker,
    )  # fmt: skip
    response = conn.call(RequestCode.SEND_MESSAGE_V2, header, body)
    assert response.code == ResponseCode.SUCCESS, f"send failed: {response.code} {response.remark}"
    h = response.header(SendMessageResponseHeader)
    return Sent(topic, h.queue_id, h.queue_offset, h.msg_id, uniq, body, tags, keys, born)


def commit_offset(broker_addr: str, group: str, topic: str, queue_id: int, offset: int) -> None:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (the broker refuses offsets of unknown groups), then
    UPDATE_CONSUMER_OFFSET as a consumer's offset store persists it."""
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset
    )
    config = json.dumps({"groupName": group, "consumeEnable": True, "consumeBroadcastEnable": True}).encode()
    with Connection(broker_addr) as conn:
        created = conn.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, EmptyHeader(), config)
        assert created.code == ResponseCode.SUCCESS, created.remark
        response = conn.call(RequestCode.UPDATE_CONSUMER_OFFSET, header)
    assert response.code == ResponseCode.SUCCESS, response.remark
