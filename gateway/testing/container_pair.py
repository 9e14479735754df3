"""A classic master/slave pair of the gateway's image, for tests of reads from a slave and of a
master failing: three containers on the host network, the layout of ``docker/compose-ha.yaml``.

::

    from gateway.testing.container_pair import RocketMQGatewayPair

    with RocketMQGatewayPair(role="SYNC_MASTER", topics=["orders:4"]) as pair:
        producer.set_namesrv_addr(pair.get_namesrv_address())
        pair.master.get_broker_address()     # brokerId 0: where sends go
        pair.slave.get_broker_address()      # brokerId 1, slaveReadEnable=true: reads
        pair.kill_master()                   # SIGKILL; the NameServer and the slave stay up

A NameServer container (the image's ``namesrv`` command) and two broker containers
(:class:`gateway.testing.container.RocketMQGatewayContainer` with ``namesrv_addr``) of the same
``brokerName``: the master (``brokerId=0``, ``brokerRole`` ``ASYNC_MASTER`` or ``SYNC_MASTER``)
and its slave (``brokerId=1``, ``brokerRole=SLAVE``). The master's HA port is its listen port + 1
on ``127.0.0.1`` (when that is taken, another free one; it is registered either way) and the
slave learns it from its registration answer, as a RocketMQ 5.3.3 slave without
``haMasterAddress`` does. The NameServer runs in its own container so that killing the master
leaves the routes (the slave's) readable.

Start-up order is the one the slave needs: the master is ready (registered) before the slave
starts, so the slave's first metadata sync finds the master's declared topics; :meth:`start`
returns once the slave is registered under ``brokerId`` 1.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Literal, Self

from testcontainers.core.container import DockerContainer

from gateway.testing.container import (
    DEFAULT_IMAGE,
    LOOPBACK,
    PROBE_INTERVAL_S,
    STARTUP_TIMEOUT_S,
    RocketMQGatewayContainer,
)
from gateway.testing.ports import free_port
from gateway.testing.probe import ProbeError, probe

logger = logging.getLogger(__name__)

MasterRole = Literal["ASYNC_MASTER", "SYNC_MASTER"]
SLAVE_ID = 1  # the classic HA's first slave (brokerId > 0 is a slave)


class NameServerContainer(DockerContainer):
    """The image's ``namesrv`` command alone on a free loopback port; ready once it answers."""

    def __init__(self, image: str = DEFAULT_IMAGE, *, startup_timeout: float = STARTUP_TIMEOUT_S) -> None:
        super().__init__(image)
        self.port = free_port()
        self.startup_timeout = startup_timeout
        self.with_kwargs(network_mode="host")
        self.with_command("namesrv")
        self.with_env("RMQ_HOST", LOOPBACK)
        self.with_env("NAMESRV_PORT", str(self.port))

    def get_namesrv_address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def start(self) -> Self:
        """Start and wait for an answer to GET_BROKER_CLUSTER_INFO; on failure the container is
        removed and ``TimeoutError``/``RuntimeError`` (with its logs) raised."""
        super().start()
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        """Remove the container; a second call does nothing."""
        if self._container is None:
            return
        super().stop(force=force, delete_volume=delete_volume)
        self._container = None

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        reason = "not probed yet"
        while time.monotonic() < deadline:
            try:
                probe(self.get_namesrv_address(), min_brokers=0, timeout=1.0)
                return
            except ProbeError as err:
                reason = str(err)
            self.reload()
            if self.status in ("exited", "dead"):
                raise RuntimeError(f"NameServer container {self.status}:\n{self._log_tail()}")
            time.sleep(PROBE_INTERVAL_S)
        raise TimeoutError(f"NameServer container not ready ({reason}):\n{self._log_tail()}")

    def _log_tail(self, chars: int = 3000) -> str:
        stdout, stderr = self.get_logs()
        return (stdout + stderr).decode(errors="replace")[-chars:]


class RocketMQGatewayPair:
    """A NameServer, a master and its slave; see the module docstring.

    ``role``: the master's ``brokerRole``; ``in_sync_replicas=2`` with ``SYNC_MASTER`` makes a
    send wait for the slave (the default 1 does not, as in 5.3.3). ``topics``/``groups`` (specs as
    :class:`RocketMQGatewayContainer` takes them) are declared on both brokers;
    ``master_properties``/``slave_properties`` are further broker.conf keys of each.
    """

    def __init__(
        self,
        image: str = DEFAULT_IMAGE,
        *,
        role: MasterRole = "ASYNC_MASTER",
        in_sync_replicas: int = 1,
        broker_name: str = "broker-a",
        topics: Sequence[str] = (),
        groups: Sequence[str] = (),
        master_properties: Mapping[str, str] | None = None,
        slave_properties: Mapping[str, str] | None = None,
        startup_timeout: float = STARTUP_TIMEOUT_S,
    ) -> None:
        if role not in ("ASYNC_MASTER", "SYNC_MASTER"):
            raise ValueError(f"master role {role!r}: ASYNC_MASTER or SYNC_MASTER")
        self.namesrv = NameServerContainer(image, startup_timeout=startup_timeout)
        namesrv = self.namesrv.get_namesrv_address()
        master = {"brokerId": "0", "brokerRole": role, "inSyncReplicas": str(in_sync_replicas)}
        slave = {"brokerId": str(SLAVE_ID), "brokerRole": "SLAVE", "slaveReadEnable": "true"}
        self.master = RocketMQGatewayContainer(
            image,
            namesrv_addr=namesrv,
            properties={**master, **(master_properties or {})},
            broker_name=broker_name,
            topics=topics,
            groups=groups,
            startup_timeout=startup_timeout,
        )
        self.slave = RocketMQGatewayContainer(
            image,
            namesrv_addr=namesrv,
            properties={**slave, **(slave_properties or {})},
            broker_name=broker_name,
            topics=topics,
            groups=groups,
            startup_timeout=startup_timeout,
        )

    def get_namesrv_address(self) -> str:
        """``host:port`` of the NameServer both brokers register to."""
        return self.namesrv.get_namesrv_address()

    def start(self) -> Self:
        """NameServer, then master, then slave, each waited for; on failure everything started is
        removed and the first container's error raised."""
        began = time.monotonic()
        try:
            self.namesrv.start()
            self.master.start()
            self.slave.start()
        except BaseException:
            self.stop()
            raise
        ready_s = time.monotonic() - began
        logger.info("rmq-gateway pair ready in %.2f s at %s", ready_s, self.get_namesrv_address())
        return self

    def kill_master(self) -> None:
        """SIGKILL the master's container (a broker failing); :meth:`stop` still removes it."""
        self.master.get_wrapped_container().kill()

    def stop(self) -> None:
        """Remove the three containers (a second call does nothing)."""
        for container in (self.slave, self.master, self.namesrv):
            container.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
