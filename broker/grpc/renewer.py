"""The renewal of push consumers' receipt handles: the loop of ``DefaultReceiptHandleManager``.

Every ``renewSchedulePeriodMillis`` the tracked handles (:class:`broker.grpc.renewal.HandleTable`)
are scanned, as ``scheduleRenewTask`` scans them:

* a client no longer registered in its group (it terminated, or its channel expired) has all its
  handles cleared: each message becomes visible again after ``invisibleTimeMillisWhenClear``;
* a handle visible again within ``renewAheadTimeMillis`` is renewed: its invisible time is changed
  to the next step of ``RenewStrategyPolicy`` (1 min, 3, 5, 10, 30, then 1 h) and the new handle
  kept; a failure that may pass is tried again at the next scan, at most ``maxRenewRetryTimes`` in
  a row, and a refused handle is given up;
* a message handed out more than ``renewMaxTimeMillis`` ago is renewed no more: it is made visible
  again after its group's retry delay (``startRenewMessage``'s STOP_RENEW), for a next delivery.

The calls go through the consumer activity's change of invisible time, the same as a client's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

from broker.grpc.common import StatusError
from broker.grpc.renewal import HandleTable, TrackedHandle, renew_delay_ms, retry_delay_ms
from codec.errors import CodecError, RocketMQError
from gateway.transport.grpc.config import GrpcServerConfig

logger = logging.getLogger(__name__)

#: ``lockTimeoutMsInHandleGroup``: how long an ack waits for a renewal of its handle in flight.
SETTLE_TIMEOUT_S = 3.0

#: Changes a handle's invisible time: (handle, invisible ms) → the new handle, None when the broker
#: refused; raises StatusError when the handle itself is refused, RocketMQError/CodecError otherwise.
ChangeInvisible = Callable[[TrackedHandle, int], Awaitable[str | None]]


class Renewer:
    """Keeps the tracked handles invisible while their clients process them; see the module."""

    def __init__(
        self,
        table: HandleTable,
        config: GrpcServerConfig,
        change: ChangeInvisible,
        online: Callable[[str, str], bool],
        retry_policy_of: Callable[[str], Mapping[str, Any] | None],
        now_ms: Callable[[], int],
    ) -> None:
        """``online(client id, group)``: the client is still registered in the group;
        ``retry_policy_of(group)``: the group's ``groupRetryPolicy``."""
        self.table = table
        self.config = config
        self.change = change
        self.online = online
        self.retry_policy_of = retry_policy_of
        self.now_ms = now_ms
        self._settled: dict[int, trio.Event] = {}

    async def run(self) -> None:
        """Scan every ``renewSchedulePeriodMillis`` until cancelled."""
        while True:
            await trio.sleep(self.config.renew_schedule_period_millis / 1000)
            try:
                await self.scan()
            except Exception:  # a bug here must not stop the renewals of every later scan
                logger.exception("grpc: the scan of receipt handles to renew failed")

    async def scan(self) -> None:
        """One ``scheduleRenewTask``."""
        for client_id, group in self.table.clients():
            if not self.online(client_id, group):
                cleared = self.table.clear((client_id, group))
                logger.info(
                    "grpc: client %s left group %s: %d message(s) visible again in %d ms",
                    client_id,
                    group,
                    len(cleared),
                    self.config.invisible_time_millis_when_clear,
                )
                for handle in cleared:
                    await self._change(handle, self.config.invisible_time_millis_when_clear)
        now = self.now_ms()
        for client_id, handle in self.table.due(now, self.config.renew_ahead_time_millis):
            await self._renew(client_id, handle, now)

    async def settled(self, handle: TrackedHandle) -> None:
        """Wait (a bounded time) for a renewal of ``handle`` in flight, so that an ack or a change
        of invisible time taking it out uses the handle that renewal makes."""
        event = self._settled.get(id(handle))
        if event is not None:
            with trio.move_on_after(SETTLE_TIMEOUT_S):
                await event.wait()

    async def _renew(self, client_id: str, handle: TrackedHandle, now: int) -> None:
        """``startRenewMessage``."""
        if handle.retry_times >= self.config.max_renew_retry_times:
            logger.warning(
                "grpc: renewal of %s given up after %d failures", handle.message_id, handle.retry_times
            )
            self.table.discard(client_id, handle)
            return
        if now - handle.consume_ms >= self.config.renew_max_time_millis:
            # STOP_RENEW: back to the group's retry delay, then delivered again.
            self.table.discard(client_id, handle)
            delay = retry_delay_ms(self.retry_policy_of(handle.group), handle.reconsume_times)
            await self._change(handle, delay)
            return
        event = self._settled[id(handle)] = trio.Event()
        handle.renewing = True
        try:
            new = await self.change(handle, renew_delay_ms(handle.renew_times))
        except StatusError as err:  # renewExceptionNeedRetry: a refused handle is not retried
            logger.info("grpc: renewal of %s refused: %s", handle.message_id, err.message)
            self.table.discard(client_id, handle)
        except (RocketMQError, CodecError) as err:
            handle.retry_times += 1
            logger.info("grpc: renewal of %s failed (%d): %s", handle.message_id, handle.retry_times, err)
        else:
            if new is None:
                logger.info("grpc: renewal of %s: the broker refused the change", handle.message_id)
                self.table.discard(client_id, handle)
            else:
                handle.current = new
                handle.retry_times = 0
                handle.renew_times += 1
        finally:
            handle.renewing = False
            del self._settled[id(handle)]
            event.set()

    async def _change(self, handle: TrackedHandle, invisible_ms: int) -> None:
        """A change of invisible time whose outcome only gets logged (clear and stop-renew)."""
        try:
            await self.change(handle, invisible_ms)
        except (StatusError, RocketMQError, CodecError) as err:
            logger.info("grpc: could not make %s visible again: %s", handle.message_id, err)
