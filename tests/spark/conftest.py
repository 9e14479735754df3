"""One local[2] SparkSession for every Spark test module (starting one costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark.testing import local_session, use_this_python
from tests.spark.stores import Expected, build_store

use_this_python()  # also for the cluster test's driver process, started from here


# The session the tests share. Another module in the same pytest worker may stop it: a full CI run
# puts compat_tests/test_spark_compat.py in the same worker, and its module fixture's getOrCreate()
# returns this very session and stop()s it at the module's end. A stopped session has lost its data
# source registrations (every later load() fails with DATA_SOURCE_NOT_FOUND), so each test gets
# the session through live_session(), which replaces a stopped one and registers the readers again.
_shared: list[SparkSession] = []


def live_session() -> SparkSession:
    """The shared local[2] session with ``rocketmq`` registered, started anew if it was stopped."""
    if _shared and _shared[0].sparkContext._jsc is not None:
        return _shared[0]
    s = local_session("local[2]", "rocketmq-gateway-tests")
    _shared[:] = [s]
    return s


@pytest.fixture(scope="session")
def _session_owner() -> Iterator[None]:
    """Stops the shared session once every test of this worker is done."""
    yield
    if _shared and _shared[0].sparkContext._jsc is not None:
        _shared[0].stop()


@pytest.fixture
def session(_session_owner: None) -> SparkSession:
    return live_session()


@pytest.fixture(scope="session")
def our_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Expected]]:
    root = tmp_path_factory.mktemp("store") / "broker-a"
    return root, build_store(root)
