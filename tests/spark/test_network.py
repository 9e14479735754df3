"""Network mode of ``format("rocketmq")`` end to end against our gateway (in process), and the
planner and option parsing without a server."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from gateway.testing.inprocess import InProcessGateway
from spark.network import QueueRange, parse_network_options, split_ranges
from spark.options import OptionError
from spark.remote import Connection, QueueRoute, RemoteError, min_offset
from tests.spark.netdata import Sent, commit_offset, create_topic, send, wait_route

TOPIC_A, TOPIC_B = "SparkNetA", "SparkNetB"
TAGS = ("red", "green", "blue")
GROUP = "spark_net_group"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Sent], int]]:
    """A gateway with 30 messages in 2 queues of A and 5 in 1 queue of B; also the ms between the
    first 20 and the rest of A (for the timestamp options)."""
    with InProcessGateway(tmp_path_factory.mktemp("net-store"), grpc_port=None) as gateway:
        create_topic(gateway.broker_addr, TOPIC_A, 2)
        create_topic(gateway.broker_addr, TOPIC_B, 1)
        wait_route(gateway.namesrv_addr, TOPIC_A, 2)
        wait_route(gateway.namesrv_addr, TOPIC_B, 1)
        broker = "broker-a"
        with Connection(gateway.broker_addr) as conn:
            sent = [
                send(conn, broker, TOPIC_A, i % 2, f"a-{i}".encode(), TAGS[i % 3], f"k{i}") for i in range(20)
            ]
            time.sleep(0.05)
            middle = int(time.time() * 1000)
            time.sleep(0.05)
            sent += [
                send(conn, broker, TOPIC_A, i % 2, f"a-{i}".encode(), TAGS[i % 3], None)
                for i in range(20, 30)
            ]
            sent += [send(conn, broker, TOPIC_B, 0, f"b-{i}".encode(), None, f"kb{i}") for i in range(5)]
        commit_offset(gateway.broker_addr, GROUP, TOPIC_A, 0, 4)
        commit_offset(gateway.broker_addr, GROUP, TOPIC_A, 1, 15)
        yield gateway.namesrv_addr, sent, middle


def _load(session: SparkSession, namesrv: str, **options: str) -> list[dict[str, object]]:
    reader = session.read.format("rocketmq").option("namesrvAddr", namesrv)
    for k, v in options.items():
        reader = reader.option(k, v)
    rows = reader.load().collect()
    return sorted((r.asDict() for r in rows), key=lambda r: (r["topic"], r["queue_id"], r["queue_offset"]))


def _expected(sent: list[Sent]) -> list[tuple[object, ...]]:
    return sorted(
        (s.topic, s.queue_id, s.queue_offset, s.body, s.tags, s.keys, s.uniq_key, s.msg_id) for s in sent
    )


def _seen(rows: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return sorted(
        (
            r["topic"],
            r["queue_id"],
            r["queue_offset"],
            r["body"],
            r["tags"],
            r["keys"],
            r["uniq_key"],
            r["msg_id"],
        )
        for r in rows
    )


def test_reads_every_message_as_sent(session: SparkSession, cluster: tuple[str, list[Sent], int]) -> None:
    namesrv, sent, _ = cluster
    rows = _load(session, namesrv, topics=f"{TOPIC_A},{TOPIC_B}", maxRowsPerPartition="8")
    assert _seen(rows) == _expected(sent)
    assert {r["broker"] for r in rows} == {"broker-a"}
    assert all(r["properties"]["UNIQ_KEY"] == r["uniq_key"] for r in rows)  # type: ignore[index]
    born = {s.uniq_key: s.born_ms for s in sent}
    assert all(int(r["born_timestamp"].timestamp() * 1000) == born[r["uniq_key"]] for r in rows)  # type: ignore[attr-defined,index]


def test_column_pruning(session: SparkSession, cluster: tuple[str, list[Sent], int]) -> None:
    namesrv, sent, _ = cluster
    df = session.read.format("rocketmq").option("namesrvAddr", namesrv).option("topics", TOPIC_B).load()
    got = sorted((r.queue_offset, r.body) for r in df.select("queue_offset", "body").collect())
    assert got == [(s.queue_offset, s.body) for s in sent if s.topic == TOPIC_B]


def test_starting_and_ending_offsets(session: SparkSession, cluster: tuple[str, list[Sent], int]) -> None:
    namesrv, sent, _ = cluster
    start = '{"SparkNetA": {"broker-a:0": 3, "broker-a:1": -1}}'
    end = '{"SparkNetA": {"broker-a:0": 7}}'
    rows = _load(session, namesrv, topics=TOPIC_A, startingOffsets=start, endingOffsets=end)
    assert _seen(rows) == _expected(
        [s for s in sent if s.topic == TOPIC_A and s.queue_id == 0 and 3 <= s.queue_offset < 7]
    )
    assert _load(session, namesrv, topics=TOPIC_A, startingOffsets="latest") == []


def test_timestamps(session: SparkSession, cluster: tuple[str, list[Sent], int]) -> None:
    namesrv, sent, middle = cluster
    a = [s for s in sent if s.topic == TOPIC_A]
    later = _load(session, namesrv, topics=TOPIC_A, startingTimestamp=str(middle))
    assert _seen(later) == _expected(a[20:])
    earlier = _load(session, namesrv, topics=TOPIC_A, endingTimestamp=str(middle))
    assert _seen(earlier) == _expected(a[:20])


def test_tags_pushed_to_the_broker(session: SparkSession, cluster: tuple[str, list[Sent], int]) -> None:
    namesrv, sent, _ = cluster
    rows = _load(session, namesrv, topics=TOPIC_A, tags="red || blue")
    assert _seen(rows) == _expected([s for s in sent if s.topic == TOPIC_A and s.tags in ("red", "blue")])
    assert _load(session, namesrv, topics=TOPIC_A, tags="purple") == []


def test_unreachable_name_server_is_one_clear_error(session: SparkSession) -> None:
    reader = session.read.format("rocketmq").option("namesrvAddr", "127.0.0.1:1").option("topics", "T")
    with pytest.raises(Exception, match=r"rocketmq: cannot connect to 127\.0\.0\.1:1"):
        reader.load().collect()


def test_unknown_topic(session: SparkSession, cluster: tuple[str, list[Sent], int]) -> None:
    reader = session.read.format("rocketmq").option("namesrvAddr", cluster[0]).option("topics", "NoSuchTopic")
    with pytest.raises(Exception, match="topic 'NoSuchTopic' not found"):
        reader.load().collect()


def test_split_ranges_cuts_by_rows() -> None:
    q = QueueRoute("T", "b", "127.0.0.1:1", 0)
    got = split_ranges([QueueRange(q, 5, 15), QueueRange(q, 3, 3)], 4)
    assert [(r.start, r.end) for r in got] == [(5, 9), (9, 13), (13, 15)]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"namesrvAddr": "x:1"}, "topics is required"),
        (
            {"namesrvAddr": "x:1", "topics": "T", "startingOffsets": '{"T": {"b0": 1}}'},
            "startingOffsets must be",
        ),
        (
            {"namesrvAddr": "x:1", "topics": "T", "endingOffsets": '{"T": {"b:0": -3}}'},
            "endingOffsets must be",
        ),
        ({"namesrvAddr": "x:1", "topics": "T", "maxRowsPerPartition": "0"}, "must be positive"),
        ({"namesrvAddr": "x:1", "topics": "T", "paths": "/x"}, "unknown network option 'paths'"),
    ],
)
def test_bad_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_network_options(options)


def test_offsets_json() -> None:
    opts = parse_network_options(
        {"namesrvAddr": "x:1", "topics": "T", "startingOffsets": '{"T": {"broker-a:0": 12}}'}
    )
    assert opts.starting == {"T": {"broker-a:0": 12}}
    assert opts.ending == "latest"


def test_consumer_offsets_and_lag(session: SparkSession, cluster: tuple[str, list[Sent], int]) -> None:
    reader = session.read.format("rocketmq.offsets").option("namesrvAddr", cluster[0])
    rows = reader.option("groups", GROUP).option("topics", f"{TOPIC_A},{TOPIC_B}").load().collect()
    got = sorted(tuple(r) for r in rows)
    assert got == [
        ("broker-a", GROUP, TOPIC_A, 0, 4, 15, 11),
        ("broker-a", GROUP, TOPIC_A, 1, 15, 15, 0),
    ]  # TOPIC_B: the group has no offset there, so no row (as consumerProgress lists none)


def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        addr = f"127.0.0.1:{silent.getsockname()[1]}"
        route = QueueRoute("T", "b", addr, 0)
        began = time.monotonic()
        with (
            Connection(addr, timeout_s=0.5) as conn,
            pytest.raises(RemoteError, match=r"did not answer within 0\.5 s"),
        ):
            min_offset(conn, route)
        assert time.monotonic() - began < 5


def test_tag_filter_from_spark(session: SparkSession, cluster: tuple[str, list[Sent], int]) -> None:
    namesrv, sent, _ = cluster
    reader = session.read.format("rocketmq").option("namesrvAddr", namesrv).option("topics", TOPIC_A)
    df = reader.option("pushFilters", "true").load().where("tags IN ('red', 'green')")
    got = sorted((r.queue_id, r.queue_offset, r.tags) for r in df.collect())
    wanted = [s for s in sent if s.topic == TOPIC_A and s.tags in ("red", "green")]
    assert got == sorted((s.queue_id, s.queue_offset, s.tags) for s in wanted)
