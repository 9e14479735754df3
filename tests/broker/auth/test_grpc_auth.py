"""Authentication and authorization on the gRPC endpoint: the header parser, the resources each
request needs, and a broker with both checks on driven by grpcio as a 5.x client would."""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from broker.app import BrokerApp
from broker.auth.bodies import acl_info_from_obj
from broker.auth.grpc_contexts import ContextError, credentials, java_split, required_permissions
from broker.auth.metadata import AuthError
from broker.auth.models import Action, Resource, User, subject_username
from codec.bodies.register import TopicConfig
from gateway.launcher import start_grpc
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.auth.test_auth_broker import ALICE_SECRET, ROOT_SECRET, auth_broker
from tests.broker.test_grpc_service import Client, in_thread, message, producer_settings, route_request

DATE = "20260125T101500Z"
TOPIC = "GrpcAuthTopic"


def authorization(user: str, secret: str, date: str = DATE) -> str:
    """What rocketmq-clients' ``Signature.sign`` puts in the ``authorization`` header."""
    signature = hmac.new(secret.encode(), date.encode(), hashlib.sha1).hexdigest().upper()
    return f"MQv2-HMAC-SHA1 Credential={user}, SignedHeaders=x-mq-date-time, Signature={signature}"


def test_java_split_drops_trailing_empty_pieces() -> None:
    assert java_split("", ",") == [""]
    assert java_split("a", ",") == ["a"]
    assert java_split("a,b,,", ",") == ["a", "b"]
    assert java_split(",a", ",") == ["", "a"]
    assert java_split(",,,", ",") == []
    assert java_split("/", "/") == []


def test_credentials_of_the_java_clients_header() -> None:
    found = credentials({"authorization": authorization("alice", "pw"), "x-mq-date-time": DATE})
    assert found.username == "alice"
    assert found.content == DATE.encode()
    digest = hmac.new(b"pw", DATE.encode(), hashlib.sha1).digest()
    import base64

    assert found.signature == base64.b64encode(digest).decode()
    # Lower-case hex is the same signature (commons-codec accepts both).
    lower = authorization("alice", "pw").replace(
        f"Signature={digest.hex().upper()}", f"Signature={digest.hex()}"
    )
    assert credentials({"authorization": lower, "x-mq-date-time": DATE}).signature == found.signature


def test_no_authorization_header_has_no_user() -> None:
    assert credentials({}).username is None
    assert credentials({"authorization": ""}).username is None


@pytest.mark.parametrize(
    ("header", "date", "message"),
    [
        (authorization("alice", "pw"), None, "datetime is null."),
        (authorization("alice", "pw"), "", "datetime is null."),
        ("MQv2-HMAC-SHA1", DATE, "authentication header is incorrect."),
        ("MQv2-HMAC-SHA1 ", DATE, "authentication keyValues length is incorrect, actual length=1."),
        (
            "x Credential=a,,Signature=00",
            DATE,
            "authentication keyValues length is incorrect, actual length=1.",
        ),
        ("x Credential=/", DATE, "authentication credential length is incorrect, actual length=0."),
        ("x Credential=a, Signature=zz", DATE, "create authentication context error."),
        ("x Credential=a, Signature=abc", DATE, "create authentication context error."),
        ("x Credential=a, Signature=ab cd", DATE, "create authentication context error."),
        ("x Credential=a, Signature=\u00e9\u00e9", DATE, "create authentication context error."),
    ],
)
def test_malformed_headers_are_refused_with_javas_message(
    header: str, date: str | None, message: str
) -> None:
    metadata = {"authorization": header} | ({"x-mq-date-time": date} if date is not None else {})
    with pytest.raises(AuthError) as caught:
        credentials(metadata)
    assert str(caught.value) == message


def test_odd_credentials_parse_as_java_parses_them() -> None:
    assert credentials({"authorization": "x Credential=a/b/c", "x-mq-date-time": DATE}).username == "a"
    assert credentials({"authorization": "x Credential=", "x-mq-date-time": DATE}).username == ""
    assert credentials({"authorization": "x ,,,", "x-mq-date-time": DATE}).username is None
    huge = "x Credential=" + "a" * 100_000 + ", Signature=" + "0" * 100_000
    assert credentials({"authorization": huge, "x-mq-date-time": DATE}).username == "a" * 100_000


def _topic(name: str) -> pb.Resource:
    return pb.Resource(name=name)


def test_resources_each_request_needs() -> None:
    t, g = Resource.topic("T"), Resource.group("G")
    pub, sub = (Action.PUB,), (Action.SUB,)
    send = pb.SendMessageRequest(messages=[pb.Message(topic=_topic("T"))])
    assert required_permissions(send) == [(t, pub)]
    assert required_permissions(pb.QueryRouteRequest(topic=_topic("T"))) == [(t, (Action.PUB, Action.SUB))]
    receive = pb.ReceiveMessageRequest(group=_topic("G"), message_queue=pb.MessageQueue(topic=_topic("T")))
    assert required_permissions(receive) == [(g, sub), (t, sub)]
    assert required_permissions(pb.AckMessageRequest(group=_topic("G"), topic=_topic("T"))) == [
        (g, sub),
        (t, sub),
    ]
    change = pb.ChangeInvisibleDurationRequest(group=_topic("G"), topic=_topic("T"))
    assert required_permissions(change) == [(g, sub)]
    assert required_permissions(pb.EndTransactionRequest(topic=_topic("T"))) == [(t, pub)]
    assert required_permissions(pb.HeartbeatRequest(client_type=pb.PRODUCER)) == []
    assert required_permissions(pb.HeartbeatRequest(client_type=pb.SIMPLE_CONSUMER, group=_topic("G"))) == [
        (g, sub)
    ]
    assert required_permissions(pb.NotifyClientTerminationRequest()) == []
    settings = pb.TelemetryCommand(settings=producer_settings("T", "U"))
    assert required_permissions(settings) == [(t, pub), (Resource.topic("U"), pub)]
    assert required_permissions(pb.TelemetryCommand(status=pb.Status())) == []


@pytest.mark.parametrize(
    ("request_message", "message"),
    [
        (pb.SendMessageRequest(), "message is null."),
        (pb.QueryRouteRequest(), "topic is null."),
        (pb.ReceiveMessageRequest(group=_topic("G")), "messageQueue is null."),
        (pb.AckMessageRequest(topic=_topic("T")), "group is null."),
        (pb.AckMessageRequest(group=_topic("G"), topic=_topic("  ")), "topic is null."),
        (pb.HeartbeatRequest(client_type=pb.PUSH_CONSUMER), "group is null."),
    ],
)
def test_requests_without_their_resource_are_refused(request_message: Any, message: str) -> None:
    with pytest.raises(AuthError) as caught:
        required_permissions(request_message)
    assert str(caught.value) == message


def test_settings_without_publishing_or_subscription_is_not_an_authorization_error() -> None:
    with pytest.raises(ContextError):
        required_permissions(pb.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER)))


# -- over the wire -------------------------------------------------------------------------------


@asynccontextmanager
async def grpc_auth_endpoint(root: Path) -> AsyncIterator[tuple[BrokerApp, int]]:
    """A broker with both checks on, root (SUPER), alice (Pub on the topic only) and bob (no ACL)."""
    async with auth_broker(root) as (app, _conn), trio.open_nursery() as nursery:
        app.controller.topics.update(TopicConfig(TOPIC, read_queue_nums=2, write_queue_nums=2))
        metadata = app.broker.auth.metadata
        metadata.create_user(User("alice", ALICE_SECRET))
        metadata.create_user(User("bob", "bob-secret"))
        subject, policies = acl_info_from_obj(
            {
                "subject": "User:alice",
                "policies": [
                    {"entries": [{"resource": f"Topic:{TOPIC}", "actions": ["Pub"], "decision": "Allow"}]}
                ],
            }
        )
        metadata.put_acl(subject_username(subject), policies)
        server = await start_grpc(nursery, app, GrpcServerConfig(grpc_server_port=0))
        yield app, server.port
        await server.shutdown()
        nursery.cancel_scope.cancel()


class SignedClient(Client):
    def __init__(self, port: int, user: str | None, secret: str = "", header: str | None = None) -> None:
        super().__init__(port)
        if header is None and user is not None:
            header = authorization(user, secret)
        if header is not None:
            self.metadata += [("authorization", header), ("x-mq-date-time", DATE)]


def _send(client: Client, body: bytes = b"hello") -> pb.SendMessageResponse:
    request = pb.SendMessageRequest(messages=[message(TOPIC, body, f"id-{time.monotonic_ns()}")])
    return client.call("SendMessage", request, pb.SendMessageResponse)


async def test_signed_requests_pass_and_refusals_carry_unauthorized(tmp_path: Path) -> None:
    async with grpc_auth_endpoint(tmp_path) as (_app, port):
        alice = SignedClient(port, "alice", ALICE_SECRET)
        sent = await in_thread(lambda: _send(alice))
        assert sent.status.code == pb.OK, sent.status
        route = await in_thread(
            lambda: alice.call("QueryRoute", route_request(TOPIC, port), pb.QueryRouteResponse)
        )
        assert route.status.code == pb.OK, route.status
        root = SignedClient(port, "root", ROOT_SECRET)
        assert (await in_thread(lambda: _send(root))).status.code == pb.OK

        refusals = {
            "wrong-secret": (SignedClient(port, "alice", "nope"), "check signature failed."),
            "unknown-user": (SignedClient(port, "ghost", "x"), "User:ghost is not found."),
            "unsigned": (Client(port), "username cannot be null."),
            "no-acl": (
                SignedClient(port, "bob", "bob-secret"),
                f"User:bob has no permission to access Topic:{TOPIC} from 127.0.0.1, no matched policies.",
            ),
        }
        for name, (client, text) in refusals.items():
            answer = await in_thread(lambda c=client: _send(c))
            assert (name, answer.status.code, answer.status.message) == (name, pb.UNAUTHORIZED, text)


async def test_denied_consumer_gets_unauthorized_on_receive_and_telemetry(tmp_path: Path) -> None:
    async with grpc_auth_endpoint(tmp_path) as (_app, port):
        alice = SignedClient(port, "alice", ALICE_SECRET)
        receive = pb.ReceiveMessageRequest(
            group=_topic("aliceGroup"), message_queue=pb.MessageQueue(topic=_topic(TOPIC)), batch_size=1
        )
        receive.invisible_duration.FromSeconds(30)

        def receive_all() -> list[pb.ReceiveMessageResponse]:
            import grpc

            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                rpc = channel.unary_stream(
                    "/apache.rocketmq.v2.MessagingService/ReceiveMessage",
                    request_serializer=lambda m: m.SerializeToString(),
                    response_deserializer=pb.ReceiveMessageResponse.FromString,
                )
                return list(rpc(receive, metadata=alice.metadata, timeout=10))

        answers = await in_thread(receive_all)
        assert [a.status.code for a in answers] == [pb.UNAUTHORIZED], answers
        assert answers[0].status.message == (
            "User:alice has no permission to access Group:aliceGroup from 127.0.0.1, no matched policies."
        )
        bob = SignedClient(port, "bob", "bob-secret")
        first = await in_thread(lambda: bob.telemetry(producer_settings(TOPIC)))
        assert first.status.code == pb.UNAUTHORIZED, first


@pytest.mark.parametrize(
    "header",
    ["garbage", "MQv2-HMAC-SHA1 Credential=alice, Signature=not-hex", "x " + "Credential=a," * 500],
)
async def test_garbage_headers_answer_one_status_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, header: str
) -> None:
    async with grpc_auth_endpoint(tmp_path) as (_app, port):
        with caplog.at_level(logging.INFO):
            answer = await in_thread(lambda: _send(SignedClient(port, None, header=header)))
        assert answer.status.code == pb.UNAUTHORIZED, answer.status
        assert not [r for r in caplog.records if r.exc_info], caplog.text


async def test_the_authorized_user_is_the_authenticated_one(tmp_path: Path) -> None:
    """The Proxy would authorize the user a client names in ``x-mq-authorization-ak``; here the
    signature's user is authorized whatever that header says (docs/security.md)."""
    async with grpc_auth_endpoint(tmp_path) as (_app, port):
        bob = SignedClient(port, "bob", "bob-secret")
        bob.metadata.append(("x-mq-authorization-ak", "root"))
        answer = await in_thread(lambda: _send(bob))
        assert answer.status.code == pb.UNAUTHORIZED, answer.status
        assert answer.status.message.startswith("User:bob has no permission"), answer.status
