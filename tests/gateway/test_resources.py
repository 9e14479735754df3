"""Declared topics and groups: the spec parsers, the TOML file, the in-process gateway, the CLI
process (flags, file, environment; routed before ``ready``; a bad spec is one line, exit 2)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from codec.bodies.route import TopicRouteData
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from gateway.resources import (
    Resources,
    ResourceSpecError,
    load_resource_file,
    parse_group_spec,
    parse_topic_spec,
    resources_from_env,
)
from gateway.testing.inprocess import InProcessGateway
from gateway.transport.client import connect
from tests.helpers import read_ready_line

FILE = """
[topics.orders]
queues = 4
type = "fifo"

[topics.audit]
attributes = { "+reserve.time" = "72" }

[groups.billing]
retryMaxTimes = 3
consumeMessageOrderly = true
"""


def test_topic_specs() -> None:
    orders = parse_topic_spec("orders:16:FIFO")
    assert (orders.topic_name, orders.read_queue_nums, orders.write_queue_nums, orders.perm) == (
        "orders",
        16,
        16,
        6,
    )
    assert orders.attributes == {"message.type": "FIFO"}
    plain = parse_topic_spec("audit")
    assert (plain.read_queue_nums, plain.attributes) == (8, {})
    assert parse_topic_spec("ns1%delayed::delay").attributes == {"message.type": "DELAY"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("orders:x", "topic 'orders:x': queues 'x' is not a number"),
        ("orders:0", "topic 'orders:0': queues must be a number from 1, not 0"),
        (
            "orders:8:MIXED",
            "topic 'orders:8:MIXED': message type 'MIXED' is not one of NORMAL, FIFO, DELAY, TRANSACTION",
        ),
        ("a:1:FIFO:x", "topic 'a:1:FIFO:x': expected NAME[:QUEUES[:TYPE]]"),
        ("TBW102", "topic 'TBW102': TBW102 is a system topic"),
        (
            "a b",
            "topic 'a b': The specified topic[a b] contains illegal characters,"
            " allowing only ^[%|a-zA-Z0-9_-]+$",
        ),
        ("big:2000", "topic 'big:2000': The readQueueNums 2000 of topic[big] is out of range 0..1024."),
    ],
)
def test_bad_topic_specs(spec: str, message: str) -> None:
    with pytest.raises(ResourceSpecError) as caught:
        parse_topic_spec(spec)
    assert str(caught.value) == message


def test_group_specs() -> None:
    group = parse_group_spec("billing:retryMaxTimes=3, consumeMessageOrderly=TRUE")
    assert (group.group_name, group.retry_max_times, group.consume_message_orderly) == ("billing", 3, True)
    assert parse_group_spec("plain").retry_max_times == 16  # SubscriptionGroupConfig's default
    for spec, message in (
        ("g:retryMaxTimes=x", "group 'g:retryMaxTimes=x': retryMaxTimes must be a whole number, not 'x'"),
        (
            "g:consumeEnable=maybe",
            "group 'g:consumeEnable=maybe': consumeEnable must be true or false, not 'maybe'",
        ),
        ("g:x", "group 'g:x': expected KEY=VALUE, not 'x'"),
        ("g g", "group 'g g': 'g g' is not a valid group name"),
    ):
        with pytest.raises(ResourceSpecError) as caught:
            parse_group_spec(spec)
        assert str(caught.value) == message
    with pytest.raises(ResourceSpecError, match=r"unknown setting 'colour' \(one of brokerId, "):
        parse_group_spec("g:colour=red")


def test_environment_and_merging() -> None:
    env = {"RMQ_GATEWAY_TOPICS": "orders:8:FIFO, audit", "RMQ_GATEWAY_GROUPS": "a:retryMaxTimes=1;b"}
    declared = resources_from_env(env)
    assert [t.topic_name for t in declared.topics] == ["orders", "audit"]
    assert [g.group_name for g in declared.groups] == ["a", "b"]
    later = declared.merged(Resources((parse_topic_spec("orders:2"),)))
    assert [(t.topic_name, t.read_queue_nums) for t in later.topics] == [("orders", 2), ("audit", 8)]
    assert not resources_from_env({})


def test_resource_file(tmp_path: Path) -> None:
    path = tmp_path / "resources.toml"
    path.write_text(FILE)
    declared = load_resource_file(path)
    assert [(t.topic_name, t.read_queue_nums, t.attributes) for t in declared.topics] == [
        ("orders", 4, {"message.type": "FIFO"}),
        ("audit", 8, {"reserve.time": "72"}),
    ]
    billing = declared.groups[0]
    assert (billing.group_name, billing.retry_max_times, billing.consume_message_orderly) == (
        "billing",
        3,
        True,
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[topics.orders\n", "not TOML: "),
        ("[queues]\n", "unknown table(s) queues"),
        ("topics = 1\n", "[topics] must hold one table per name, [topics.NAME]"),
        ("[topics.orders]\ncount = 1\n", "topic '{path}: topics.orders': unknown key(s) count"),
        (
            "[topics.orders]\nqueues = 'many'\n",
            "topic '{path}: topics.orders': queues must be a number from 1",
        ),
        (
            "[topics.orders]\nattributes = { '+nope' = 'x' }\n",
            "topic '{path}: topics.orders': unsupported key: nope",
        ),
        (
            "[groups.g]\nretryMaxTimes = true\n",
            "group '{path}: groups.g': retryMaxTimes must be a whole number",
        ),
    ],
)
def test_bad_resource_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "resources.toml"
    path.write_text(text)
    with pytest.raises(ResourceSpecError) as caught:
        load_resource_file(path)
    assert message.format(path=path) in str(caught.value)
    with pytest.raises(ResourceSpecError, match="No such file or directory"):
        load_resource_file(tmp_path / "missing.toml")


async def route_of(namesrv_addr: str, topic: str) -> TopicRouteData | None:
    async with connect(namesrv_addr) as conn:
        answer = await conn.invoke(
            RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), 5
        )
    if answer.code != ResponseCode.SUCCESS:
        return None
    return TopicRouteData.from_obj(json.loads(answer.body))


async def test_in_process_declarations_are_routed_when_started(tmp_path: Path) -> None:
    gateway = InProcessGateway(
        tmp_path, grpc_port=None, topics=["orders:4:FIFO"], groups=["billing:retryMaxTimes=2"]
    )
    await trio.to_thread.run_sync(gateway.start)
    try:
        route = await route_of(gateway.namesrv_addr, "orders")
        assert route is not None
        assert [(q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas] == [(4, 4)]
        controller = gateway._gateway.broker.controller  # type: ignore[union-attr]
        assert controller.topics.table["orders"].attributes == {"message.type": "FIFO"}
        assert controller.groups.table["billing"].retry_max_times == 2
        await trio.to_thread.run_sync(lambda: gateway.declare(["later:2"]))
        later = await route_of(gateway.namesrv_addr, "later")
        assert later is not None
        assert later.queue_datas[0].write_queue_nums == 2
        with pytest.raises(ResourceSpecError):
            gateway.declare(["bad:x"])
    finally:
        await trio.to_thread.run_sync(gateway.stop)


async def test_the_cli_creates_declared_topics_before_ready(tmp_path: Path) -> None:
    (tmp_path / "resources.toml").write_text(FILE)
    argv = [sys.executable, "-m", "gateway.cli", "standalone", "--namesrv-port", "0", "--broker-port", "0"]
    argv += ["--no-grpc", "--store", str(tmp_path / "data"), "-f", str(tmp_path / "resources.toml")]
    argv += ["--topic", "orders:6:FIFO", "--topic", "audit2", "--group", "cli_group:consumeEnable=false"]
    env = {**os.environ, "HOME": str(tmp_path), "RMQ_GATEWAY_TOPICS": "from_env:3"}
    proc = await trio.to_thread.run_sync(
        lambda: subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    )
    try:
        line = await read_ready_line(proc, 30)
        match = re.search(r"namesrv=(\S+)", line)
        assert match, line
        queues = {}
        for topic in ("orders", "audit", "audit2", "from_env"):
            route = await route_of(match.group(1), topic)
            assert route is not None, topic
            queues[topic] = route.queue_datas[0].write_queue_nums
        assert queues == {"orders": 6, "audit": 8, "audit2": 8, "from_env": 3}  # the flag wins over the file
        proc.send_signal(signal.SIGTERM)
        await trio.to_thread.run_sync(lambda: proc.communicate(timeout=30))
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("extra", "env", "message"),
    [
        (["--topic", "orders:x"], {}, "cannot start: topic 'orders:x': queues 'x' is not a number"),
        ([], {"RMQ_GATEWAY_GROUPS": "g:nope=1"}, "cannot start: group 'g:nope=1': unknown setting 'nope'"),
        (
            ["-f", "/nonexistent/resources.toml"],
            {},
            "cannot start: resource file /nonexistent/resources.toml: ",
        ),
    ],
)
def test_a_bad_declaration_is_one_line_and_exit_2(
    tmp_path: Path, extra: list[str], env: dict[str, str], message: str
) -> None:
    argv = [sys.executable, "-m", "gateway.cli", "standalone", "--namesrv-port", "0", "--broker-port", "0"]
    result = subprocess.run(
        [*argv, "--no-grpc", "--store", str(tmp_path / "data"), *extra],
        env={**os.environ, "HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, result.stderr
    assert message in errors[0]
    assert "Traceback" not in result.stderr


def test_markers_namespace_and_clean_gateway_in_a_foreign_suite(tmp_path: Path) -> None:
    """A suite with nothing but the installed plugin: marker topics exist when the session's
    gateway is ready, each test's namespace is its own, ``rmq_clean_gateway`` starts empty but
    for its test's declarations."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_uses_plugin.py").write_text(
        "import pytest\n"
        "\n"
        "@pytest.mark.rmq_topics('orders:4:FIFO')\n"
        "def test_declared(rmq_gateway):\n"
        "    topics = rmq_gateway._gateway.broker.controller.topics.table\n"
        "    assert topics['orders'].write_queue_nums == 4\n"
        "    assert topics['clean_t'].write_queue_nums == 2  # another test's marker: there from the start\n"
        "    rmq_gateway.declare(['leftover'])\n"
        "\n"
        "def test_namespaces_differ(rmq_namespace, request):\n"
        "    assert rmq_namespace.name.startswith('test_namespaces_differ-')\n"
        "    assert rmq_namespace.topic('T') == rmq_namespace.name + '%T'\n"
        "\n"
        "@pytest.mark.rmq_topics('clean_t:2')\n"
        "def test_clean(rmq_clean_gateway):\n"
        "    topics = rmq_clean_gateway._gateway.broker.controller.topics.table\n"
        "    assert 'leftover' not in topics and 'orders' not in topics\n"
        "    assert topics['clean_t'].write_queue_nums == 2\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t")],
        cwd=suite,
        env={**os.environ, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout
