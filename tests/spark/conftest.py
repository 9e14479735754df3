"""One local[2] SparkSession for every Spark test module (starting one costs seconds)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import spark
from tests.spark.stores import Expected, build_store

# Python workers must import the same packages as the driver (they otherwise use the system Python).
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def session_builder(master: str) -> SparkSession.Builder:
    return (
        SparkSession.builder.master(master)
        .appName("rocketmq-gateway-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.driver.memory", "1g")
    )


@pytest.fixture(scope="session")
def session() -> Iterator[SparkSession]:
    s = session_builder("local[2]").getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    spark.register(s)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def our_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Expected]]:
    root = tmp_path_factory.mktemp("store") / "broker-a"
    return root, build_store(root)
