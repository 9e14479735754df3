"""``python -m bench.pop`` stays runnable: on a tiny count against our gateway alone, both phases
consume every stored message (``measure`` raises otherwise) and the revive measurement sees each
unacknowledged message come back."""

from __future__ import annotations

from bench.pop.__main__ import measure, print_table, start
from bench.pop.revive import measure_one


def test_pop_and_pull_consume_everything_and_revive_is_measured() -> None:
    target = start("ours")
    try:
        phases = measure(target, 64, 128, 8)
        errors = measure_one(target, 1000, 2)
    finally:
        target.stop()
    print_table({"ours": phases})
    assert phases["pop+ack"].messages == phases["pull"].messages == 64
    assert phases["pop+ack"].cpu_s >= 0
    assert phases["pull"].cpu_s >= 0
    assert len(errors) == 2
    assert all(e > -0.5 for e in errors)  # never poppable again well before its invisible time
