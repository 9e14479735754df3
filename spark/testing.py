"""A Spark session on this machine only, for tests, benchmarks and trying the readers out.

Spark binds its driver to the machine's first address and opens a web UI by default; everything
here stays on loopback, and the Python workers run this interpreter (``PYSPARK_PYTHON``), so they
import the same packages as the driver instead of the system Python.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def use_this_python() -> None:
    """Make Spark's Python workers (and a driver it starts) run this interpreter, on loopback."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def loopback_builder(master: str, app_name: str, *, driver_memory: str = "1g") -> SparkSession.Builder:
    """A session builder for ``master`` bound to 127.0.0.1, without web UI, in UTC, with Python
    filter pushdown enabled (the readers' ``pushFilters`` option needs it) and 2 shuffle
    partitions (the default 200 only slows small local jobs)."""
    from pyspark.sql import SparkSession

    use_this_python()
    return (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.driver.memory", driver_memory)
    )


def local_session(master: str, app_name: str, *, driver_memory: str = "1g") -> SparkSession:
    """A started (or the already active) loopback session with both readers registered."""
    import spark

    session = loopback_builder(master, app_name, driver_memory=driver_memory).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    spark.register(session)
    return session
