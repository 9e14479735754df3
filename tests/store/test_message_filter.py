"""The store's read through a SQL92 message filter: ``MessageStore.get_message`` with the broker's
``ExpressionMessageFilter`` (Java's ``DefaultMessageStore.getMessage`` with a ``MessageFilter``).

One call scans up to ``maxFilterMessageSize`` bytes of consume-queue units (800 units, or
``maxMsgNums`` units if more), evaluates each record's properties inside the scan, counts only the
matches against the batch limits, and answers ``NO_MATCHED_MESSAGE`` with the offset after the
window when nothing in it matches, so the client pulls again from there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.filter import ConsumerFilterManager, ExpressionForRetryMessageFilter, ExpressionMessageFilter
from codec.bodies.heartbeat import EXPRESSION_SQL92, SubscriptionData
from codec.message import MessageRecord, iter_records
from codec.properties import RETRY_TOPIC, encode_properties
from store.message_store import MessageStore
from store.results import GetMessageResult, GetMessageStatus
from tests.store.helpers import small_config

WINDOW_UNITS = 16_000 // 20  # maxFilterMessageSize (bytes) over the consume-queue unit size


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    # Consume-queue files of 4,000 units: every scan here stays within one file, as Java's
    # travelCqFileNumWhenGetMessage=1 would otherwise end it at the file's end.
    config = small_config(tmp_path, mappedFileSizeConsumeQueue=str(4000 * 20))
    with MessageStore(config) as opened:
        yield opened


def put(store: MessageStore, topic: str, props: list[dict[str, str]]) -> None:
    for i, p in enumerate(props):
        record = MessageRecord(topic=topic, queue_id=0, body=b"m%d" % i, properties=encode_properties(p))
        assert store.put_message(record).ok


def sql(
    expression: str, topic: str = "T", manager: ConsumerFilterManager | None = None
) -> ExpressionMessageFilter:
    manager = manager or ConsumerFilterManager()
    sub = SubscriptionData(
        topic=topic, sub_string=expression, expression_type=EXPRESSION_SQL92, sub_version=1
    )
    return ExpressionMessageFilter(sub, manager.get("G", topic, sub), manager)


def bodies(result: GetMessageResult) -> list[bytes]:
    return [r.body for r in iter_records(result.body())]


def test_one_read_goes_on_past_records_that_do_not_match(store: MessageStore) -> None:
    put(store, "T", [{"n": "0"}] * 50 + [{"n": "1"}] * 3)
    got = store.get_message("T", 0, 0, 32, 1 << 20, sql("n = 1"))
    assert got.status is GetMessageStatus.FOUND
    assert got.queue_offsets == [50, 51, 52]
    assert got.next_begin_offset == 53
    assert bodies(got) == [b"m50", b"m51", b"m52"]


def test_a_match_beyond_the_window_is_read_by_the_next_pull(store: MessageStore) -> None:
    put(store, "T", [{"n": "0"}] * 1000 + [{"n": "1"}] * 3)
    first = store.get_message("T", 0, 0, 32, 1 << 20, sql("n = 1"))
    assert first.status is GetMessageStatus.NO_MATCHED_MESSAGE  # the pull answers PULL_RETRY_IMMEDIATELY
    assert (first.message_count, first.next_begin_offset) == (0, WINDOW_UNITS)
    second = store.get_message("T", 0, first.next_begin_offset, 32, 1 << 20, sql("n = 1"))
    assert second.status is GetMessageStatus.FOUND
    assert (second.queue_offsets, second.next_begin_offset) == ([1000, 1001, 1002], 1003)


def test_a_larger_batch_scans_a_larger_window(store: MessageStore) -> None:
    put(store, "T", [{"n": "0"}] * 1000 + [{"n": "1"}])
    got = store.get_message("T", 0, 0, 1000, 1 << 20, sql("n = 1"))  # 1,000 units: maxMsgNums * 20 bytes
    assert (got.status, got.next_begin_offset) == (GetMessageStatus.NO_MATCHED_MESSAGE, 1000)
    assert store.get_message("T", 0, 0, 1001, 1 << 20, sql("n = 1")).queue_offsets == [1000]


def test_the_batch_counts_only_matches(store: MessageStore) -> None:
    put(store, "T", [{"n": str(i % 2)} for i in range(100)])
    got = store.get_message("T", 0, 0, 5, 1 << 20, sql("n = 0"))
    assert got.queue_offsets == [0, 2, 4, 6, 8]
    assert got.next_begin_offset == 9  # the next pull starts after the last match
    unfiltered = store.get_message("T", 0, 0, 5, 1 << 20)
    assert unfiltered.queue_offsets == [0, 1, 2, 3, 4]


def test_unknown_and_errors_do_not_match_but_is_null_does(store: MessageStore) -> None:
    put(store, "T", [{"a": "1"}, {}, {"a": "x"}, {"a": "3"}])
    assert store.get_message("T", 0, 0, 32, 1 << 20, sql("a BETWEEN 1 AND 5")).queue_offsets == [0, 3]
    assert store.get_message("T", 0, 0, 32, 1 << 20, sql("a IS NULL")).queue_offsets == [1]


def test_an_expression_that_does_not_compile_lets_everything_through(store: MessageStore) -> None:
    put(store, "T", [{"a": "1"}, {}])
    assert store.get_message("T", 0, 0, 32, 1 << 20, sql("a >")).queue_offsets == [0, 1]


def test_a_retry_topic_is_judged_by_the_original_topics_expression(store: MessageStore) -> None:
    manager = ConsumerFilterManager()
    original = SubscriptionData(
        topic="T", sub_string="n > 3", expression_type=EXPRESSION_SQL92, sub_version=1
    )
    assert manager.get("G", "T", original) is not None
    retry = SubscriptionData(
        topic="%RETRY%G", sub_string="n > 100", expression_type=EXPRESSION_SQL92, sub_version=1
    )
    put(store, "%RETRY%G", [{"n": str(n), RETRY_TOPIC: "T"} for n in (1, 5, 2, 9)])
    with_retry = ExpressionForRetryMessageFilter(retry, manager.get("G", "%RETRY%G", retry), manager)
    assert store.get_message("%RETRY%G", 0, 0, 32, 1 << 20, with_retry).queue_offsets == [1, 3]
    plain = ExpressionMessageFilter(retry, manager.get("G", "%RETRY%G", retry), manager)
    got = store.get_message("%RETRY%G", 0, 0, 32, 1 << 20, plain)  # filterSupportRetry=false
    assert got.status is GetMessageStatus.NO_MATCHED_MESSAGE
