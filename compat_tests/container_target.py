"""Our gateway's container image as a compat target, beside ``compat_tests/targets.py``'s
``GatewayTarget`` (subprocess) and ``ReferenceTarget`` (the real broker).

:class:`ContainerTarget` offers the same protocol as ``targets.Target``: ``name``,
``namesrv_addr``, ``restart_broker(kill=...)`` and ``stop()``. The container runs
``rmq-gateway standalone`` on the host network (free ports on 127.0.0.1, loopback only) through
the testcontainers module; a restart stops (SIGTERM, or SIGKILL with ``kill=True``) and starts
the same container, so the store on its ``/data`` volume carries over, as a restart of the
subprocess target reuses its store directory.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from gateway.testing.container import DEFAULT_IMAGE, STARTUP_TIMEOUT_S, RocketMQGatewayContainer
from gateway.testing.probe import wait_ready

logger = logging.getLogger(__name__)

STOP_GRACE_S = 20  # docker stop's SIGTERM-to-SIGKILL delay: the gateway drains and flushes first
COMMIT_LOG_FILE_SIZE = str(256 * 1024 * 1024)  # as GatewayTarget: smaller files, faster tests


class ContainerTarget:
    name = "container"

    def __init__(
        self, workdir: Path, broker_conf: dict[str, str] | None = None, image: str = DEFAULT_IMAGE
    ) -> None:
        os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # no reaper image offline
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        properties = {"mappedFileSizeCommitLog": COMMIT_LOG_FILE_SIZE, **(broker_conf or {})}
        self.container = RocketMQGatewayContainer(image, properties=properties)
        self.container.start()

    @property
    def namesrv_addr(self) -> str:
        return self.container.get_namesrv_address()

    def persisted_offsets(self) -> str:
        """Read inside the container (its store is on the image's ``/data`` volume)."""
        code, out = self.container.exec(["cat", "/data/store/config/consumerOffset.json"])
        return out.decode() if code == 0 else ""

    def restart_broker(self, *, kill: bool = False) -> None:
        """Stop the container (SIGTERM, or SIGKILL) and start it again on the same volume."""
        wrapped = self.container.get_wrapped_container()
        if kill:
            wrapped.kill()
        else:
            wrapped.stop(timeout=STOP_GRACE_S)
        wrapped.start()
        wait_ready(self.namesrv_addr, STARTUP_TIMEOUT_S)

    def discard(self) -> None:
        self.stop()

    def stop(self) -> None:
        """Save the container's log into the workdir, then remove the container and its volume."""
        try:
            stdout, stderr = self.container.get_logs()
            (self.workdir / "container.log").write_bytes(stdout + stderr)
        except Exception as err:  # the log is a courtesy; removal must still happen
            logger.warning("container log not saved: %s", err)
        finally:
            self.container.stop()


def start_container_target(workdir: Path, broker_conf: dict[str, str] | None = None) -> ContainerTarget:
    """What ``targets.start_target("container", ...)`` would return."""
    return ContainerTarget(workdir, broker_conf)
