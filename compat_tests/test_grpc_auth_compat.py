"""ACL 2.0 on the gRPC endpoint: the unmodified rocketmq-client-java 5.0.8, signing with
``StaticSessionCredentialsProvider``, against our endpoint and against the real 5.3.3 Proxy in
local mode, both with authentication and authorization on.

The users and ACLs are those of ``compat_tests/test_auth_compat.py`` (made with ``mqadmin`` as
the super user, its ``Admin`` and ``SETUP``): alice may Pub and Sub on the topic and Sub in
``aliceGroup``; bob is denied Sub on the topic; carol is disabled. The Java scenarios are
``rmqgrpc.Produce`` and ``rmqgrpc.Consume`` given the credentials as system properties
(``rmqgrpc.Credentials``). A refusal is what the client reports: the exception class and the
status code and message the endpoint answered, which must be the same on both targets.

The unmodified rocketmq-python-client 5.1.2 (``compat_tests/grpc_python_producer`` and
``grpc_python_consumer``, plaintext) signs with ``Credentials(ak, sk)`` the same way: good
credentials send and receive; with a wrong secret nothing is sent or received, and both report
the same.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from compat_tests.grpc_targets import (
    GRPC_CLIENT,
    REPO,
    RUN_TIMEOUT_S,
    GrpcTarget,
    run_java,
    start_ours,
    start_real,
)
from compat_tests.reference import REFERENCE_LIB, topic_route
from compat_tests.test_auth_compat import AUTH_CONF, ROOT, ROOT_SECRET, SETUP, TOPIC, Admin

pytestmark = [pytest.mark.compat, pytest.mark.slow]

SENT = 5
#: The Proxy reads its own AuthConfig from rmq-proxy.json; in local mode its metadata providers
#: read the users and ACLs of the broker inside it.
PROXY_AUTH = {
    "authenticationEnabled": True,
    "authorizationEnabled": True,
    "authenticationMetadataProvider": "org.apache.rocketmq.proxy.auth.ProxyAuthenticationMetadataProvider",
    "authorizationMetadataProvider": "org.apache.rocketmq.proxy.auth.ProxyAuthorizationMetadataProvider",
}
REQUEST_ID = re.compile(r"request-?id=[^,\]\s]+", re.IGNORECASE)
#: How the client reports a refusal: start() fails, the service's cause is the status it got.
FAILED_TO_START = (
    "IllegalStateException Expected the service {service} [FAILED] to be RUNNING, but the service has FAILED"
    " CAUSE {cause}"
)
UNAUTHORIZED = "UnauthorizedException [request-id=ID, response-code=40100] "
DENIED_BOB = f"User:bob has no permission to access Topic:{TOPIC} from 127.0.0.1, the decision is deny."


@pytest.fixture(scope="module", params=["ours", "real"])
def auth_grpc_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GrpcTarget]:
    if shutil.which("java") is None or not REFERENCE_LIB.is_dir() or not (GRPC_CLIENT / "classes").is_dir():
        pytest.fail("java, the reference jars or the 5.x gRPC client are missing: run scripts/setup-java.sh")
    workdir = tmp_path_factory.mktemp(f"grpc-auth-{request.param}")
    if request.param == "ours":
        started = start_ours(workdir, AUTH_CONF)
    else:
        started = start_real(workdir, AUTH_CONF, PROXY_AUTH)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def admin(auth_grpc_target: GrpcTarget) -> Admin:
    """The topic, users and ACLs of test_auth_compat's SETUP, made with mqadmin as the super user;
    then the topic routed by the NameServer (the Proxy routes from it)."""
    if auth_grpc_target.servers is not None:  # mqadmin finds the cluster through the NameServer
        auth_grpc_target.servers.wait_registered()
    tool = Admin(auth_grpc_target, auth_grpc_target.home)  # type: ignore[arg-type]
    tool.set_up(SETUP)
    for name, _args, expected in SETUP:
        assert expected in tool.setup[name], (name, tool.setup[name])
    deadline = time.monotonic() + 30
    while topic_route(auth_grpc_target.namesrv_addr, TOPIC) is None:
        assert time.monotonic() < deadline, f"{TOPIC} not routed by the NameServer within 30 s"
        time.sleep(0.2)
    return tool


def signed(user: str | None, secret: str | None) -> dict[str, str]:
    return {} if user is None or secret is None else {"rmqgrpc.accessKey": user, "rmqgrpc.secretKey": secret}


def produce(target: GrpcTarget, user: str | None, secret: str | None, count: int = SENT) -> list[str]:
    lines = run_java(target, "rmqgrpc.Produce", "false", TOPIC, str(count), properties=signed(user, secret))
    return [REQUEST_ID.sub("request-id=ID", line) for line in lines]


def consume(target: GrpcTarget, user: str, secret: str, group: str, count: int) -> list[str]:
    lines = run_java(
        target, "rmqgrpc.Consume", "simple", TOPIC, group, str(count), "40", properties=signed(user, secret)
    )
    return [REQUEST_ID.sub("request-id=ID", line) for line in lines]


def test_good_credentials_send_and_receive(auth_grpc_target: GrpcTarget, admin: Admin) -> None:
    lines = produce(auth_grpc_target, "alice", "alice-pw")
    assert lines[0] == "STARTED", lines
    assert [line.split()[0] for line in lines[1:]] == ["SENT"] * SENT + ["CLOSED"], lines
    root_lines = produce(auth_grpc_target, ROOT, ROOT_SECRET, count=1)
    assert [line.split()[0] for line in root_lines] == ["STARTED", "SENT", "CLOSED"], root_lines
    consumed = consume(auth_grpc_target, "alice", "alice-pw", "aliceGroup", SENT + 1)
    assert consumed.count("EMPTY") == 1, consumed
    assert consumed[-1] == "DONE", consumed
    assert len([line for line in consumed if line.startswith("ACKED ")]) == SENT + 1, consumed


@pytest.mark.parametrize(
    ("user", "secret", "reported"),
    [
        ("alice", "wrong", "check signature failed."),
        ("ghost", "x", "User:ghost is not found."),
        ("carol", "carol-pw", "User:carol is disabled."),
        (None, None, "username cannot be null."),
        (
            "bob",
            "bob-pw",
            f"User:bob has no permission to access Topic:{TOPIC} from 127.0.0.1, the decision is deny.",
        ),
    ],
    ids=["wrong-secret", "unknown-user", "disabled-user", "unsigned", "denied-pub-or-sub"],
)
def test_producer_refusals_are_reported_as_by_the_proxy(
    auth_grpc_target: GrpcTarget, admin: Admin, user: str | None, secret: str | None, reported: str
) -> None:
    lines = produce(auth_grpc_target, user, secret, count=1)
    assert lines == [
        "START_FAILED " + FAILED_TO_START.format(service="ProducerImpl-0", cause=UNAUTHORIZED + reported)
    ]


@pytest.mark.parametrize(
    ("user", "secret", "group", "cause"),
    [
        ("alice", "wrong", "aliceGroup", UNAUTHORIZED + "check signature failed."),
        # The route (Topic Pub or Sub) is allowed; the Telemetry settings (Group Sub) are refused
        # and the client, still waiting for its settings, gives up on them.
        ("alice", "alice-pw", "otherGroup", "CancellationException Task was cancelled."),
        (
            "bob",
            "bob-pw",
            "bobGroup",
            UNAUTHORIZED + DENIED_BOB,
        ),
    ],
    ids=["wrong-secret", "no-group-acl", "denied-sub"],
)
def test_consumer_refusals_are_reported_as_by_the_proxy(
    auth_grpc_target: GrpcTarget, admin: Admin, user: str, secret: str, group: str, cause: str
) -> None:
    lines = consume(auth_grpc_target, user, secret, group, 1)
    failed = FAILED_TO_START.format(service="SimpleConsumerImpl-0", cause=cause)
    assert lines == [f"FAILED {failed}", "DONE"], lines


PYTHON_RUNS: dict[tuple[str, str], list[str]] = {}  # (scenario, target) -> the lines it printed


def python_client(target: GrpcTarget, module: str, user: str, secret: str, *args: str) -> list[str]:
    """One run of the unmodified rocketmq-python-client 5.1.2 (``compat_tests/grpc_python_*``),
    plaintext, signing with ``Credentials(ak, sk)``; the outcome lines it printed."""
    result = subprocess.run(
        [sys.executable, "-m", f"compat_tests.grpc_python_{module}", target.grpc_addr, TOPIC, *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
        cwd=REPO,
        env={**os.environ, "HOME": str(target.home), "RMQ_ACCESS_KEY": user, "RMQ_SECRET_KEY": secret},
    )
    lines = [line for line in result.stdout.splitlines() if line.split(" ", 1)[0].isupper()]
    assert lines, result.stdout + result.stderr[-3000:]
    return [REQUEST_ID.sub("request-id=ID", line) for line in lines]


def same_on_both(scenario: str, target: GrpcTarget, lines: list[str]) -> None:
    """Record what this target printed; once both targets ran, they must have printed the same
    (a line repeated in a row counted once: how many retries fit before the deadline is timing)."""
    PYTHON_RUNS[scenario, target.name] = [
        line for i, line in enumerate(lines) if i == 0 or line != lines[i - 1]
    ]
    runs = {name: got for (seen, name), got in PYTHON_RUNS.items() if seen == scenario}
    if len(runs) == 2:
        assert runs["ours"] == runs["real"], runs


def test_python_client_with_good_credentials_sends_and_receives(
    auth_grpc_target: GrpcTarget, admin: Admin
) -> None:
    sent = python_client(auth_grpc_target, "producer", "alice", "alice-pw", str(SENT))
    assert sent[0] == "STARTED", sent
    assert [line.split()[0] for line in sent[1:]] == ["SENT"] * SENT + ["CLOSED"], sent
    # the Java consumer of the test above acked what was sent before: these five are new to the group
    received = python_client(auth_grpc_target, "consumer", "alice", "alice-pw", "aliceGroup", str(SENT), "60")
    assert received[0] == "STARTED", received
    assert received[-1] == "DONE", received
    assert len([line for line in received if line.startswith("ACKED ")]) >= SENT, received


@pytest.mark.parametrize("module", ["producer", "consumer"])
def test_python_client_with_a_wrong_secret_fails_as_on_the_proxy(
    auth_grpc_target: GrpcTarget, admin: Admin, module: str
) -> None:
    args = ("1",) if module == "producer" else ("aliceGroup", "1", "20")
    lines = python_client(auth_grpc_target, module, "alice", "wrong", *args)
    # the Python client may start and fail its first route lookup instead: nothing gets through
    assert not [line for line in lines if line.split()[0] in ("SENT", "RECEIVED", "ACKED")], lines
    assert "START_FAILED" in lines[0] or any(line.startswith("FAILED") for line in lines), lines
    same_on_both(f"wrong-secret-{module}", auth_grpc_target, lines)
