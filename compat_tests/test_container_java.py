"""testcontainers-java with the gateway's image: compat_tests/java/testcontainers/ is a separate
Maven project (GenericContainer on the host network, ready on the image's HEALTHCHECK) in which
the unmodified RocketMQ 5.3.3 DefaultMQProducer and DefaultMQPushConsumer send and receive.
It runs here through ``mvn -q -B test``; Maven Central provides testcontainers-java."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.compat, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parent / "java" / "testcontainers"
MAVEN_TIMEOUT_S = 600.0  # first run resolves testcontainers-java from Maven Central


def test_java_testcontainers_producer_and_push_consumer() -> None:
    began = time.monotonic()
    result = subprocess.run(
        ["mvn", "-q", "-B", "test"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=MAVEN_TIMEOUT_S,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    report = (PROJECT / "target" / "surefire-reports" / "rmqgateway.GatewayContainerTest.txt").read_text()
    assert re.search(r"Tests run: 1, Failures: 0, Errors: 0, Skipped: 0", report), report
    print(f"mvn test with testcontainers-java: {time.monotonic() - began:.1f} s")
