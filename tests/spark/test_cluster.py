"""The same reads on a Spark standalone cluster: a master and two workers started from PySpark's own
distribution (``bin/spark-class``), on loopback with one core and small memory each, stopped by the
test. The file mode reads store directories; the network mode reads a NameServer and two brokers
(``rmq-gateway namesrv`` and ``rmq-gateway broker`` subprocesses, :mod:`compat_tests.clusters`),
each executor pulling its partitions from the brokers itself.

Why the first attempt timed out: nothing was wrong with the cluster (it registers and runs the
job when given time), but on the loaded 2-core machine every step is a JVM or Python start-up of
10-25 s, and they ran one after the other: master, then worker, then a second driver JVM that
planned the read twice (``df.rdd.getNumPartitions()`` is a second planning pass, each one a Python
process importing pyspark, pyarrow and numpy), all behind a 120 s boot poll and a 240 s job limit.
Here the workers start together with the master (they retry until the master listens), the
JVMs start with the C1 compiler only, the job plans once, and the limits are per step.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from compat_tests.clusters import BROKERS, READY_S, GatewayCluster
from gateway.testing.ports import free_port
from gateway.testing.probe import wait_ready
from spark.remote import Connection
from tests.spark.netdata import create_topic, send, wait_route
from tests.spark.stores import Expected
from tests.spark.test_reader import GOLDEN

SPARK_HOME = Path(pyspark.__file__).resolve().parent
REPO = Path(__file__).resolve().parent.parent.parent
BOOT_TIMEOUT_S = 150.0  # master and workers up and registered, on a loaded 2-core machine
JOB_TIMEOUT_S = 360.0  # the driver process: JVM start, two executors launched, one read
STOP_TIMEOUT_S = 20.0
WORKERS = ("worker-1", "worker-2")
NET_TOPIC = "SparkClusterNet"
NET_QUEUES = 2  # per broker
NET_PER_BROKER = 24
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
    """Environment of master, workers and driver: loopback only, this venv's Python and this repo."""
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
        **{
            name: [
                "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                "--memory", "1g", "--webui-port", "0", "--work-dir", str(work / name), master_url,
            ]
            for name in WORKERS
        },
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
        for name in WORKERS:
            wait_for_line(work / f"{name}.log", "Successfully registered with master", procs[name], deadline)
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


def run_job(cluster: Cluster, *args: str) -> dict[str, Any]:
    """:mod:`tests.spark.cluster_job` on ``cluster``: its JSON result, checked to come from both workers."""
    try:
        result = subprocess.run(
            [sys.executable, "-m", "tests.spark.cluster_job", cluster.master_url, *args],
            env=cluster.env, cwd=REPO, capture_output=True, timeout=JOB_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as err:
        stderr = (err.stderr or b"").decode(errors="replace")[-3000:]
        pytest.fail(f"the cluster job took over {JOB_TIMEOUT_S} s: {stderr}\n{_executor_logs(cluster)}")
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-4000:] + _executor_logs(cluster)
    got: dict[str, Any] = json.loads(result.stdout.decode().strip().splitlines()[-1])
    assert got["master"] == cluster.master_url
    assert got["executors"] == len(WORKERS)  # the job waited for an executor on each worker
    assert got["executor_hosts"] == ["127.0.0.1"]
    return got


def test_read_on_standalone_cluster_equals_local(
    cluster: Cluster, session: SparkSession, our_store: tuple[Path, list[Expected]]
) -> None:
    stores = [str(our_store[0]), str(GOLDEN)]
    got = run_job(cluster, *stores)
    assert got["partitions"] > 2  # maxBytesPerPartition split the segments
    local = session.read.format("rocketmq").load(stores)
    expected = sorted(
        [r["broker"], r["uniq_key"], r["digest"]]
        for r in local.select("broker", "uniq_key", F.sha2("body", 256).alias("digest")).collect()
    )
    assert got["rows"] == expected
    assert len(expected) == len(our_store[1]) + 163  # ours without its system topic, and the golden store


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayCluster]:
    """Our NameServer and two brokers as subprocesses, with NET_TOPIC on both."""
    gateway = GatewayCluster(tmp_path_factory.mktemp("brokers"))
    try:
        gateway.start_namesrv()
        for name in BROKERS:
            gateway.start_broker(name)
        wait_ready(gateway.namesrv_addr, READY_S, min_brokers=len(BROKERS))
        for name in BROKERS:
            create_topic(f"127.0.0.1:{gateway.broker_ports[name]}", NET_TOPIC, NET_QUEUES)
        wait_route(gateway.namesrv_addr, NET_TOPIC, NET_QUEUES * len(BROKERS))
        yield gateway
    finally:
        gateway.stop()


def test_network_read_on_standalone_cluster_equals_local(
    cluster: Cluster, session: SparkSession, brokers: GatewayCluster
) -> None:
    sent = []
    for name in BROKERS:
        with Connection(f"127.0.0.1:{brokers.broker_ports[name]}") as conn:
            for i in range(NET_PER_BROKER):
                body = f"{name}-{i}".encode()
                record = send(conn, name, NET_TOPIC, i % NET_QUEUES, body, None, None)
                sent.append([name, record.uniq_key, hashlib.sha256(body).hexdigest()])
    got = run_job(cluster, "--namesrv", brokers.namesrv_addr, NET_TOPIC)
    local = session.read.format("rocketmq").option("namesrvAddr", brokers.namesrv_addr)
    df = local.option("topics", NET_TOPIC).load()
    expected = sorted(
        [r["broker"], r["uniq_key"], r["digest"]]
        for r in df.select("broker", "uniq_key", F.sha2("body", 256).alias("digest")).collect()
    )
    assert got["rows"] == expected
    assert expected == sorted(sent)
    assert got["partitions"] > NET_QUEUES * len(BROKERS)  # maxRowsPerPartition split the queues


def _executor_logs(cluster: Cluster) -> str:
    logs = sorted(p for name in WORKERS for p in (cluster.work / name).glob("app-*/*/stderr"))
    return "".join(f"\n--- {p}:\n{_tail(p)}" for p in logs) or "\n(no executor logs)\n" + "".join(
        _tail(cluster.work / f"{name}.log") for name in WORKERS
    )
