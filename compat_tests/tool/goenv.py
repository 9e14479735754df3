"""The Go side of the tool: the binary of the Go 5.x gRPC client program (``compat_tests/grpc_go``,
``github.com/apache/rocketmq-clients/golang/v5`` v5.1.4).

In a source checkout the suite's own build (``compat_tests/.cache/go``, made by
:mod:`compat_tests.gobuild`) is used when it is there. Otherwise, as in an installed tool, which
ships the program's ``main.go``, ``go.mod`` and ``go.sum`` as package data, the first use copies
them into the tool's cache (``$RMQ_COMPAT_CACHE``, else ``~/.cache/rmq-compat``) and runs
``go build`` there, keyed by a hash of those files; the modules come from the Go module proxy into
Go's own module cache. Without ``go`` the Go row is "not run" with an install hint.
"""

from __future__ import annotations

import fcntl
import shutil
import threading
from pathlib import Path

from compat_tests.gobuild import CACHE as CHECKOUT_CACHE
from compat_tests.gobuild import source_hash
from compat_tests.tool.javaenv import cache_root
from compat_tests.tool.outcomes import NotRun
from compat_tests.tool.process import run

GO_DIR = Path(__file__).resolve().parent.parent / "grpc_go"
INSTALL_HINT = "needs Go 1.24 or later to build the Go client (https://go.dev/dl/)"
BUILD_TIMEOUT_S = 900.0  # a first build downloads the client's module graph and compiles gRPC
BINARY = "grpcgo"


class GoEnv:
    """Where the Go gRPC client's binary is, built on first use; a failed build is remembered and
    raised again as NotRun."""

    def __init__(self, source: Path = GO_DIR, cache: Path | None = None) -> None:
        self.source = source
        self.cache = cache if cache is not None else cache_root()
        self._lock = threading.Lock()
        self._binary: Path | None = None
        self._failed: str | None = None

    def grpc(self) -> Path:
        """The Go client program's binary. Raises :class:`NotRun` without ``go`` or when the
        build fails (with the compiler's own words)."""
        with self._lock:
            if self._binary is not None:
                return self._binary
            if self._failed is not None:
                raise NotRun(self._failed)
            try:
                self._binary = self._find_or_build()
            except NotRun as err:
                self._failed = str(err)
                raise
            return self._binary

    def _find_or_build(self) -> Path:
        stamp = source_hash(self.source)
        checkout = CHECKOUT_CACHE / f"{self.source.name}-{stamp}"
        if checkout.is_file():
            return checkout
        out = self.cache / f"go-grpc5-{stamp}"
        binary = out / BINARY
        if binary.is_file():
            return binary
        go = shutil.which("go")
        if go is None:
            raise NotRun(INSTALL_HINT)
        out.mkdir(parents=True, exist_ok=True)
        with (out / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another run building the same sources
            if binary.is_file():
                return binary
            src = out / "src"
            src.mkdir(exist_ok=True)
            for path in self.source.iterdir():
                if path.suffix == ".go" or path.name in ("go.mod", "go.sum"):
                    shutil.copyfile(path, src / path.name)
            partial = out / f"{BINARY}.partial"
            env = {"GOFLAGS": "-mod=mod -buildvcs=false", "CGO_ENABLED": "0"}
            argv = [go, "build", "-C", str(src), "-o", str(partial), "."]  # -C: Go 1.20 on
            result = run(argv, out, BUILD_TIMEOUT_S, env)
            if result.code != 0 or result.timed_out:
                partial.unlink(missing_ok=True)
                raise NotRun(f"could not build the Go client: {_tail(result.stderr)}")
            partial.replace(binary)
        return binary


def _tail(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return " | ".join(lines[-3:])[-600:] or "go build failed"
