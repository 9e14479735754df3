"""The Java testcontainers module (``docker/testcontainers/java``): ``RocketMQGatewayContainer``
and its two examples, run by Maven as a user's project would run them. The JUnit 5 example sends
with the unmodified RocketMQ 5.3.3 ``DefaultMQProducer`` and receives with its
``DefaultMQPushConsumer`` through declared topics, retries through a ``SYSTEM_BUSY`` fault
answered twice, and checks the stored messages, and a master/slave pair of its own (``withSlaveOf``)
stores on the slave what the SYNC_MASTER acknowledged; the Spring Boot example
(rocketmq-spring-boot-starter 2.3.5) gets the container's NameServer address through
``@DynamicPropertySource``. One container per test class. The module's own unit test checks its
JSON reader and writer without Docker.

Maven runs offline (``-o``): ``scripts/setup-testcontainers.sh`` (run by ``scripts/setup.sh``)
resolved every dependency beforehand, so the suite downloads nothing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.compat, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "docker" / "testcontainers" / "java"
MAVEN_TIMEOUT_S = 600.0  # 38-60 s measured on the loaded 2-core machine (two containers, one JVM per module)
MODULES = {  # Maven module -> (its test class, its number of tests)
    "rocketmq-gateway-testcontainers": ("io.github.rmqgateway.testcontainers.JsonTest", 4),
    "examples/junit5": ("io.github.rmqgateway.examples.junit5.OrdersTest", 4),
    "examples/spring-boot": ("io.github.rmqgateway.examples.spring.OrdersApplicationTest", 1),
}
REPORTS = {
    PROJECT / module / "target" / "surefire-reports" / f"{test_class}.txt": tests
    for module, (test_class, tests) in MODULES.items()
}


def test_java_module_examples_pass_offline() -> None:
    for report in REPORTS:
        shutil.rmtree(report.parent, ignore_errors=True)  # no report of an earlier run can pass
    began = time.monotonic()
    result = subprocess.run(
        ["mvn", "-o", "-q", "-B", "test"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=MAVEN_TIMEOUT_S,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, (
        "mvn -o test failed (scripts/setup-testcontainers.sh resolves the dependencies):\n" + output[-6000:]
    )
    for report, tests in REPORTS.items():
        text = report.read_text()
        assert re.search(rf"Tests run: {tests}, Failures: 0, Errors: 0, Skipped: 0", text), text
    print(f"mvn -o test of docker/testcontainers/java: {time.monotonic() - began:.1f} s")
