"""Small helpers shared by the test modules."""

from __future__ import annotations

from collections.abc import Callable

import trio


async def wait_until(predicate: Callable[[], object], seconds: float) -> None:
    """Poll ``predicate`` until it is true; fail the test after ``seconds``."""
    with trio.fail_after(seconds):
        while not predicate():  # noqa: ASYNC110 - polling plain state of an object under test
            await trio.sleep(0.01)
