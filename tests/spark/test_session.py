"""The shared test session survives another module stopping it (seen in a full CI run).

compat_tests/test_spark_compat.py's module fixture calls ``SparkSession.builder...getOrCreate()``,
which in the same pytest worker returns the session of :mod:`tests.spark.conftest`, and stops it
when its module ends. Every Spark test module that ran after it in that worker failed on
``load()`` with ``[DATA_SOURCE_NOT_FOUND] Failed to find the data source: rocketmq``: a stopped
session keeps no data source registrations. The ``session`` fixture now hands out a live,
registered session (:func:`tests.spark.conftest.live_session`).
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from tests.spark.conftest import live_session
from tests.spark.test_reader import GOLDEN

GOLDEN_MESSAGES = 163  # what the real 5.3.3 broker stored (tests/spark/test_reader.py)


def test_a_session_stopped_by_another_module_is_replaced_and_registered(session: SparkSession) -> None:
    assert session.read.format("rocketmq").load(str(GOLDEN)).count() == GOLDEN_MESSAGES
    other = SparkSession.builder.master("local[2]").appName("another-module").getOrCreate()
    assert other is session  # what the compat module's fixture got
    other.stop()
    again = live_session()
    assert again is not session
    assert again.read.format("rocketmq").load(str(GOLDEN)).count() == GOLDEN_MESSAGES
    assert again.read.format("rocketmq.offsets").load(str(GOLDEN)).count() == 0
    assert live_session() is again  # a live session is kept, not restarted per test
