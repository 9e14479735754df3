"""The Go testcontainers module (``docker/testcontainers/go``, on testcontainers-go): its example
``go test`` starts the gateway's image once for the package, sends with the unmodified RocketMQ
5.x Go gRPC client (``github.com/apache/rocketmq-clients/golang/v5`` v5.1.4) to a declared
topic, retries through a ``TOO_MANY_REQUESTS`` fault answered once, and checks what the broker
stored through the control endpoint; a slave of that container (``WithSlaveOf``) holds what it
stored.

Go runs offline (``GOPROXY=off``, ``-mod=readonly``): ``scripts/setup-testcontainers.sh`` (run by
``scripts/setup.sh``) downloaded the module graph and compiled the test binary beforehand.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.compat, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
MODULE = REPO / "docker" / "testcontainers" / "go"
GO_TIMEOUT_S = 300.0  # ~6 s measured once compiled; a cold compile takes ~2 min on 2 cores
TESTS = (
    "TestSentMessageIsStoredWithItsKeysTagAndProperties",
    "TestProducerRetriesThroughTooManyRequests",
    "TestSlaveHoldsWhatItsMasterStored",
)


def test_go_module_example_passes_offline(tmp_path: Path) -> None:
    go = shutil.which("go")
    assert go is not None, "the Go toolchain is missing (https://go.dev/dl/)"
    env = {
        **os.environ,
        "GOPROXY": "off",
        "GOFLAGS": "-mod=readonly",
        "HOME": str(tmp_path),  # the RocketMQ client logs under ~/logs/rocketmq
        "GOCACHE": os.environ.get("GOCACHE")
        or subprocess.check_output([go, "env", "GOCACHE"], text=True).strip(),
        "GOMODCACHE": os.environ.get("GOMODCACHE")
        or subprocess.check_output([go, "env", "GOMODCACHE"], text=True).strip(),
        "TESTCONTAINERS_RYUK_DISABLED": "true",  # the reaper image cannot be pulled here
        "TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1",
    }
    began = time.monotonic()
    result = subprocess.run(
        [go, "test", "-count=1", "-v", "."],
        cwd=MODULE,
        env=env,
        capture_output=True,
        text=True,
        timeout=GO_TIMEOUT_S,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, (
        "go test failed (scripts/setup-testcontainers.sh downloads the modules):\n" + output[-6000:]
    )
    for name in TESTS:
        assert re.search(rf"^--- PASS: {name} ", result.stdout, re.MULTILINE), output[-6000:]
    print(f"go test of docker/testcontainers/go: {time.monotonic() - began:.1f} s")
