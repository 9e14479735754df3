"""A NameServer + Broker running inside the test process, on free ports, with a temporary store.

::

    from gateway.testing.inprocess import InProcessGateway

    with InProcessGateway() as gateway:          # ready in ~0.2 s, no Docker, no subprocess
        namesrv = gateway.namesrv_addr           # "127.0.0.1:<free port>": remoting clients
        endpoint = gateway.grpc_endpoint         # "127.0.0.1:<free port>": RocketMQ 5 gRPC clients

The servers run under ``trio.run`` in one background thread (the composition API of
:mod:`gateway.launcher`); :meth:`InProcessGateway.stop` asks them for a graceful shutdown through
the Trio token and joins the thread. The gRPC endpoint (docs/grpc.md) is on by default, on a free
port too, plaintext and TLS with a self-signed certificate on the same port as the Proxy's test
mode; ``grpc_port=None`` leaves it off. The names follow
:class:`gateway.testing.container.RocketMQGatewayContainer` (``get_grpc_endpoint()``).

Faults on demand (docs/testing-with-gateway.md): :attr:`InProcessGateway.faults` is the
:class:`gateway.transport.faults.FaultTable` both servers consult, and
:meth:`InProcessGateway.stored_messages` reads what the broker stored::

    fault_id = gateway.faults.add(request="SEND_MESSAGE_V2", respond=2, times=2)   # SYSTEM_BUSY twice
    gateway.stored_messages("T", wait_for=3)    # [{"msgId": ..., "body": ..., ...}, ...]
    gateway.faults.clear()

``control_port=0`` serves the HTTP control endpoint too (:attr:`InProcessGateway.control_addr`).

Tests on one gateway (docs/testing-with-gateway.md): ``InProcessGateway(topics=["orders:8:FIFO"],
groups=["billing:retryMaxTimes=3"])`` and :meth:`InProcessGateway.declare` create topics and
groups up front; :meth:`InProcessGateway.reset` empties the gateway in place;
:meth:`InProcessGateway.group_offsets`, :meth:`InProcessGateway.retry_messages` and
:meth:`InProcessGateway.dlq_messages` show what a consumer group did::

    gateway.group_offsets("billing", "orders", max_lag=0)   # waits until the group consumed all
    gateway.dlq_messages("billing", wait_for=1)

Every file the servers write lives in the store directory
(a temporary one unless given), including the NameServer's KV config, which would otherwise go
to ``~/namesrv``: the state is independent of ``HOME``.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import trio

from gateway.resources import parse_specs
from gateway.testing.probe import wait_ready
from gateway.transport.faults import FaultTable

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from gateway.launcher import Endpoints, Gateway

T = TypeVar("T")

logger = logging.getLogger(__name__)

READY_TIMEOUT_S = 30.0  # bind + register; ~0.2 s normally
STOP_TIMEOUT_S = 20.0  # graceful stop: in-flight requests, unregistration, flush


class InProcessGateway:
    """See the module docstring. ``properties`` are Java broker.conf/namesrv.conf keys."""

    def __init__(
        self,
        store_dir: str | Path | None = None,
        *,
        host: str = "127.0.0.1",
        namesrv_port: int = 0,
        broker_port: int = 0,
        grpc_port: int | None = 0,
        properties: Mapping[str, str] | None = None,
        control_port: int | None = None,
        fault_seed: int | None = None,
        topics: Sequence[str] = (),
        groups: Sequence[str] = (),
    ) -> None:
        """``control_port``: serve the HTTP control endpoint there (0: any free port; None: off);
        ``fault_seed``: seeds the RNG of rules with a ``probability``; ``topics`` / ``groups``:
        declarations (``"orders:8:FIFO"``, ``"billing:retryMaxTimes=3"``, :mod:`gateway.resources`)
        created before :meth:`start` returns. Raises
        :class:`gateway.resources.ResourceSpecError` for a bad declaration."""
        self.resources = parse_specs(topics, groups)
        self._own_dir = store_dir is None
        self.store_dir = Path(store_dir or tempfile.mkdtemp(prefix="rmq-gw-"))
        self.host = host
        self.namesrv_port = namesrv_port
        self.broker_port = broker_port
        self.grpc_port = grpc_port
        self.control_port = control_port
        #: The fault rules of both servers (add/remove/clear/list); safe to change from any thread.
        self.faults = FaultTable(trio.sleep, seed=fault_seed)
        self.properties = {
            "kvConfigPath": str(self.store_dir / "namesrv" / "kvConfig.json"),
            **(properties or {}),
        }
        self.endpoints: Endpoints | None = None
        self.ready_seconds: float | None = None
        self._gateway: Gateway | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._thread: threading.Thread | None = None
        self._started: queue.Queue[Endpoints | BaseException] = queue.Queue()
        self._error: BaseException | None = None

    @property
    def namesrv_addr(self) -> str:
        """``"127.0.0.1:<port>"`` of the NameServer; raises ``RuntimeError`` before :meth:`start`."""
        if self.endpoints is None or self.endpoints.namesrv_addr is None:
            raise RuntimeError("gateway not started")
        return self.endpoints.namesrv_addr

    @property
    def broker_addr(self) -> str:
        """``"127.0.0.1:<port>"`` of the Broker; raises ``RuntimeError`` before :meth:`start`."""
        if self.endpoints is None or self.endpoints.broker_addr is None:
            raise RuntimeError("gateway not started")
        return self.endpoints.broker_addr

    @property
    def grpc_endpoint(self) -> str:
        """``"127.0.0.1:<port>"`` of the gRPC endpoint; raises ``RuntimeError`` before :meth:`start`
        or when it is off (``grpc_port=None``)."""
        if self.endpoints is None:
            raise RuntimeError("gateway not started")
        if self.endpoints.grpc_addr is None:
            raise RuntimeError("gRPC endpoint off (grpc_port=None)")
        return self.endpoints.grpc_addr

    @property
    def control_addr(self) -> str:
        """``"127.0.0.1:<port>"`` of the HTTP control endpoint; raises ``RuntimeError`` before
        :meth:`start` or when it is off (``control_port=None``)."""
        if self.endpoints is None:
            raise RuntimeError("gateway not started")
        if self.endpoints.control_addr is None:
            raise RuntimeError("control endpoint off (control_port=None)")
        return self.endpoints.control_addr

    def stored_messages(
        self, topic: str, *, wait_for: int = 0, timeout_s: float = 10.0, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """The messages of ``topic`` the broker stored (store order, at most ``limit``), as the
        control endpoint shows them (:func:`gateway.control.messages.message_json`), once there
        are at least ``wait_for``. Read in the servers' thread through the store's reader: no
        consumer offset moves. Raises ``TimeoutError`` when ``wait_for`` are not there within
        ``timeout_s``, ``RuntimeError`` when the gateway is not running."""
        from gateway.control.messages import stored_messages

        store = self._controller().store
        return self._wait_for_count(
            lambda: stored_messages(store, topic, limit), wait_for, timeout_s, f"messages of {topic} stored"
        )

    def group_offsets(
        self, group: str, topic: str | None = None, *, max_lag: int | None = None, timeout_s: float = 10.0
    ) -> dict[str, Any]:
        """The group's committed offsets and lag per topic and queue
        (:func:`gateway.control.consumption.group_offsets`), once its total lag is at most
        ``max_lag`` (None: at once). Raises ``TimeoutError`` (with the last lag) when it is not
        within ``timeout_s``, ``LookupError`` for a group the broker has never heard of (checked
        until the deadline when waiting), ``RuntimeError`` when the gateway is not running."""
        from gateway.control.client import wait_for_lag
        from gateway.control.consumption import UnknownGroupError, group_offsets

        controller = self._controller()
        return wait_for_lag(
            lambda: self._in_servers(lambda: group_offsets(controller, group, topic)),
            group,
            max_lag,
            timeout_s,
            lambda err: isinstance(err, UnknownGroupError),
        )

    def retry_messages(
        self, group: str, *, wait_for: int = 0, timeout_s: float = 10.0, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """The group's messages sent back for a retry (``"delayed": true`` while they wait for
        their delay; :func:`gateway.control.consumption.retry_messages`), once there are at least
        ``wait_for``; raises as :meth:`stored_messages`."""
        from gateway.control.consumption import retry_messages

        controller = self._controller()
        return self._wait_for_count(
            lambda: retry_messages(controller, group, limit), wait_for, timeout_s, f"retries of {group}"
        )

    def dlq_messages(
        self, group: str, *, wait_for: int = 0, timeout_s: float = 10.0, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """The group's dead letters (``%DLQ%group``), once there are at least ``wait_for``;
        raises as :meth:`stored_messages`."""
        from gateway.control.consumption import dlq_messages

        controller = self._controller()
        return self._wait_for_count(
            lambda: dlq_messages(controller, group, limit), wait_for, timeout_s, f"dead letters of {group}"
        )

    def _controller(self) -> BrokerController:
        gateway = self._gateway
        if gateway is None or self._token is None or gateway.broker is None:
            raise RuntimeError("gateway not started")
        return gateway.broker.controller

    def _in_servers(self, read: Callable[[], T]) -> T:
        """``read()`` in the servers' Trio thread (between requests)."""
        return trio.from_thread.run_sync(read, trio_token=self._token)

    def _wait_for_count(
        self, read: Callable[[], list[dict[str, Any]]], wait_for: int, timeout_s: float, what: str
    ) -> list[dict[str, Any]]:
        from gateway.control.client import wait_for_count

        return wait_for_count(lambda: self._in_servers(read), wait_for, timeout_s, what)

    def declare(self, topics: Sequence[str] = (), groups: Sequence[str] = ()) -> None:
        """Create these topics and groups on the running gateway (the same declarations as the
        constructor's); returns once the NameServer routes the topics. Raises
        :class:`gateway.resources.ResourceSpecError` for a bad one, ``RuntimeError`` when the
        gateway is not running."""
        resources = parse_specs(topics, groups)
        gateway, token = self._gateway, self._token
        if gateway is None or token is None:
            raise RuntimeError("gateway not started")
        trio.from_thread.run(gateway.declare, resources, trio_token=token)

    def reset(self) -> dict[str, int]:
        """Empty the gateway for the next test, in the servers' thread (a few milliseconds): every
        topic but the system ones with its messages, every group but the system ones, every
        consumer offset, every fault rule (:meth:`gateway.launcher.Gateway.reset`). Returns what
        went, by kind; raises ``RuntimeError`` when the gateway is not running."""
        gateway, token = self._gateway, self._token
        if gateway is None or token is None:
            raise RuntimeError("gateway not started")
        return trio.from_thread.run_sync(gateway.reset, trio_token=token)

    def disk_full(self, on: bool = True) -> None:
        """Make the broker refuse writes as on a full disk (``on``), or accept them again, in the
        servers' thread (:mod:`gateway.control.broker_faults`); :meth:`reset` turns it off.
        Raises ``RuntimeError`` when the gateway is not running."""
        gateway, token = self._gateway, self._token
        if gateway is None or token is None:
            raise RuntimeError("gateway not started")
        trio.from_thread.run_sync(gateway.broker_faults.disk_full, on, trio_token=token)

    def rewind(self, group: str, topic: str, count: int = 1) -> dict[int, int]:
        """Deliver ``group``'s last ``count`` messages of each queue of ``topic`` again: its next
        pull, pop or receive returns them with their msgId (:func:`broker.service.rewind.rewind`); the new
        offset of each queue. Raises ``broker.service.rewind.RewindError`` for an unknown topic or a group
        without offsets there, ``RuntimeError`` when the gateway is not running."""
        gateway, token = self._gateway, self._token
        if gateway is None or token is None:
            raise RuntimeError("gateway not started")
        return trio.from_thread.run_sync(gateway.broker_faults.rewind, group, topic, count, trio_token=token)

    def withhold_route(self, broker_name: str, on: bool = True) -> list[str]:
        """Take the broker ``broker_name`` out of the NameServer's routes (``on``), or put it back;
        the names withheld now (:mod:`gateway.control.broker_faults`); :meth:`reset`
        puts every one back. Raises ``RuntimeError`` when the gateway is not running."""
        gateway, token = self._gateway, self._token
        if gateway is None or token is None:
            raise RuntimeError("gateway not started")
        return trio.from_thread.run_sync(
            gateway.broker_faults.withhold_route, broker_name, on, trio_token=token
        )

    def start(self, timeout: float = READY_TIMEOUT_S) -> Self:
        """Start the servers and return once both accept connections and the broker registered
        (a :mod:`gateway.testing.probe` round trip, as a client would see it).

        Raises ``TimeoutError`` or the servers' own start-up error (e.g. ``OSError`` for a port
        in use).
        """
        from gateway.launcher import standalone_gateway

        began = time.monotonic()
        self._gateway = standalone_gateway(
            str(self.store_dir),
            host=self.host,
            namesrv_port=self.namesrv_port,
            broker_port=self.broker_port,
            properties=self.properties,
            grpc_port=self.grpc_port,
            faults=self.faults,
            control_port=self.control_port,
            resources=self.resources,
        )
        self._thread = threading.Thread(target=self._run, name="rmq-gateway", daemon=True)
        self._thread.start()
        try:
            started = self._started.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            raise TimeoutError(f"in-process gateway not ready within {timeout:g} s") from None
        if isinstance(started, BaseException):
            self._thread.join(STOP_TIMEOUT_S)
            self._cleanup()
            raise _single(started)
        self.endpoints = started
        try:
            # The servers are bound; clients can send once the broker's registration went through.
            wait_ready(self.namesrv_addr, max(0.1, began + timeout - time.monotonic()))
        except TimeoutError:
            self.stop()
            raise
        self.ready_seconds = time.monotonic() - began
        logger.info("in-process gateway ready in %.3f s: %s", self.ready_seconds, started)
        return self

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as err:  # reported to start() or stop(); the thread must not die silently
            self._error = err
            self._started.put(err)

    async def _main(self) -> None:
        assert self._gateway is not None
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            endpoints = await nursery.start(self._gateway.run)
            self._started.put(endpoints)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Graceful shutdown (as SIGTERM for the CLI), then remove a temporary store.

        Raises ``TimeoutError`` when the servers do not stop in time, or what they raised.
        """
        thread, gateway, token = self._thread, self._gateway, self._token
        try:
            if thread is not None and thread.is_alive() and gateway is not None and token is not None:
                with contextlib.suppress(trio.RunFinishedError):  # it stopped by itself meanwhile
                    trio.from_thread.run_sync(gateway.shutdown, trio_token=token)
                thread.join(timeout)
                if thread.is_alive():
                    raise TimeoutError(f"in-process gateway did not stop within {timeout:g} s")
            if self._error is not None and self.endpoints is not None:
                raise self._error
        finally:
            self._cleanup()

    def _cleanup(self) -> None:
        if self._own_dir and (self._thread is None or not self._thread.is_alive()):
            shutil.rmtree(self.store_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _single(error: BaseException) -> BaseException:
    """The one error inside nested single-member exception groups (Trio nurseries wrap a failed
    bind in several), so callers can catch ``OSError``; ``error`` itself otherwise."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error
