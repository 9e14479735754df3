"""The two servers every broker scenario runs against: our gateway and the real Apache RocketMQ.

* :class:`GatewayTarget`: ``rmq-gateway standalone`` as a subprocess (the same CLI users run),
  with its own store directory and a ``broker.conf`` for settings such as ``flushDiskType``.
* :class:`ReferenceTarget`: the real Apache RocketMQ 5.3.3 NameServer and Broker from Maven
  Central's jars (:class:`compat_tests.reference.ReferenceServers`); ``reference-5.5.0`` is the
  same with the 5.5.0 jars.

Both offer ``namesrv_addr``, ``restart_broker(kill=...)`` (SIGTERM, or SIGKILL to test crash
recovery) and ``stop()``. Everything listens on 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Protocol

from compat_tests.reference import REFERENCE_LIBS, ReferenceServers, free_port
from compat_tests.store_checks import offsets_file

REPO = Path(__file__).resolve().parent.parent
BOOT_TIMEOUT_S = 30.0


class Target(Protocol):
    name: str

    @property
    def namesrv_addr(self) -> str: ...

    def persisted_offsets(self) -> str:
        """The broker's ``config/consumerOffset.json`` as last written ("" before the first)."""
        ...

    def restart_broker(self, *, kill: bool = False) -> None: ...

    def stop(self) -> None:
        """Stop cleanly: the broker flushes its store and persists its offsets on the way out."""
        ...

    def discard(self) -> None:
        """The end of the target: stop it as fast as it goes, for a store nothing reads afterwards
        (a fixture's tear-down). A target already stopped stays so."""
        ...


class GatewayTarget:
    name = "gateway"

    def __init__(
        self,
        workdir: Path,
        broker_conf: dict[str, str] | None = None,
        system_properties: tuple[str, ...] = (),
    ) -> None:
        """``system_properties``: ``key=value`` given as ``-D`` flags (``tls.server.mode=...``)."""
        self.workdir = workdir
        self.system_properties = system_properties
        workdir.mkdir(parents=True, exist_ok=True)
        self.namesrv_port = free_port()
        self.broker_port = free_port(offsets=(-2, 0))  # and its VIP channel at - 2
        self.conf = workdir / "broker.conf"
        lines = {"mappedFileSizeCommitLog": str(256 * 1024 * 1024), **(broker_conf or {})}
        self.conf.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        self.proc: subprocess.Popen[bytes] | None = None
        self._start()

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    def persisted_offsets(self) -> str:
        return offsets_file(self.workdir / "store")

    @property
    def log(self) -> Path:
        return self.workdir / "gateway.log"

    def _start(self) -> None:
        offset = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "gateway.cli",
                    "standalone",
                    "--namesrv-port",
                    str(self.namesrv_port),
                    "--broker-port",
                    str(self.broker_port),
                    "--grpc-port",
                    "0",  # any free port: every test worker runs a gateway of its own
                    "--store",
                    str(self.workdir / "store"),
                    "-c",
                    str(self.conf),
                    *(f"-D{prop}" for prop in self.system_properties),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env={**os.environ, "HOME": str(self.workdir)},
            )
        deadline = time.monotonic() + BOOT_TIMEOUT_S
        while time.monotonic() < deadline:
            text = self.log.read_bytes()[offset:].decode(errors="replace")
            if re.search(r"ready: namesrv=", text):
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited ({self.proc.returncode}):\n{text[-3000:]}")
            time.sleep(0.05)
        raise TimeoutError(f"gateway not ready within {BOOT_TIMEOUT_S} s")

    def _halt(self, kill: bool) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def restart_broker(self, *, kill: bool = False) -> None:
        """Stop the whole standalone process (SIGTERM, or SIGKILL) and start it on the same store."""
        self._halt(kill)
        self._start()

    def stop(self) -> None:
        self._halt(False)

    def discard(self) -> None:
        self._halt(False)  # ours stops in well under a second: its clean stop is exercised too


class ReferenceTarget:
    name = "reference"

    def __init__(
        self,
        workdir: Path,
        broker_conf: dict[str, str] | None = None,
        system_properties: tuple[str, ...] = (),
        version: str = "5.3.3",
    ) -> None:
        """``system_properties``: ``key=value`` JVM system properties of both servers;
        ``version``: a key of :data:`compat_tests.reference.REFERENCE_LIBS`."""
        self.name = "reference" if version == "5.3.3" else f"reference-{version}"
        workdir.mkdir(parents=True, exist_ok=True)
        extra = {
            "mappedFileSizeCommitLog": str(256 * 1024 * 1024),
            **(broker_conf or {}),
        }
        self.servers = ReferenceServers.on_loopback(
            workdir, extra_conf=tuple(f"{k}={v}" for k, v in extra.items()), version=version
        )
        self.servers.system_properties = system_properties
        self.servers.checks_exits = True  # this target's processes die only through its methods
        try:
            self.servers.start_namesrv()
            self.servers.start_broker()
            self.servers.wait_registered()
        except BaseException:
            self.servers.stop()
            raise

    @property
    def namesrv_addr(self) -> str:
        return self.servers.namesrv_addr

    def persisted_offsets(self) -> str:
        return offsets_file(self.servers.store)

    def restart_broker(self, *, kill: bool = False) -> None:
        broker = self.servers.broker
        if broker is not None and broker.poll() is None:
            if kill:
                self.servers.expect_exit(broker)
                broker.kill()
                broker.wait(10)
            else:
                self.servers.stop_broker()
        out = self.servers.workdir / "broker.out"
        out.rename(out.with_suffix(f".out.{int(time.time() * 1000)}"))
        self.servers.start_broker()
        self.servers.wait_registered()

    def stop(self) -> None:
        self.servers.stop()

    def discard(self) -> None:
        """Killed (:meth:`ReferenceServers.stop`): the 5.3.3 broker's clean stop takes ~20 s."""
        self.servers.stop(kill=True)


#: How our gateway runs for the whole suite: ``subprocess`` (``rmq-gateway standalone``, the
#: default), ``container`` (the Docker image) or ``inprocess``; set by ``--gateway-target``.
GATEWAY_TARGET_ENV = "RMQ_GATEWAY_TARGET"


def start_target(name: str, workdir: Path, broker_conf: dict[str, str] | None = None) -> Target:
    if name == "gateway":
        kind = os.environ.get(GATEWAY_TARGET_ENV, "subprocess")
        if kind == "container":
            from compat_tests.container_target import ContainerTarget  # needs testcontainers

            return ContainerTarget(workdir, broker_conf)
        if kind == "inprocess":
            from compat_tests.inprocess_target import InProcessTarget

            return InProcessTarget(workdir, broker_conf)
        return GatewayTarget(workdir, broker_conf)
    if name == "reference":
        return ReferenceTarget(workdir, broker_conf)
    if name.startswith("reference-") and name.removeprefix("reference-") in REFERENCE_LIBS:
        return ReferenceTarget(workdir, broker_conf, version=name.removeprefix("reference-"))
    raise ValueError(name)
