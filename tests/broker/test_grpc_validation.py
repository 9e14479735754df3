"""The Proxy's request checks (broker.grpc.validation), called directly: no broker, no socket."""

from __future__ import annotations

import pytest

from broker.grpc import validation as v
from broker.grpc.common import StatusError
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from gateway.transport.grpc.status import GrpcError, StatusCode

CONFIG = GrpcServerConfig()
NOW = 1_700_000_000_000
DAY_MS = 24 * 3600 * 1000


def no_system(_topic: str) -> bool:
    return False


def refusal(fn: object, *args: object) -> tuple[int, str]:
    with pytest.raises(StatusError) as caught:
        fn(*args)  # type: ignore[operator]
    return caught.value.code, caught.value.message


def message(**system: object) -> pb.Message:
    props = system.pop("props", {})
    base = {"message_id": "0100AA", **system}
    return pb.Message(
        topic=pb.Resource(name="T"),
        body=b"x",
        user_properties=props,  # type: ignore[arg-type]
        system_properties=pb.SystemProperties(**base),  # type: ignore[arg-type]
    )


def send(msg: pb.Message) -> tuple[int, str]:
    return refusal(v.validate_send, pb.SendMessageRequest(messages=[msg]), no_system, CONFIG, NOW)


def accepted(msg: pb.Message) -> None:
    v.validate_send(pb.SendMessageRequest(messages=[msg]), no_system, CONFIG, NOW)


def test_control_characters_are_javas_iso_controls() -> None:
    assert v.contains_control_character("a\x00b")
    assert v.contains_control_character("\x1f")
    assert v.contains_control_character("\x7f")
    assert v.contains_control_character("\x9f")
    assert not v.contains_control_character("plain text 中文 \xa0")


def test_blank_is_javas_whitespace() -> None:
    assert v.is_blank("")
    assert v.is_blank(" \t\n\u2003")
    assert not v.is_blank("\xa0")  # a non-breaking space is no whitespace to Java


def test_topic_and_group_names() -> None:
    assert v.validate_topic(pb.Resource(name="Topic-1_%|"), no_system) == "Topic-1_%|"
    assert refusal(v.validate_topic, pb.Resource(name=" "), no_system) == (
        pb.ILLEGAL_TOPIC,
        "The specified topic is blank",
    )
    assert refusal(v.validate_topic, pb.Resource(name="a" * 128), no_system) == (
        pb.ILLEGAL_TOPIC,
        "The specified topic is longer than topic max length 127.",
    )
    assert refusal(v.validate_topic, pb.Resource(name="a b"), no_system) == (
        pb.ILLEGAL_TOPIC,
        "The specified topic[a b] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
    )
    assert refusal(v.validate_topic, pb.Resource(name="TBW102"), lambda t: t == "TBW102") == (
        pb.ILLEGAL_TOPIC,
        "cannot access system topic",
    )
    assert refusal(v.validate_consumer_group, pb.Resource(name="")) == (
        pb.ILLEGAL_CONSUMER_GROUP,
        "the specified group is blank",
    )
    assert refusal(v.validate_consumer_group, pb.Resource(name="CID_RMQ_SYS_x")) == (
        pb.ILLEGAL_CONSUMER_GROUP,
        "cannot use system consumer group",
    )
    v.validate_consumer_group(pb.Resource(name="g" * 255))


def test_tag_key_and_property_characters() -> None:
    assert send(message(tag=" ")) == (pb.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
    assert send(message(tag="a|b")) == (pb.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
    assert send(message(tag="a\x01b")) == (pb.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")
    assert send(message(keys=["a\x01b"])) == (pb.ILLEGAL_MESSAGE_KEY, "key cannot contain control character")
    assert send(message(keys=["  "])) == (
        pb.ILLEGAL_MESSAGE_KEY,
        "key cannot be the char sequence of whitespace",
    )
    assert send(message(props={"k\x02": "v"})) == (
        pb.ILLEGAL_MESSAGE_PROPERTY_KEY,
        "the key of property cannot contain control character",
    )
    assert send(message(props={"k": "v\n"})) == (
        pb.ILLEGAL_MESSAGE_PROPERTY_KEY,
        "the value of property cannot contain control character",
    )
    assert send(message(props={"TAGS": "v"})) == (
        pb.ILLEGAL_MESSAGE_PROPERTY_KEY,
        "property is used by system: TAGS",
    )
    accepted(message(tag="TagA", keys=["k1", "中文"], props={"a": "b"}))


def test_user_property_count_and_size() -> None:
    accepted(message(props={f"k{i}": "v" for i in range(128)}))
    assert send(message(props={f"k{i}": "v" for i in range(129)})) == (
        pb.MESSAGE_PROPERTIES_TOO_LARGE,
        "too many user properties, max is 128",
    )
    too_large = (
        pb.MESSAGE_PROPERTIES_TOO_LARGE,
        "the total size of user property is too large, max is 16384",
    )
    # The size counts property keys and values, the tag and the keys, in UTF-8 bytes.
    accepted(message(tag="t", keys=["k"], props={"p": "v" * (16 * 1024 - 3)}))
    assert send(message(tag="t", keys=["k"], props={"p": "v" * (16 * 1024 - 2)})) == too_large
    assert send(message(keys=["k" * (16 * 1024 + 1)])) == too_large
    assert send(message(tag="t" * (16 * 1024 + 1))) == too_large
    assert send(message(props={"p": "中" * 5462})) == too_large  # 16 386 bytes of 5 463 characters


def test_message_group_size_and_characters() -> None:
    accepted(message(message_group="g" * 63))
    assert send(message(message_group="g" * 64)) == (
        pb.ILLEGAL_MESSAGE_GROUP,
        "message group exceed the max size 64",
    )
    assert send(message(message_group="a\x03")) == (
        pb.ILLEGAL_MESSAGE_GROUP,
        "message group cannot contain control character",
    )


def test_delivery_time_and_timestamps() -> None:
    ahead = message()
    ahead.system_properties.delivery_timestamp.FromMilliseconds(NOW + DAY_MS)
    accepted(ahead)
    ahead.system_properties.delivery_timestamp.FromMilliseconds(NOW + DAY_MS + 1)
    assert send(ahead) == (
        pb.ILLEGAL_DELIVERY_TIME,
        "the max delay time of message is too large, max is 86400000",
    )
    ahead.system_properties.delivery_timestamp.seconds = 2**40
    assert send(ahead)[0] == pb.ILLEGAL_DELIVERY_TIME
    born = message()
    born.system_properties.born_timestamp.seconds = 2**40
    accepted(born)  # the Proxy drops a born timestamp that is not valid
    assert not v.timestamp_valid(born.system_properties.born_timestamp)


def test_transaction_recovery_duration() -> None:
    tx = message(message_type=pb.TRANSACTION)
    tx.system_properties.orphaned_transaction_recovery_duration.seconds = 3600
    accepted(tx)
    tx.system_properties.orphaned_transaction_recovery_duration.seconds = 3601
    assert send(tx) == (
        pb.BAD_REQUEST,
        "the max transaction recovery time of message is too large, max is 3600",
    )
    tx.system_properties.orphaned_transaction_recovery_duration.seconds = 2**62
    assert send(tx)[0] == pb.BAD_REQUEST


def test_send_request_shape() -> None:
    assert refusal(v.validate_send, pb.SendMessageRequest(), no_system, CONFIG, NOW) == (
        pb.MESSAGE_CORRUPTED,
        "no message to send",
    )
    other = message()
    other.topic.name = "U"
    request = pb.SendMessageRequest(messages=[message(), other])
    assert refusal(v.validate_send, request, no_system, CONFIG, NOW) == (
        pb.MESSAGE_CORRUPTED,
        "topic in message is not same",
    )
    assert send(
        pb.Message(topic=pb.Resource(name="T"), system_properties=pb.SystemProperties(message_id="x"))
    ) == (
        pb.MESSAGE_BODY_EMPTY,
        "message body cannot be empty",
    )
    assert send(message(message_id=" ")) == (pb.ILLEGAL_MESSAGE_ID, "message id cannot be empty")


def receive(**fields: object) -> pb.ReceiveMessageRequest:
    request = pb.ReceiveMessageRequest(
        group=pb.Resource(name="G"),
        message_queue=pb.MessageQueue(topic=pb.Resource(name="T")),
        batch_size=int(fields.pop("batch_size", 16)),  # type: ignore[call-overload]
    )
    request.invisible_duration.FromMilliseconds(int(fields.pop("invisible_ms", 15_000)))  # type: ignore[call-overload]
    if "poll_ms" in fields:
        request.long_polling_timeout.FromMilliseconds(int(fields.pop("poll_ms")))  # type: ignore[call-overload]
    return request


def test_receive_invisible_time_texts() -> None:
    assert refusal(v.validate_receive, receive(invisible_ms=9_999), no_system, CONFIG, {}) == (
        pb.ILLEGAL_INVISIBLE_TIME,
        "the invisibleTime is too small. min is 10000",
    )
    assert refusal(v.validate_receive, receive(invisible_ms=43_200_001), no_system, CONFIG, {}) == (
        pb.ILLEGAL_INVISIBLE_TIME,
        "the invisibleTime is too large. max is 43200000",
    )
    assert v.validate_receive(receive(invisible_ms=10_000), no_system, CONFIG, {})[1] == 10_000
    assert refusal(v.validate_receive, receive(batch_size=0), no_system, CONFIG, {})[0] == pb.BAD_REQUEST


def test_change_invisible_duration_texts() -> None:
    request = pb.ChangeInvisibleDurationRequest(topic=pb.Resource(name="T"), group=pb.Resource(name="G"))
    request.invisible_duration.FromMilliseconds(-1)
    assert refusal(v.validate_change_invisible_duration, request, no_system, CONFIG) == (
        pb.ILLEGAL_INVISIBLE_TIME,
        "the invisibleTime is too small. min is 0",
    )
    request.invisible_duration.FromMilliseconds(0)
    v.validate_change_invisible_duration(request, no_system, CONFIG)
    request.invisible_duration.seconds = 2**62
    assert (
        refusal(v.validate_change_invisible_duration, request, no_system, CONFIG)[0]
        == pb.ILLEGAL_INVISIBLE_TIME
    )


@pytest.mark.parametrize(
    ("poll_ms", "timeout", "expected"),
    [
        (10_000, "13000m", 10_000),  # the client's wish within the bounds and the deadline
        (1_000, "30S", 5_000),  # raised to the least
        (60_000, "90S", 20_000),  # lowered to the most
        (20_000, "8000m", 7_900),  # within the deadline, less the reserve
        (None, "23S", 20_000),  # none asked: the time left less half the request timeout, clamped
        (10_000, None, 10_000),  # no deadline
    ],
)
def test_long_polling_time(poll_ms: int | None, timeout: str | None, expected: int) -> None:
    request = receive() if poll_ms is None else receive(poll_ms=poll_ms)
    metadata = {} if timeout is None else {"grpc-timeout": timeout}
    settings = pb.Settings()
    settings.request_timeout.FromSeconds(3)
    assert v.validate_receive(request, no_system, CONFIG, metadata, settings)[0] == expected


def test_long_polling_deadline_too_short() -> None:
    text = "The deadline time remaining is not enough for polling, please check network condition"
    md = {"grpc-timeout": "4S"}
    assert refusal(v.validate_receive, receive(poll_ms=10_000), no_system, CONFIG, md, None, "5.0.8") == (
        pb.ILLEGAL_POLLING_TIME,
        text,
    )
    assert refusal(v.validate_receive, receive(poll_ms=10_000), no_system, CONFIG, md, None, "5.0.2") == (
        pb.BAD_REQUEST,
        text,
    )
    bad = receive()
    bad.long_polling_timeout.seconds = -(2**62)
    assert refusal(v.validate_receive, bad, no_system, CONFIG, {})[0] == pb.ILLEGAL_POLLING_TIME


def test_settings_and_heartbeat() -> None:
    with pytest.raises(GrpcError) as caught:
        v.validate_settings(
            pb.Settings(publishing=pb.Publishing(topics=[pb.Resource(name="a b")])), no_system
        )
    assert caught.value.code == StatusCode.INVALID_ARGUMENT
    assert caught.value.message.startswith(
        "process client telemetryCommand failed. The specified topic[a b]"
    )
    with pytest.raises(GrpcError) as caught:
        v.validate_settings(pb.Settings(), no_system)
    assert caught.value.message == "there is no publishing or subscription data in settings"
    v.validate_settings(pb.Settings(subscription=pb.Subscription(group=pb.Resource(name="G"))), no_system)
    assert (
        refusal(v.validate_heartbeat, pb.HeartbeatRequest(), pb.SIMPLE_CONSUMER)[0]
        == pb.ILLEGAL_CONSUMER_GROUP
    )
    v.validate_heartbeat(pb.HeartbeatRequest(), pb.PRODUCER)


def test_end_transaction() -> None:
    request = pb.EndTransactionRequest(topic=pb.Resource(name="T"), transaction_id=" ")
    assert refusal(v.validate_end_transaction, request, no_system) == (
        pb.INVALID_TRANSACTION_ID,
        "transaction id cannot be empty",
    )
