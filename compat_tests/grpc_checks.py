"""The Proxy's request checks on both targets: the official Java 5.x client's sends and receives
past each limit (``compat_tests/java/grpc5/src/rmqgrpc/Checks.java``, one JVM run for all of them),
long polling timed on both, and the inputs no client sends made with grpcio.

The tests take test_grpc_compat.py's ``grpc_target`` (which imports them), so they run on the
endpoints that module starts: no Proxy of their own. Where the Proxy has no check of an input and
fails inside (a timestamp or duration outside protobuf's range answers INTERNAL_SERVER_ERROR
there), both targets are asserted to refuse it, and ours with the field's code.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import grpc

from compat_tests.grpc_targets import GrpcTarget, create_topic, run_java
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

TOPICS = {
    "GrpcChecks": "",
    "GrpcChecksFifo": "+message.type=FIFO",
    "GrpcChecksDelay": "+message.type=DELAY",
    "GrpcChecksPoll": "",
    "GrpcChecksWake": "",
}
GROUP = "GrpcChecksGroup"
_ID = "[request-id=_, response-code="
ILLEGAL_CHARS = "contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
#: The Java client's outcome of each check (Checks.java), the Proxy's code and text in it.
EXPECTED = {
    "key_control": f"FAILED BadRequestException {_ID}40005] key cannot contain control character",
    "tag_control": f"FAILED BadRequestException {_ID}40004] tag cannot contain control character",
    "property_key_control": f"FAILED BadRequestException {_ID}40007]"
    " the key of property cannot contain control character",
    "property_value_control": f"FAILED BadRequestException {_ID}40007]"
    " the value of property cannot contain control character",
    "properties_128": "OK",
    "properties_129": f"FAILED RequestHeaderFieldsTooLargeException {_ID}43101]"
    " too many user properties, max is 128",
    "property_size_at_limit": "OK",
    "property_size_over": f"FAILED RequestHeaderFieldsTooLargeException {_ID}43101]"
    " the total size of user property is too large, max is 16384",
    "key_size_over": f"FAILED RequestHeaderFieldsTooLargeException {_ID}43101]"
    " the total size of user property is too large, max is 16384",
    "tag_size_over": f"FAILED RequestHeaderFieldsTooLargeException {_ID}43101]"
    " the total size of user property is too large, max is 16384",
    "tag_and_keys_at_limit": "OK",
    "message_group_63": "OK",
    "message_group_64": f"FAILED BadRequestException {_ID}40006] message group exceed the max size 64",
    "message_group_control": f"FAILED BadRequestException {_ID}40006]"
    " message group cannot contain control character",
    "delivery_23h": "OK",
    "delivery_25h": f"FAILED BadRequestException {_ID}40012]"
    " the max delay time of message is too large, max is 86400000",
    "invisible_9s": f"FAILED BadRequestException {_ID}40011] the invisibleTime is too small. min is 10000",
    "invisible_13h": f"FAILED BadRequestException {_ID}40011]"
    " the invisibleTime is too large. max is 43200000",
    "change_invisible_13h": f"FAILED BadRequestException {_ID}40011]"
    " the invisibleTime is too large. max is 43200000",
    "change_invisible_20s": "OK",
}


def test_java_client_meets_the_proxys_checks(grpc_target: GrpcTarget) -> None:
    """Each send and receive past a limit refused with the same exception and text on both, the
    ones at the limit accepted; an empty receive answers after the awaited 10 s and 20 s (±1 s,
    from the receive call's start) and a send during a receive ends it within 1 s of the send's
    acknowledgement. The three receives wait side by side while the checked sends are made, so
    the run takes about 20 s."""
    for topic, attributes in TOPICS.items():
        create_topic(grpc_target, topic, attributes)
    lines = run_java(grpc_target, "rmqgrpc.Checks", *TOPICS, GROUP)
    checks = {words[1]: words[2] for words in (line.split(" ", 2) for line in lines) if words[0] == "CHECK"}
    assert checks == EXPECTED, lines
    polls = {
        words[1]: (int(words[2]), int(words[3])) for words in map(str.split, lines) if words[0] == "POLL"
    }
    assert set(polls) == {"10", "20"}, lines
    for awaited, (elapsed_ms, count) in polls.items():
        assert count == 0, lines
        assert abs(elapsed_ms - int(awaited) * 1000) <= 1000, lines
    [wake] = [line.split() for line in lines if line.startswith("WAKE")]
    assert int(wake[1]) < 1000, lines
    assert wake[2] == "1", lines
    assert lines[-1] == "DONE", lines


def _endpoints(target: GrpcTarget) -> pb.Endpoints:
    host, port = target.grpc_addr.rsplit(":", 1)
    return pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host=host, port=int(port))])


def _message(topic: str, message_id: str, **system: Any) -> pb.Message:
    props = pb.SystemProperties(message_id=message_id, **system)
    return pb.Message(topic=pb.Resource(name=topic), body=b"raw", system_properties=props)


def _raw_checks(target: GrpcTarget) -> dict[str, tuple[str, str]]:
    """Requests past the checks, made with grpcio: each one's status code name and text."""
    metadata = [
        ("x-mq-client-id", "raw-checks-1"),
        ("x-mq-language", "JAVA"),
        ("x-mq-protocol", "v2"),
        ("x-mq-client-version", "5.0.8"),
    ]
    topic, group = pb.Resource(name="GrpcChecks"), pb.Resource(name=GROUP)
    out: dict[str, tuple[str, str]] = {}
    with grpc.insecure_channel(target.grpc_addr) as channel:

        def call(name: str, method: str, request: Any, response_type: Any) -> None:
            rpc = channel.unary_unary(
                "/apache.rocketmq.v2.MessagingService/" + method,
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=response_type.FromString,
            )
            answer = rpc(request, metadata=metadata, timeout=30)
            out[name] = (pb.Code.Name(answer.status.code), answer.status.message)

        def send(name: str, message: pb.Message) -> None:
            call(name, "SendMessage", pb.SendMessageRequest(messages=[message]), pb.SendMessageResponse)

        def receive(name: str, request: pb.ReceiveMessageRequest, timeout: float) -> None:
            rpc = channel.unary_stream(
                "/apache.rocketmq.v2.MessagingService/ReceiveMessage",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=pb.ReceiveMessageResponse.FromString,
            )
            answers = [a for a in rpc(request, metadata=metadata, timeout=timeout) if a.HasField("status")]
            out[name] = (pb.Code.Name(answers[0].status.code), answers[0].status.message)

        route = pb.QueryRouteRequest(topic=pb.Resource(name="a b"), endpoints=_endpoints(target))
        call("route_illegal_topic", "QueryRoute", route, pb.QueryRouteResponse)
        route = pb.QueryRouteRequest(topic=pb.Resource(name="TBW102"), endpoints=_endpoints(target))
        call("route_system_topic", "QueryRoute", route, pb.QueryRouteResponse)
        assignment = pb.QueryAssignmentRequest(
            topic=topic, group=pb.Resource(name="CID_RMQ_SYS_x"), endpoints=_endpoints(target)
        )
        call("assignment_system_group", "QueryAssignment", assignment, pb.QueryAssignmentResponse)
        ack = pb.AckMessageRequest(topic=topic, group=pb.Resource(name=" "), entries=[pb.AckMessageEntry()])
        call("ack_blank_group", "AckMessage", ack, pb.AckMessageResponse)
        change = pb.ChangeInvisibleDurationRequest(
            topic=topic, group=group, receipt_handle="x", message_id="x"
        )
        change.invisible_duration.FromMilliseconds(-1)
        call("change_negative", "ChangeInvisibleDuration", change, pb.ChangeInvisibleDurationResponse)
        forward = pb.ForwardMessageToDeadLetterQueueRequest(topic=pb.Resource(name="a b"), group=group)
        call(
            "forward_illegal_topic",
            "ForwardMessageToDeadLetterQueue",
            forward,
            pb.ForwardMessageToDeadLetterQueueResponse,
        )
        end = pb.EndTransactionRequest(topic=topic, transaction_id=" ")
        call("end_blank_transaction", "EndTransaction", end, pb.EndTransactionResponse)
        recall = pb.RecallMessageRequest(topic=pb.Resource(name="TBW102"), recall_handle="x")
        call("recall_system_topic", "RecallMessage", recall, pb.RecallMessageResponse)
        recovery = _message("GrpcChecks", "RAWCHECK01", message_type=pb.TRANSACTION)
        recovery.system_properties.orphaned_transaction_recovery_duration.FromSeconds(7200)
        send("send_recovery_2h", recovery)
        born = _message("GrpcChecks", "RAWCHECK02")
        born.system_properties.born_timestamp.seconds = 2**40
        send("send_born_invalid", born)
        delivery = _message("GrpcChecksDelay", "RAWCHECK03")
        delivery.system_properties.delivery_timestamp.seconds = 2**40
        send("send_delivery_invalid", delivery)
        subscription = pb.Subscription(
            group=group,
            subscriptions=[
                pb.SubscriptionEntry(
                    topic=pb.Resource(name="GrpcChecksPoll"),
                    expression=pb.FilterExpression(type=pb.TAG, expression="*"),
                )
            ],
        )
        consumer = pb.Settings(client_type=pb.SIMPLE_CONSUMER, subscription=subscription)
        consumer.request_timeout.FromSeconds(3)
        with _telemetry(channel, metadata, consumer) as answer:  # the Proxy receives for known clients
            out["telemetry_consumer"] = answer
            poll = pb.ReceiveMessageRequest(
                group=group,
                message_queue=pb.MessageQueue(topic=pb.Resource(name="GrpcChecksPoll")),
                filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
                batch_size=1,
            )
            poll.invisible_duration.FromSeconds(15)
            poll.long_polling_timeout.FromSeconds(10)
            receive("receive_short_deadline", poll, 4)
            poll.long_polling_timeout.seconds = -(2**62)
            receive("receive_invalid_polling", poll, 30)
        producer = [(k, "raw-checks-2" if k == "x-mq-client-id" else v) for k, v in metadata]
        publishing = pb.Publishing(topics=[pb.Resource(name="a b")])
        with _telemetry(
            channel, producer, pb.Settings(client_type=pb.PRODUCER, publishing=publishing)
        ) as answer:
            out["telemetry_illegal_topic"] = answer
    return out


@contextlib.contextmanager
def _telemetry(
    channel: grpc.Channel, metadata: list[tuple[str, str]], settings: pb.Settings
) -> Iterator[tuple[str, str]]:
    """A Telemetry stream sending ``settings``, open while the block runs: its first answer's
    status, or the stream's gRPC status when it ended."""
    done = threading.Event()

    def commands() -> Iterator[pb.TelemetryCommand]:
        yield pb.TelemetryCommand(settings=settings)
        done.wait(60)

    rpc = channel.stream_stream(
        "/apache.rocketmq.v2.MessagingService/Telemetry",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=pb.TelemetryCommand.FromString,
    )
    stream = rpc(commands(), metadata=metadata, timeout=90)
    try:
        try:
            first = next(stream)
            outcome = (pb.Code.Name(first.status.code), first.status.message)
        except grpc.RpcError as err:
            outcome = (err.code().name, err.details() or "")
        except StopIteration:
            outcome = ("ended", "")
        yield outcome
    finally:
        done.set()
        stream.cancel()


def test_raw_requests_meet_the_proxys_checks(grpc_target: GrpcTarget) -> None:
    """Requests no client sends, refused alike by both (the texts are the Proxy's)."""
    for topic, attributes in TOPICS.items():
        create_topic(grpc_target, topic, attributes)
    out = _raw_checks(grpc_target)
    illegal_topic = ("ILLEGAL_TOPIC", f"The specified topic[a b] {ILLEGAL_CHARS}")
    system_topic = ("ILLEGAL_TOPIC", "cannot access system topic")
    expected = {
        "route_illegal_topic": illegal_topic,
        "route_system_topic": system_topic,
        "recall_system_topic": system_topic,
        "forward_illegal_topic": illegal_topic,
        "assignment_system_group": ("ILLEGAL_CONSUMER_GROUP", "cannot use system consumer group"),
        "ack_blank_group": ("ILLEGAL_CONSUMER_GROUP", "the specified group is blank"),
        "change_negative": ("ILLEGAL_INVISIBLE_TIME", "the invisibleTime is too small. min is 0"),
        "end_blank_transaction": ("INVALID_TRANSACTION_ID", "transaction id cannot be empty"),
        "send_recovery_2h": (
            "BAD_REQUEST",
            "the max transaction recovery time of message is too large, max is 3600",
        ),
        "send_born_invalid": ("OK", "OK"),  # an invalid born timestamp is dropped
        "telemetry_consumer": ("OK", "OK"),
        "receive_short_deadline": (
            "ILLEGAL_POLLING_TIME",
            "The deadline time remaining is not enough for polling, please check network condition",
        ),
        "telemetry_illegal_topic": (
            "INVALID_ARGUMENT",
            f"process client telemetryCommand failed. The specified topic[a b] {ILLEGAL_CHARS}",
        ),
    }
    assert {name: out.get(name) for name in expected} == expected, out
    # The Proxy fails inside on these (INTERNAL_SERVER_ERROR); ours names the field.
    beyond = {name: answer for name, answer in out.items() if name not in expected}
    assert set(beyond) == {"send_delivery_invalid", "receive_invalid_polling"}, out
    assert "OK" not in {code for code, _text in beyond.values()}, out
    if grpc_target.name == "ours":
        assert beyond["send_delivery_invalid"][0] == "ILLEGAL_DELIVERY_TIME", out
        assert beyond["receive_invalid_polling"][0] == "ILLEGAL_POLLING_TIME", out
