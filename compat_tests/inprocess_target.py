"""Our gateway in the test process itself (``gateway.testing.inprocess``), as a compat target.

Selected for the whole suite with ``--gateway-target inprocess``. It starts fastest and needs no
subprocess, but it cannot be killed: a scenario that restarts the broker with ``kill=True`` (crash
recovery) fails with that reason, so crash scenarios run on the subprocess or container targets.
"""

from __future__ import annotations

from pathlib import Path

from compat_tests.reference import free_port
from compat_tests.store_checks import offsets_file
from gateway.testing.inprocess import InProcessGateway

COMMIT_LOG_FILE_SIZE = str(256 * 1024 * 1024)  # as the subprocess target


class InProcessTarget:
    name = "gateway"

    def __init__(self, workdir: Path, broker_conf: dict[str, str] | None = None) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.store = workdir / "store"
        self.properties = {"mappedFileSizeCommitLog": COMMIT_LOG_FILE_SIZE, **(broker_conf or {})}
        self.namesrv_port = free_port()
        self.broker_port = free_port(offsets=(-2, 0))  # and its VIP channel at - 2
        self.gateway = self._start()

    def _start(self) -> InProcessGateway:
        return InProcessGateway(
            self.store,
            namesrv_port=self.namesrv_port,
            broker_port=self.broker_port,
            properties=self.properties,
        ).start()

    @property
    def namesrv_addr(self) -> str:
        return self.gateway.namesrv_addr

    def persisted_offsets(self) -> str:
        return offsets_file(self.store)

    def restart_broker(self, *, kill: bool = False) -> None:
        """Stop gracefully and start again on the same store and ports; ``kill`` is refused."""
        if kill:
            raise RuntimeError(
                "an in-process gateway cannot be killed: run crash scenarios with "
                "--gateway-target subprocess or container"
            )
        self.gateway.stop()
        self.gateway = self._start()

    def discard(self) -> None:
        self.stop()

    def stop(self) -> None:
        self.gateway.stop()
