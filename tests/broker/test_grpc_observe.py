"""What the gRPC door tells its observers and logs of each request (broker.grpc.observe), and the
one client identity both doors register clients under (broker.client_manager, broker.grpc.client):
no sockets, a fake call and a fake clock."""

from __future__ import annotations

import logging

import pytest

from broker.client_manager import ClientChannel, ClientManager
from broker.grpc.client import client_version_of, language_of
from broker.grpc.common import ClientContext, StatusError, unary
from broker.grpc.observe import CallRecorder, code_label, method_label
from codec.bodies.heartbeat import ConsumerData
from codec.codes import LanguageCode
from codec.errors import RocketMQError
from codec.versions import CURRENT_VERSION, version_ordinal
from gateway.transport.dispatch import ConnectionInfo
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from gateway.transport.grpc.status import GrpcError, StatusCode
from gateway.transport.log_limit import LogLimiter

SEND = "/apache.rocketmq.v2.MessagingService/SendMessage"
Observed = tuple[str, str, bool, str, float]


class FakeCall:
    """One unary call: the given request messages in, what the handler sends kept."""

    def __init__(self, *payloads: bytes, client_id: str = "c1") -> None:
        self.metadata = {"x-mq-client-id": client_id, "x-mq-language": "JAVA"}
        self.peer = "127.0.0.1:5000"
        self.connection_id = 7
        self._inbound = list(payloads)
        self.sent: list[bytes] = []

    async def receive(self) -> bytes | None:
        return self._inbound.pop(0) if self._inbound else None

    async def send(self, payload: bytes, *, flush: bool = True) -> None:
        self.sent.append(payload)

    def post(self, payload: bytes) -> bool:
        self.sent.append(payload)
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def recorder_with(clock: Clock) -> tuple[CallRecorder, list[Observed]]:
    seen: list[Observed] = []
    recorder = CallRecorder(clock, LogLimiter(logging.getLogger("test.grpc.observe"), clock=clock))
    recorder.observers.append(lambda *args: seen.append(args))
    return recorder, seen


def send_request(topic: str = "T") -> bytes:
    return pb.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name=topic))]).SerializeToString()


@pytest.mark.parametrize(
    ("method", "label"),
    [
        ("SendMessage", "send_message"),
        ("ReceiveMessage", "receive_message"),
        ("ForwardMessageToDeadLetterQueue", "forward_message_to_dead_letter_queue"),
        ("Heartbeat", "heartbeat"),
    ],
)
def test_methods_are_labelled_like_request_codes(method: str, label: str) -> None:
    assert method_label(method) == label


def test_codes_are_labelled_by_their_v2_name() -> None:
    assert code_label(pb.OK) == "ok"
    assert code_label(pb.UNAUTHORIZED) == "unauthorized"
    assert code_label(pb.TOO_MANY_REQUESTS) == "too_many_requests"
    assert code_label(99_999) == "99999"


async def test_an_answered_unary_call_is_observed_with_its_status_and_time() -> None:
    clock = Clock()
    recorder, seen = recorder_with(clock)

    def answer(_ctx: ClientContext, _request: pb.SendMessageRequest) -> pb.SendMessageResponse:
        clock.now += 0.004
        return pb.SendMessageResponse(status=pb.Status(code=pb.OK))

    handler = unary(pb.SendMessageRequest, pb.SendMessageResponse, answer, method=SEND, recorder=recorder)
    call = FakeCall(send_request())
    await handler(call)
    assert pb.SendMessageResponse.FromString(call.sent[0]).status.code == pb.OK
    assert seen == [("send_message", "ok", False, "success", pytest.approx(4.0))]
    assert recorder.statistics() == {"requests": 1, "refusals": 0}


async def test_refusals_are_observed_and_logged_once_per_kind_and_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    recorder, seen = recorder_with(clock)

    def deny(_ctx: ClientContext, _request: object) -> None:
        raise StatusError(pb.UNAUTHORIZED, "no such user")

    def throttle(_ctx: ClientContext, _request: pb.SendMessageRequest) -> pb.SendMessageResponse:
        raise RocketMQError("too busy", response_code=2)  # SYSTEM_BUSY

    denied = unary(
        pb.SendMessageRequest, pb.SendMessageResponse, throttle, deny, method=SEND, recorder=recorder
    )
    busy = unary(pb.SendMessageRequest, pb.SendMessageResponse, throttle, method=SEND, recorder=recorder)
    with caplog.at_level(logging.INFO, logger="test.grpc.observe"):
        for _ in range(50):
            call = FakeCall(send_request(), client_id="intruder")
            await denied(call)
            assert pb.SendMessageResponse.FromString(call.sent[0]).status.code == pb.UNAUTHORIZED
        await busy(FakeCall(send_request()))
        clock.now += 10.0
        await denied(FakeCall(send_request(), client_id="intruder"))
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "grpc: SendMessage from intruder@127.0.0.1:5000 refused (code unauthorized): no such user",
        "grpc: SendMessage from c1@127.0.0.1:5000 refused (code too_many_requests): too busy",
        "grpc: SendMessage from intruder@127.0.0.1:5000 refused (code unauthorized): no such user"
        " (49 more like it in the last 10 s)",
    ]
    assert [s[1] for s in seen] == ["unauthorized"] * 50 + ["too_many_requests", "unauthorized"]
    assert recorder.statistics() == {"requests": 52, "refusals": 52}


async def test_a_malformed_request_is_observed_as_failed_and_still_ends_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder, seen = recorder_with(Clock())
    handler = unary(
        pb.SendMessageRequest, pb.SendMessageResponse, lambda _c, _r: pb.SendMessageResponse(),
        method=SEND, recorder=recorder,
    )  # fmt: skip
    with caplog.at_level(logging.INFO, logger="test.grpc.observe"), pytest.raises(GrpcError) as raised:
        await handler(FakeCall(b"\xff\xff\xff"))
    assert raised.value.code == StatusCode.INVALID_ARGUMENT
    assert seen == [("send_message", "invalid_argument", False, "process_request_failed", 0.0)]
    assert len(caplog.records) == 1
    assert "refused (INVALID_ARGUMENT): malformed SendMessageRequest" in caplog.records[0].getMessage()


def test_without_observers_no_time_is_taken() -> None:
    def clock() -> float:
        raise AssertionError("the clock was read")

    recorder = CallRecorder(clock)
    recorder.answered("SendMessage", pb.OK, recorder.start())
    assert recorder.statistics()["requests"] == 1


@pytest.mark.parametrize(
    ("header", "language"),
    [
        ("JAVA", LanguageCode.JAVA),
        ("golang", LanguageCode.OTHER),
        ("python", LanguageCode.PYTHON),
        ("", LanguageCode.OTHER),
    ],
)
def test_the_language_header_is_a_language_code(header: str, language: LanguageCode) -> None:
    assert language_of(header) == language


def test_the_version_header_names_a_release_or_is_the_current_one() -> None:
    assert client_version_of("v5_0_8") == version_ordinal("V5_0_8")
    assert client_version_of("5.0.8") == CURRENT_VERSION  # what the Java 5.x client sends
    assert client_version_of("") == CURRENT_VERSION


def test_connections_of_either_door_are_distinct_keys_even_with_equal_numbers() -> None:
    """The tables key a channel by its ConnectionInfo: a remoting connection and a gRPC client
    never share a registration, whatever their numbers."""
    clients = ClientManager()
    remoting = ConnectionInfo(3, "127.0.0.1:1", "x")
    grpc_client = ConnectionInfo(3, "127.0.0.1:2", "")
    data = ConsumerData(group_name="g")
    assert clients.register_consumer(data, ClientChannel(remoting, "r", 0, 0, 1))
    assert clients.register_consumer(data, ClientChannel(grpc_client, "g", 0, 0, 1))
    assert sorted(clients.consumers["g"].client_ids()) == ["g", "r"]
    assert clients.remove_connection(grpc_client) == ["g"]
    assert clients.consumers["g"].client_ids() == ["r"]
    stale, changed = clients.expire(now_ms=10**9)
    assert (stale, changed) == ([remoting], ["g"])
