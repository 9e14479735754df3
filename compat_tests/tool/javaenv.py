"""The Java side of the tool: where the client jars and the compiled scenario programs are.

In a source checkout ``scripts/setup-java.sh`` has filled ``compat_tests/java/**/target`` and
those are used as they are. An installed tool ships only the poms and the Java sources (package
data); on first use it resolves the jars with Maven (``mvn dependency:copy-dependencies``) and
compiles the sources with ``javac`` into a cache directory (``$RMQ_COMPAT_CACHE``, else
``~/.cache/rmq-compat``), keyed by a hash of the poms and sources. Without ``java``, ``javac`` or
``mvn`` the Java rows are "not run" with an install hint, never a crash.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from compat_tests.tool.outcomes import NotRun
from compat_tests.tool.process import run

JAVA_DIR = Path(__file__).resolve().parent.parent / "java"
INSTALL_HINT = "needs Java 17 and Maven (e.g. apt-get install openjdk-17-jdk-headless maven)"
BUILD_TIMEOUT_S = 900.0  # one Maven resolution from Maven Central on a slow link
JVM_OPTIONS = ("-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dfile.encoding=UTF-8")


def cache_root() -> Path:
    configured = os.environ.get("RMQ_COMPAT_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "rmq-compat"


class JavaEnv:
    """Class paths of the three Java parts (remoting scenarios per client line, the gRPC client's
    scenarios, mqadmin), built on first use; each failure is remembered and raised as NotRun."""

    def __init__(self, source: Path = JAVA_DIR, cache: Path | None = None) -> None:
        self.source = source
        self.cache = cache if cache is not None else cache_root()
        self._built: dict[str, str] = {}
        self._failed: dict[str, str] = {}

    def java(self) -> str:
        found = shutil.which("java")
        if found is None:
            raise NotRun(INSTALL_HINT)
        return found

    def _tools(self, *names: str) -> None:
        missing = [name for name in names if shutil.which(name) is None]
        if missing:
            raise NotRun(f"{' and '.join(missing)} missing: {INSTALL_HINT}")

    def _stamp(self, *parts: Path) -> str:
        digest = hashlib.sha1()
        for part in parts:
            files = sorted(part.rglob("*.java")) if part.is_dir() else [part]
            for path in files:
                digest.update(path.name.encode())
                digest.update(path.read_bytes())
        return digest.hexdigest()[:12]

    def _cached(self, key: str, build: Callable[[], str]) -> str:
        if key in self._built:
            return self._built[key]
        if key in self._failed:
            raise NotRun(self._failed[key])
        try:
            classpath = build()
        except NotRun as err:
            self._failed[key] = str(err)
            raise
        self._built[key] = classpath
        return classpath

    def remoting(self, line: str) -> str:
        """Class path of ``rmqcompat.*`` compiled against the remoting client ``line``."""
        self.java()
        checkout = self.source / "target"
        classes, lib = checkout / f"classes-{line}", checkout / f"lib-{line}"
        if (classes / "rmqcompat" / "Scenario.class").is_file() and lib.is_dir():
            return f"{classes}{os.pathsep}{lib}/*"

        def build() -> str:
            stamp = self._stamp(self.source / "pom.xml", self.source / "src" / "rmqcompat")
            out = self.cache / f"remoting-{line}-{stamp}"
            sources = sorted((self.source / "src" / "rmqcompat").glob("*.java"))
            mvn = ["-Dclient.version=" + line]
            return self._build(out, self.source / "pom.xml", mvn, sources)

        return self._cached(f"remoting-{line}", build)

    def grpc(self) -> str:
        """Class path of ``rmqgrpc.*`` with rocketmq-client-java 5.0.8."""
        self.java()
        target = self.source / "grpc5" / "target"
        if (target / "classes" / "rmqgrpc").is_dir() and (target / "lib").is_dir():
            return f"{target / 'classes'}{os.pathsep}{target / 'lib'}/*"

        def build() -> str:
            grpc5 = self.source / "grpc5"
            stamp = self._stamp(grpc5 / "pom.xml", grpc5 / "src" / "rmqgrpc")
            sources = sorted((grpc5 / "src" / "rmqgrpc").glob("*.java"))
            return self._build(self.cache / f"grpc5-{stamp}", grpc5 / "pom.xml", [], sources)

        return self._cached("grpc", build)

    def tools(self) -> str:
        """Class path of ``mqadmin`` (rocketmq-tools 5.3.3)."""
        self.java()
        lib = self.source / "reference" / "target" / "lib"
        if lib.is_dir():
            return f"{lib}/*"

        def build() -> str:
            pom = self.source / "reference" / "pom.xml"
            return self._build(self.cache / f"tools-{self._stamp(pom)}", pom, [], [])

        return self._cached("tools", build)

    def _build(self, out: Path, pom: Path, mvn_args: list[str], sources: list[Path]) -> str:
        """Resolve ``pom``'s dependencies into ``out/lib`` and compile ``sources`` into
        ``out/classes`` once (a lock file keeps two runs from building the same thing)."""
        done = out / ".done"
        classpath = f"{out / 'classes'}{os.pathsep}{out / 'lib'}/*"
        if done.is_file():
            return classpath
        self._tools("javac", "mvn")
        out.mkdir(parents=True, exist_ok=True)
        with (out / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if done.is_file():
                return classpath
            resolve = ["mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies", *mvn_args]
            resolve.append(f"-DoutputDirectory={out / 'lib'}")
            result = run(resolve, out, BUILD_TIMEOUT_S)
            if result.code != 0 or result.timed_out:
                raise NotRun(f"could not fetch the client jars with Maven: {result.error()}")
            if sources:
                (out / "classes").mkdir(exist_ok=True)
                argv = ["javac", "-nowarn", "-d", str(out / "classes"), "-cp", f"{out / 'lib'}/*"]
                result = run([*argv, *map(str, sources)], out, BUILD_TIMEOUT_S)
                if result.code != 0 or result.timed_out:
                    raise NotRun(f"could not compile the scenario programs: {result.error()}")
            done.write_text("ok\n")
        return classpath
