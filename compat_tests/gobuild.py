"""Build the Go judges of ``compat_tests`` (``compat_tests/go``: the remoting client
``rocketmq-client-go/v2``; ``compat_tests/grpc_go``: the 5.x gRPC client
``rocketmq-clients/golang/v5``) with the Go toolchain, their modules from the Go module proxy.

A binary is kept in ``compat_tests/.cache/go`` under a name carrying a hash of its sources
(``*.go``, ``go.mod``, ``go.sum``): later runs and other test modules reuse it without calling
``go`` at all, and an edited source gets a fresh build (which removes the earlier ones). The
module download and the compile cache stay in Go's own caches (``GOMODCACHE``, ``GOCACHE``), so
even a fresh build after an edit takes seconds, not the minutes of the first download.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "go"
BUILD_TIMEOUT_S = 900.0  # a first build downloads the client's module graph


class GoBuildError(RuntimeError):
    """The toolchain is missing or ``go build`` failed; carries its output."""


def source_hash(source: Path) -> str:
    """A short digest of the files that decide the binary."""
    digest = hashlib.sha256()
    for path in sorted(source.iterdir()):
        if path.suffix == ".go" or path.name in ("go.mod", "go.sum"):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def go_binary(source: Path) -> Path:
    """The binary of the Go program in ``source``, built unless a build of the same sources is
    cached. Raises :class:`GoBuildError`."""
    out = CACHE / f"{source.name}-{source_hash(source)}"
    if out.is_file():
        return out
    go = shutil.which("go")
    if go is None:
        raise GoBuildError("the Go toolchain is missing (https://go.dev/dl/)")
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f"{out.name}.{os.getpid()}.partial")  # concurrent builds: last rename wins
    env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    result = subprocess.run(
        [go, "build", "-o", str(partial), "."],
        cwd=source,
        env=env,
        capture_output=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        raise GoBuildError(result.stderr.decode(errors="replace")[-3000:])
    partial.replace(out)
    for stale in CACHE.glob(f"{source.name}-*"):  # builds of earlier sources (~20 MB each)
        if stale != out and not stale.name.endswith(".partial"):
            stale.unlink(missing_ok=True)
    return out
