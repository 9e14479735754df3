"""``python -m bench.pop --revive``: how long after its invisible time an unacknowledged POP
message can be popped again.

For each invisible time T, ``messages`` messages are sent to a fresh one-queue topic and popped one
by one (``maxMsgNums`` 1, invisible time T) and never acknowledged; then one POP every 100 ms (with
a long invisible time, so that nothing re-popped comes back twice) looks for them. The error of a
message is (time its first re-pop answered) - (time its pop answered) - T: what the revive path adds
(checkpoint through the timer, ``PopReviveService``'s one-second lag and scan interval, the retry
topic) plus up to one polling period.
"""

from __future__ import annotations

import statistics
import time

from bench.pop.client import pop_batch
from bench.side_by_side.servers import Target, create_topic
from codec.codes import ResponseCode
from compat_tests.pop_raw import RawSession, send

POLL_S = 0.1
EXTRA_WAIT_S = 30.0  # past T before a message counts as never revived


def measure_one(target: Target, invisible_ms: int, messages: int) -> list[float]:
    """Errors in seconds of ``messages`` messages popped with ``invisible_ms``; see the module doc."""
    topic, group = f"BenchReviveT{invisible_ms}", f"BenchReviveG{invisible_ms}"
    create_topic(target.broker_addr, target.namesrv_addr, topic, 1)
    with RawSession(target.broker_addr) as session:
        for i in range(messages):
            answer = send(session, topic, f"revive-{i}".encode(), 0)
            if answer["code"] != ResponseCode.SUCCESS:
                raise RuntimeError(f"send: {answer['code']} {answer['remark']}")
        time.sleep(1.0)  # the reference dispatches to its consume queue asynchronously
        popped_at: dict[bytes, float] = {}
        deadline = time.monotonic() + 30
        while len(popped_at) < messages and time.monotonic() < deadline:
            _code, records = pop_batch(session, topic, group, 0, invisible_ms, 1)
            now = time.monotonic()
            for _q, _o, _h, body in records:
                popped_at.setdefault(body, now)
        if len(popped_at) < messages:
            raise RuntimeError(f"{target.name}: popped {len(popped_at)} of {messages}")
        errors: dict[bytes, float] = {}
        deadline = max(popped_at.values()) + invisible_ms / 1000 + EXTRA_WAIT_S
        while len(errors) < messages and time.monotonic() < deadline:
            _code, records = pop_batch(session, topic, group, 0, 300_000, 32)
            now = time.monotonic()
            for _q, _o, _h, body in records:
                if body in popped_at and body not in errors:
                    errors[body] = now - popped_at[body] - invisible_ms / 1000
            time.sleep(POLL_S)
    if len(errors) < messages:
        raise RuntimeError(f"{target.name}: {messages - len(errors)} never revived within {EXTRA_WAIT_S} s")
    return sorted(errors.values())


def run_revive(target: Target, invisible_times_ms: list[int], messages: int) -> dict[int, list[float]]:
    return {t: measure_one(target, t, messages) for t in invisible_times_ms}


def print_revive(results: dict[str, dict[int, list[float]]]) -> None:
    print(
        f"revive timing error (re-pop time - pop time - invisible time), polling every {POLL_S * 1000:.0f} ms"
    )
    print(f"{'server':<10} {'T ms':>6} {'n':>3} {'min s':>7} {'median s':>9} {'max s':>7}")
    for server, by_time in results.items():
        for invisible_ms, errors in by_time.items():
            print(
                f"{server:<10} {invisible_ms:>6} {len(errors):>3} {min(errors):>7.2f} "
                f"{statistics.median(errors):>9.2f} {max(errors):>7.2f}"
            )
