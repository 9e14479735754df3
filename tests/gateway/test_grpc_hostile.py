"""The hostile requests of :mod:`tests.fault.grpc_hostile` against the gRPC server: each answered as
the real Proxy's grpc-java server answers it (docs/grpc.md, "Hostile requests"), never with a
traceback, and with at most one log line."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
from google.protobuf.message import DecodeError

from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.connection import ServerCall, unary
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from gateway.transport.grpc.server import GrpcServer
from gateway.transport.grpc.status import GrpcError, StatusCode
from tests.fault import grpc_hostile
from tests.fault.grpc_hostile import CASES, EXTRA_STREAMS, QUERY_ROUTE, Answer
from tests.helpers import wait_until

OK, INVALID_ARGUMENT, UNIMPLEMENTED, INTERNAL = "0", "3", "12", "13"
REFUSED_STREAM = 7

#: case: (HTTP status, grpc-status, connection kept), as the real Proxy answers but where
#: docs/grpc.md says ours differs on purpose.
EXPECTED: dict[str, tuple[str | None, str | None, bool]] = {
    "unparsable protobuf": ("200", INVALID_ARGUMENT, True),
    "content-type text/html": ("415", INTERNAL, True),
    "content-type missing": ("415", INTERNAL, True),
    "method GET": ("405", INTERNAL, True),
    "te: gzip": ("200", OK, True),
    "te missing": ("200", OK, True),
    "grpc-encoding gzip, gzip body": ("200", OK, True),
    "grpc-encoding snappy": ("200", UNIMPLEMENTED, True),
    "compressed flag, no grpc-encoding": ("200", UNIMPLEMENTED, True),
    "gzip body that is not gzip": ("200", INVALID_ARGUMENT, True),
    f"{EXTRA_STREAMS} streams at once": (None, None, True),
    "9 KiB of metadata": ("431", "8", True),
    "16 KiB of metadata": (None, None, False),
    "method GET, reset at once": (None, None, True),
    "call reset at once": (None, None, True),
}


async def _route(request: bytes, call: ServerCall) -> bytes:
    try:
        parsed = pb.QueryRouteRequest.FromString(request)
    except DecodeError as err:
        raise GrpcError(StatusCode.INVALID_ARGUMENT, f"malformed QueryRouteRequest: {err}") from None
    return pb.QueryRouteResponse(status=pb.Status(message=parsed.topic.name)).SerializeToString()


@asynccontextmanager
async def serving(max_connections: int = 20000) -> AsyncIterator[GrpcServer]:
    config = GrpcServerConfig(grpc_server_port=0, max_connections=max_connections)
    server = GrpcServer({QUERY_ROUTE: unary(_route)}, config)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        yield server
        await server.shutdown()
        nursery.cancel_scope.cancel()


async def _send(server: GrpcServer, case: str) -> Answer:
    return await trio.to_thread.run_sync(grpc_hostile.send, f"127.0.0.1:{server.port}", CASES[case]())


def test_every_case_has_an_expectation() -> None:
    assert set(EXPECTED) == set(CASES)


@pytest.mark.parametrize("case", list(EXPECTED))
async def test_hostile_request_answered_as_grpc_java(case: str, caplog: pytest.LogCaptureFixture) -> None:
    http_status, grpc_status, kept = EXPECTED[case]
    with caplog.at_level(logging.DEBUG, logger="gateway"):
        async with serving() as server:
            answer = await _send(server, case)
    assert answer.connection_alive is kept, answer.brief()
    if http_status is not None:
        assert (answer.http_status, answer.grpc_status) == (http_status, grpc_status), answer.brief()
    if grpc_status == INTERNAL:  # only where grpc-java answers INTERNAL: its HTTP refusals
        assert http_status in ("405", "415")
    lines = [r for r in caplog.records if r.name.startswith("gateway")]
    assert len(lines) <= 1, [r.getMessage() for r in lines]
    assert all(r.exc_info is None and r.levelno < logging.ERROR for r in lines)


async def test_gzip_request_is_inflated_and_the_answer_advertises_gzip() -> None:
    async with serving() as server:
        answer = await _send(server, "grpc-encoding gzip, gzip body")
    assert answer.grpc_status == OK
    assert answer.headers["grpc-accept-encoding"] == "gzip"
    assert answer.headers["grpc-encoding"] == "identity"  # grpc-java answers uncompressed


async def test_unknown_encoding_names_the_accepted_ones() -> None:
    async with serving() as server:
        answer = await _send(server, "grpc-encoding snappy")
    assert answer.grpc_message == "Can't find decompressor for snappy"
    assert answer.headers["grpc-accept-encoding"] == "gzip"


async def test_stream_beyond_the_limit_is_refused_alone() -> None:
    async with serving() as server:
        answer = await _send(server, f"{EXTRA_STREAMS} streams at once")
        assert server.calls_refused == 1
    assert (answer.reset, answer.refused_streams) == (REFUSED_STREAM, 1)
    assert answer.goaway is None
    assert answer.connection_alive


async def test_refusals_repeated_log_one_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="gateway"):
        async with serving() as server:
            for _ in range(20):
                answer = await _send(server, "method GET")
                assert answer.http_status == "405"
            assert server.calls_refused == 20
    refusals = [r for r in caplog.records if "refused with HTTP 405" in r.getMessage()]
    assert len(refusals) <= 1


async def test_connections_beyond_the_limit_are_closed_at_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="gateway"):
        async with serving(max_connections=1) as server:
            held = await trio.open_tcp_stream("127.0.0.1", server.port)
            await wait_until(lambda: server.acceptor.open == 1, 5)
            answers = [await _send(server, "te: gzip") for _ in range(5)]
            assert server.statistics()["refused"] == 5
            await held.aclose()
            await wait_until(lambda: server.acceptor.open == 0, 5)
            served = await _send(server, "te: gzip")
    assert not any(a.connection_alive or a.http_status for a in answers)
    assert served.grpc_status == OK
    refusals = [r for r in caplog.records if "refusing connection" in r.getMessage()]
    assert len(refusals) == 1
