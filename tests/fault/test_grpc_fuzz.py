"""The gRPC port under hostile HTTP/2 and gRPC conversations (:mod:`tests.fault.grpc_fuzz`), on a
gateway subprocess: liveness checked as it goes (a real gRPC client still queries the route and
sends, a remoting client still sends and pulls), the server's RSS under a ceiling, no traceback and
no ERROR line in its log. Bounded: ``GRPC_FUZZ_EXAMPLES`` connections."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import grpc
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.fault import grpc_hostile
from tests.fault.grpc_fuzz import build_conversation, conversation_recipe, throw
from tests.fault.process import GatewayProcess
from tests.fault.wire import BlockingClient, pull_bodies, send_one

FUZZ_EXAMPLES = int(os.environ.get("GRPC_FUZZ_EXAMPLES", "400"))  # connections
LIVENESS_EVERY = 50  # connections between liveness checks
RSS_CEILING_BYTES = 512 * 1024 * 1024
SERVICE = "/apache.rocketmq.v2.MessagingService/"
METADATA = (("x-mq-client-id", "fuzz-liveness"), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v2"))
TOPIC = "FuzzLive"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    process = GatewayProcess(tmp_path_factory.mktemp("grpc-fuzz"), {"mappedFileSizeCommitLog": str(64 << 20)})
    process.start()
    try:
        assert process.grpc_addr, "the gateway announced no gRPC endpoint"
        yield process
    finally:
        process.stop()


def grpc_call(address: str, method: str, request: pb.Message, response_type: type[pb.Message]) -> object:
    with grpc.insecure_channel(address) as channel:
        rpc = channel.unary_unary(
            SERVICE + method,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response_type.FromString,
        )
        return rpc(request, metadata=METADATA, timeout=10)


class Tally:
    connections = 0
    live_checks = 0


def check_alive(gw: GatewayProcess) -> None:
    """A real gRPC client gets the route and sends; a remoting client sends and pulls."""
    assert gw.alive(), gw.log_tail()
    host, _, port = gw.grpc_addr.rpartition(":")
    endpoints = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host=host, port=int(port))])
    route = grpc_call(
        gw.grpc_addr, "QueryRoute", pb.QueryRouteRequest(topic=pb.Resource(name=TOPIC), endpoints=endpoints),
        pb.QueryRouteResponse,
    )  # fmt: skip
    assert isinstance(route, pb.QueryRouteResponse)
    assert route.status.code == pb.OK, route.status
    props = pb.SystemProperties(message_id=f"FUZZ{Tally.live_checks:08d}", message_type=pb.NORMAL)
    props.born_timestamp.FromMilliseconds(int(time.time() * 1000))
    request = pb.SendMessageRequest(
        messages=[pb.Message(topic=pb.Resource(name=TOPIC), body=b"live", system_properties=props)]
    )
    sent = grpc_call(gw.grpc_addr, "SendMessage", request, pb.SendMessageResponse)
    assert isinstance(sent, pb.SendMessageResponse)
    assert sent.status.code == pb.OK, sent.status
    body = f"live-{Tally.live_checks}".encode()
    with BlockingClient(gw.broker_addr) as client:
        queue, offset = send_one(client, TOPIC, body)
        assert pull_bodies(client, TOPIC, queue, offset)[:1] == [body]
    rss = gw.rss_bytes()
    assert rss < RSS_CEILING_BYTES, f"gateway RSS {rss} bytes"
    Tally.live_checks += 1


#: HTTP statuses grpc-java answers with grpc-status INTERNAL: its refusals of a request that is not
#: gRPC (content-type, method). Nothing else a client sends may get INTERNAL.
INTERNAL_ALLOWED_WITH = ("405", "415")
HOSTILE_ROUNDS = 3  # each case this many times: a refusal's log line is not repeated
GRPC_INTERNAL = "13"  # io.grpc.Status.Code.INTERNAL


def test_hostile_requests_are_answered_without_internal_or_errors(gateway: GatewayProcess) -> None:
    with BlockingClient(gateway.broker_addr) as client:  # the topic the liveness check uses
        send_one(client, TOPIC, b"first")
    started = time.monotonic()
    errors_before = len(gateway.error_lines())
    for _ in range(HOSTILE_ROUNDS):
        for name, build in grpc_hostile.CASES.items():
            request = build()
            answer = grpc_hostile.send(gateway.grpc_addr, request)
            if answer.grpc_status == GRPC_INTERNAL:
                assert answer.http_status in INTERNAL_ALLOWED_WITH, f"{name}: {answer.brief()}"
            kept = name != "16 KiB of metadata"  # past Netty's threshold the connection ends
            assert answer.connection_alive is kept, f"{name}: {answer.brief()}"
            answered = answer.http_status is not None or answer.reset is not None
            assert answered or request.reset or not kept, f"{name}: {answer.brief()}"
    assert time.monotonic() - started < 120
    assert gateway.alive(), gateway.log_tail()
    assert gateway.traceback_count() == 0, gateway.log_tail(60)
    assert len(gateway.error_lines()) == errors_before, "\n".join(gateway.error_lines()[-20:])
    check_alive(gateway)


@pytest.mark.slow
def test_fuzzed_conversations_on_the_grpc_port_never_take_the_gateway_down(gateway: GatewayProcess) -> None:
    with BlockingClient(gateway.broker_addr) as client:  # the topic exists before the first check
        send_one(client, TOPIC, b"first")
    check_alive(gateway)
    started = time.monotonic()
    answered = 0

    @settings(
        max_examples=FUZZ_EXAMPLES,
        phases=[Phase.generate],  # bounded: no shrinking, no replay database
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(recipe=conversation_recipe, read=st.integers(0, 9))
    def fuzz(recipe: tuple[int, int], read: int) -> None:
        nonlocal answered
        answered += throw(gateway.grpc_addr, build_conversation(recipe), read=read > 0) > 0
        Tally.connections += 1
        if Tally.connections % LIVENESS_EVERY == 0:
            check_alive(gateway)

    fuzz()
    check_alive(gateway)
    peak = gateway.peak_rss_bytes()
    errors = gateway.error_lines()
    print(
        f"\ngrpc fuzz: {Tally.connections} connections ({answered} answered) in "
        f"{time.monotonic() - started:.0f} s, {Tally.live_checks} liveness checks, RSS peak "
        f"{peak / 2**20:.0f} MiB, {len(errors)} ERROR lines, {gateway.traceback_count()} tracebacks"
    )
    assert Tally.connections >= FUZZ_EXAMPLES
    assert answered > FUZZ_EXAMPLES // 2  # the server spoke HTTP/2 back to most of them
    assert gateway.traceback_count() == 0, gateway.log_tail(60)
    assert errors == [], "\n".join(errors[:20])
    assert peak < RSS_CEILING_BYTES
