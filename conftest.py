"""Settings shared by every test directory.

Hypothesis checks properties, not speed: its per-example deadline is off, because the suites run
side by side on a 2-core CI machine where one example can take 250 ms for reasons of its own.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("rocketmq-gateway", deadline=None)
settings.load_profile("rocketmq-gateway")
