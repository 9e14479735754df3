"""RocketMQ 5's gRPC protocol driven by the unmodified Go 5.x client
(``github.com/apache/rocketmq-clients/golang/v5`` v5.1.4) against our endpoint and against the
real 5.3.3 Proxy in local mode, with identical assertions on both.

The Go side is ``compat_tests/grpc_go/main.go``, built once and cached by
:mod:`compat_tests.gobuild` (the ``grpc_go`` fixture of ``compat_tests/conftest.py``). The Go
client speaks TLS by default, trusting any certificate (``tls.Config{InsecureSkipVerify: true}``
in its ``conn_options.go``), and plaintext when its package variable ``EnableSsl`` is false (or
``rocketmq.client.enableSsl=false`` is in the environment): both are run.
What the producer sent is read back over the remoting protocol from the broker behind each
endpoint.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from codec.properties import decode_properties
from compat_tests.grpc_targets import GrpcTarget, create_group, create_topic, start_ours, start_real, stored
from compat_tests.scenario import Event, of, parse_events

pytestmark = [pytest.mark.compat, pytest.mark.slow]

RUN_TIMEOUT_S = 120.0  # one Go client run: its -timeout loop, a last receive (15 s), start and stop
CONSUME_LOOP_S = 60
MESSAGE_NOT_FOUND = "40401"  # apache.rocketmq.v2.Code: the status of a receive that found nothing


@pytest.fixture(scope="module", params=["ours", "real"])
def go_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GrpcTarget]:
    workdir = tmp_path_factory.mktemp(f"grpc-go-{request.param}")
    started = start_ours(workdir) if request.param == "ours" else start_real(workdir)
    try:
        yield started
    finally:
        started.stop()


def run_go(binary: Path, target: GrpcTarget, *, tls: bool, **flags: str | int) -> list[Event]:
    """One run of the Go program against the target's endpoint; its events, ending with done."""
    argv = [str(binary), f"-endpoint={target.grpc_addr}", f"-tls={'true' if tls else 'false'}"]
    argv += [f"-{key}={value}" for key, value in flags.items()]
    result = subprocess.run(
        argv,
        capture_output=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
        env={**os.environ, "HOME": str(target.home)},  # the client logs under ~/logs/rocketmq
    )
    events = parse_events(result.stdout.decode("utf-8", errors="replace"))
    stderr = result.stderr.decode("utf-8", errors="replace")[-3000:]
    assert result.returncode == 0, f"{events[-3:]}\n{stderr}"
    assert events, stderr
    assert events[-1]["event"] == "done", events
    return events


def produce(binary: Path, target: GrpcTarget, topic: str, count: int, *, tls: bool) -> dict[int, str]:
    """Send ``count`` messages with the Go producer; message id by index."""
    events = run_go(binary, target, tls=tls, mode="produce", topic=topic, count=count)
    assert events[0]["event"] == "started", events
    assert not of(events, "send_failed"), of(events, "send_failed")
    return {e["i"]: e["id"] for e in of(events, "sent")}


def expected_message(i: int) -> dict[str, object]:
    return {
        "body": f"go grpc message {i} 中文",
        "tag": "TagG",
        "keys": [f"gkey-{i}", f"gkey-{i}-b"],
        "props": {"index": str(i)},
    }


@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "tls"])
def test_go_producer_sends_normal_messages(grpc_go: Path, go_target: GrpcTarget, tls: bool) -> None:
    topic = f"GrpcGo{'Tls' if tls else 'Plain'}"
    create_topic(go_target, topic)
    sent = produce(grpc_go, go_target, topic, 4, tls=tls)
    assert sorted(sent) == [0, 1, 2, 3]
    records = [r for queue in stored(go_target, topic).values() for r in queue]
    by_id = {decode_properties(r.properties)["UNIQ_KEY"]: r for r in records}
    assert set(by_id) == set(sent.values())
    for i, message_id in sent.items():
        props = decode_properties(by_id[message_id].properties)
        assert by_id[message_id].body == f"go grpc message {i} 中文".encode()
        assert (props["TAGS"], props["KEYS"], props["index"]) == ("TagG", f"gkey-{i} gkey-{i}-b", str(i))


@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "tls"])
def test_go_simple_consumer_receives_changes_and_acks(
    grpc_go: Path, go_target: GrpcTarget, tls: bool
) -> None:
    """Three messages: the first one seen is made visible again after 1 s and comes back with
    delivery attempt 2; all three are acknowledged; one more receive finds nothing."""
    topic, group = f"GrpcGoConsume{'Tls' if tls else 'Plain'}", f"GrpcGoGroup{'Tls' if tls else 'Plain'}"
    create_topic(go_target, topic)
    create_group(go_target, group, 16)
    sent = produce(grpc_go, go_target, topic, 3, tls=tls)
    events = run_go(
        grpc_go, go_target, tls=tls, mode="consume", topic=topic, group=group, count=3,
        timeout=f"{CONSUME_LOOP_S}s",
    )  # fmt: skip
    assert events[0]["event"] == "started", events
    failures = [e for e in events if e["event"].endswith("_failed")]
    assert not failures, failures
    index_of = {message_id: i for i, message_id in sent.items()}
    received = of(events, "received")
    [changed] = of(events, "changed")
    first = received[0]
    assert first["id"] == changed["id"]
    assert [(e["id"], e["attempt"]) for e in received if e["id"] == first["id"]] == [
        (first["id"], 1),
        (first["id"], 2),
    ]
    assert sorted(e["id"] for e in received) == sorted([*sent.values(), first["id"]])
    for event in received:
        view = {key: event[key] for key in ("body", "tag", "keys", "props")}
        assert view == expected_message(index_of[event["id"]])
    assert sorted(e["id"] for e in of(events, "acked")) == sorted(sent.values())
    assert of(events, "empty") == [{"event": "empty", "code": MESSAGE_NOT_FOUND}]
