"""The same read on a Spark standalone cluster: a master and one worker started from PySpark's own
distribution (``bin/spark-class``), on loopback with one core and small memory, stopped by the test.

Why the first attempt timed out: nothing was wrong with the cluster (it registers and runs the
job when given time), but on the loaded 2-core machine every step is a JVM or Python start-up of
10-25 s, and they ran one after the other: master, then worker, then a second driver JVM that
planned the read twice (``df.rdd.getNumPartitions()`` is a second planning pass, each one a Python
process importing pyspark, pyarrow and numpy), all behind a 120 s boot poll and a 240 s job limit.
Here the worker starts together with the master (it retries until the master listens), the
JVMs start with the C1 compiler only, the job plans once, and the limits are per step.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from gateway.testing.ports import free_port
from tests.spark.stores import Expected
from tests.spark.test_reader import GOLDEN

SPARK_HOME = Path(pyspark.__file__).resolve().parent
REPO = Path(__file__).resolve().parent.parent.parent
BOOT_TIMEOUT_S = 150.0  # master and worker up and registered, on a loaded 2-core machine
JOB_TIMEOUT_S = 240.0  # the driver process: JVM start, executor launch, one read
STOP_TIMEOUT_S = 20.0
# Start-up matters more than peak speed for a few hundred rows: C1 only, serial GC.
FAST_START_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


class Cluster:
    def __init__(self, master_url: str, env: dict[str, str], work: Path) -> None:
        self.master_url = master_url
        self.env = env
        self.work = work


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"


def wait_for_line(log: Path, text: str, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            pytest.fail(f"{log.name}: the process exited ({proc.returncode}): {_tail(log)}")
        time.sleep(0.2)
    pytest.fail(f"{text!r} not in {log.name} after {BOOT_TIMEOUT_S} s: {_tail(log)}")


def cluster_env(work: Path) -> dict[str, str]:
    """Environment of master, worker and driver: loopback only, this venv's Python and this repo."""
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "HOME": str(work),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(work / "local"),
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": FAST_START_JVM,
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),  # executors' Python workers import spark/ from this checkout
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("cluster")
    env = cluster_env(work)
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    daemons = {
        "master": [
            "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
            "--webui-port", "0",
        ],
        "worker": [
            "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
            "--memory", "1g", "--webui-port", "0", "--work-dir", str(work / "worker"), master_url,
        ],
    }  # fmt: skip
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name, args in daemons.items():
            with (work / f"{name}.log").open("wb") as out:
                procs[name] = subprocess.Popen(
                    [spark_class, *args], env=env, stdout=out, stderr=subprocess.STDOUT
                )
        deadline = time.monotonic() + BOOT_TIMEOUT_S
        wait_for_line(work / "master.log", "I have been elected leader", procs["master"], deadline)
        wait_for_line(work / "worker.log", "Successfully registered with master", procs["worker"], deadline)
        yield Cluster(master_url, env, work)
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_read_on_standalone_cluster_equals_local(
    cluster: Cluster, session: SparkSession, our_store: tuple[Path, list[Expected]]
) -> None:
    stores = [str(our_store[0]), str(GOLDEN)]
    try:
        result = subprocess.run(
            [sys.executable, "-m", "tests.spark.cluster_job", cluster.master_url, *stores],
            env=cluster.env, cwd=REPO, capture_output=True, timeout=JOB_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as err:
        stderr = (err.stderr or b"").decode(errors="replace")[-3000:]
        pytest.fail(f"the cluster job took over {JOB_TIMEOUT_S} s: {stderr}\n{_executor_logs(cluster)}")
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-4000:] + _executor_logs(cluster)
    got = json.loads(result.stdout.decode().strip().splitlines()[-1])
    assert got["master"] == cluster.master_url
    assert got["executors"] == 1
    assert got["executor_hosts"] == ["127.0.0.1"]
    assert got["partitions"] > 2  # maxBytesPerPartition split the segments
    local = session.read.format("rocketmq").load(stores)
    expected = sorted(
        [r["broker"], r["uniq_key"], r["digest"]]
        for r in local.select("broker", "uniq_key", F.sha2("body", 256).alias("digest")).collect()
    )
    assert got["rows"] == expected
    assert len(expected) == len(our_store[1]) + 163  # ours without its system topic, and the golden store


def _executor_logs(cluster: Cluster) -> str:
    logs = sorted((cluster.work / "worker").glob("app-*/*/stderr"))
    return (
        "".join(f"\n--- {p}:\n{_tail(p)}" for p in logs)
        or f"\n(no executor logs)\n{_tail(cluster.work / 'worker.log')}"
    )
