"""Client-caused log lines bounded per kind and interval (gateway.transport.log_limit)."""

from __future__ import annotations

import logging

import pytest

from gateway.transport.log_limit import LogLimiter


def test_one_line_per_kind_per_interval_then_the_count(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    limiter = LogLimiter(logging.getLogger("test.limit"), interval_s=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="test.limit"):
        assert limiter.error("bad", "refused %s", 1)
        assert not any(limiter.error("bad", "refused %s", i) for i in range(999))
        assert limiter.warning("other", "another kind")  # kinds are counted apart
        now[0] += 10.0
        assert limiter.error("bad", "refused %s", 2)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["refused 1", "another kind", "refused 2 (999 more like it in the last 10 s)"]
    assert limiter.suppressed == 999
    assert {r.filename for r in caplog.records} == {"test_log_limit.py"}  # the caller's line


def test_kinds_remembered_are_bounded() -> None:
    limiter = LogLimiter(logging.getLogger("test.limit"), clock=lambda: 0.0)
    for kind in range(5000):
        limiter.info(kind, "x")
    assert len(limiter._last) <= 1024
