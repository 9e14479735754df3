"""The same read on a Spark standalone cluster: a master and one worker started from PySpark's own
distribution (``bin/spark-class``), on loopback with small memory, stopped by the test."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import pyspark
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tests.spark.test_reader import GOLDEN

SPARK_HOME = Path(pyspark.__file__).resolve().parent
REPO = Path(__file__).resolve().parent.parent.parent
BOOT_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_line(log: Path, text: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + BOOT_TIMEOUT_S
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            pytest.fail(f"{log.name} exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)
    pytest.fail(f"{text!r} not in {log} after {BOOT_TIMEOUT_S} s: {log.read_text(errors='replace')[-2000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    work = tmp_path_factory.mktemp("cluster")
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "HOME": str(work),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
    }
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        master_log = work / "master.log"
        with master_log.open("wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(free_port())],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            ))  # fmt: skip
        wait_for_line(master_log, "I have been elected leader", procs[0])
        worker_log = work / "worker.log"
        with worker_log.open("wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2",
                 "--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(work / "worker"),
                 master_url],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            ))  # fmt: skip
        wait_for_line(worker_log, "Successfully registered with master", procs[1])
        yield master_url, env
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_read_on_standalone_cluster_equals_local(
    cluster: tuple[str, dict[str, str]], session: SparkSession, our_store: tuple[Path, list[dict]]
) -> None:
    master_url, env = cluster
    stores = [str(our_store[0]), str(GOLDEN)]
    result = subprocess.run(
        [sys.executable, "-m", "tests.spark.cluster_job", master_url, *stores],
        env=env, cwd=REPO, capture_output=True, timeout=240, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-4000:]
    got = json.loads(result.stdout.decode().strip().splitlines()[-1])
    assert got["master"] == master_url
    assert got["executors"] >= 2  # the driver and the worker's executor
    assert got["partitions"] > 2
    local = session.read.format("rocketmq").load(stores)
    expected = sorted(
        [r["broker"], r["uniq_key"], r["digest"]]
        for r in local.select("broker", "uniq_key", F.sha2("body", 256).alias("digest")).collect()
    )
    assert got["rows"] == expected
    assert len(expected) == len(our_store[1]) + 163
