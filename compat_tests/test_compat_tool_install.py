"""``rmq-compat`` as a new user gets it: a fresh virtualenv of this Python 3.11, a plain (not
editable) ``pip install`` of a copy of the checkout with the ``[compat]`` extra, then that venv's
``rmq-compat`` against our gateway with a temporary HOME and ``RMQ_COMPAT_CACHE``: the selected
rows (the Java 5.3.3 remoting client, the Java, Python and Go gRPC clients) pass. So the package
ships what the tool needs (the scenario sources, the poms, the Go program, the Python client
programs) and the tool builds its programs from them on first use, away from the checkout's
``compat_tests/java/**/target`` and ``compat_tests/.cache``.

What is cold and what is not: the venv, the tool's cache (so ``mvn dependency:copy-dependencies``
runs for the 5.3.3 remoting client and rocketmq-client-java, ``javac`` compiles the scenario
programs, ``go build`` builds the Go client) and the HOME of the tool and of the gateway are new.
Warm, as on a machine where a user has run it once: pip's cache (the wheels of the dependencies;
the index is still asked), Maven's local repository (``~/.m2`` of the account: Java takes
``user.home`` from the password database, not ``$HOME``, so Maven copies the jars from there
instead of downloading them from Maven Central), and Go's module and build caches (passed on as
``GOMODCACHE`` and ``GOCACHE``). By hand, with an empty Maven repository too, the two resolutions
downloaded 107 MB and the same rows still passed.

The copy is the checkout's files that git knows or would add (``git ls-files``), so the package
is what a clone builds, not what earlier builds left in the tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from compat_tests.compat_matrix import ALL_FEATURES
from compat_tests.reference import REFERENCE_LIB
from compat_tests.targets import REPO, GatewayTarget
from compat_tests.test_compat_tool import grpc_address

pytestmark = [pytest.mark.compat, pytest.mark.slow]

VENV_TIMEOUT_S = 120.0
PIP_TIMEOUT_S = 900.0  # resolving the dependencies against the index, building our wheel
TOOL_TIMEOUT_S = 900.0
# One remoting row (5.3.3), one per gRPC client. Not --quick: it keeps one client per feature, and
# the Python and Go rows share the feature "gRPC send/receive" with the Java row.
ONLY = ("--only", "order,python-grpc-5,go-grpc-5", "--exclude", "java-4.9.8")
EXPECTED = {
    "orderly[java-5.3.3]",
    "gRPC FIFO[java-grpc-5]",
    "gRPC send/receive[python-grpc-5]",
    "gRPC send/receive[go-grpc-5]",
}


def checkout_copy(dest: Path) -> Path:
    """The files of the checkout git tracks or would add (regular files only), copied to ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    for name in sorted(set(listed.stdout.decode().split("\0")) - {""}):
        source = REPO / name
        if source.is_symlink() or not source.is_file():
            continue  # the symlinked build outputs of a worktree, deleted files
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest / name)
    return dest


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would let the venv import the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RMQ_GATEWAY_PURE", "VIRTUAL_ENV")}
    return {**env, **extra}


def go_caches() -> dict[str, str]:
    """The machine's Go module and build caches (``go env`` under the real HOME)."""
    go = shutil.which("go")
    if go is None:
        return {}
    found = subprocess.run([go, "env", "GOMODCACHE", "GOCACHE"], capture_output=True, text=True, check=True)
    modcache, buildcache = found.stdout.split()
    return {"GOMODCACHE": modcache, "GOCACHE": buildcache}


def timed(what: str, argv: list[str], timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **kwargs)
    print(f"{what}: {time.monotonic() - started:.0f} s")
    return result


def test_pip_installed_tool_builds_its_clients_and_passes_against_our_gateway(tmp_path: Path) -> None:
    if shutil.which("java") is None or not REFERENCE_LIB.is_dir():
        pytest.fail("java or the reference jars are missing: run scripts/setup-java.sh")
    source = checkout_copy(tmp_path / "src")
    venv = tmp_path / "venv"
    made = timed("venv", [sys.executable, "-m", "venv", str(venv)], VENV_TIMEOUT_S)
    assert made.returncode == 0, made.stderr
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"{source}[compat]"]
    installed = timed("pip install", pip, PIP_TIMEOUT_S, env=clean_env(), cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]

    target = GatewayTarget(tmp_path / "gateway", ALL_FEATURES)
    home, cache, out = tmp_path / "home", tmp_path / "cache", tmp_path / "r.json"
    home.mkdir()
    try:
        argv = [str(venv / "bin" / "rmq-compat"), "--namesrv", target.namesrv_addr]
        argv += ["--grpc", grpc_address(target), *ONLY, "--json", str(out)]
        env = clean_env(HOME=str(home), RMQ_COMPAT_CACHE=str(cache), **go_caches())
        result = timed("rmq-compat", argv, TOOL_TIMEOUT_S, env=env, cwd=home)
    finally:
        target.discard()
    print(result.stdout)
    assert out.is_file(), result.stderr[-3000:]
    report: dict[str, Any] = json.loads(out.read_text())
    rows = {r["id"]: (r["status"], r["reason"], r["seconds"]) for r in report["targets"][0]["results"]}
    print({key: f"{seconds:.0f} s" for key, (_, _, seconds) in rows.items()})
    assert {key: status for key, (status, _, _) in rows.items()} == dict.fromkeys(EXPECTED, "passed"), rows
    assert result.returncode == 0
    built = sorted(path.name.rsplit("-", 1)[0] for path in cache.iterdir())
    assert built == ["go-grpc5", "grpc5", "remoting-5.3.3"]
