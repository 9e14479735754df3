"""The broker's side of the store: puts with group commit, arrival notices, periodic work.

:class:`store.message_store.MessageStore` is a synchronous library with one writer; the broker
calls it from its Trio thread. This module adds what the Java broker's store services do in their
own threads:

* ``SYNC_FLUSH`` group commit (``GroupCommitService``): a put returns once its bytes are fsynced.
  Puts that arrive while an fsync runs wait for the next one, so many concurrent producers share
  one ``msync`` (run in a worker thread, the only store call made off the Trio thread, which the
  store allows). A put not flushed within ``syncFlushTimeout`` answers ``FLUSH_DISK_TIMEOUT``.
* statistics: every put, whoever makes it (send, retry, delay and timer delivery, transactions),
  passes here and is counted in the broker's :class:`broker.stats.BrokerStats`, which the
  composition hands in (``CommitLog.putMessage`` counts in Java's ``StoreStatsService``);
* ``tick`` every 100 ms: the asynchronous commit-log flush, consume-queue/index/checkpoint flush
  and cleanup (``FlushRealTimeService``, ``FlushConsumeQueueService``, ``CleanCommitLogService``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import trio

from broker.stats import BrokerStats
from codec.message import MessageRecord
from codec.properties import decode_properties
from store.errors import StoreIOError
from store.message_store import MessageStore
from store.results import PutMessageResult, PutMessageStatus

logger = logging.getLogger(__name__)

TICK_INTERVAL_S = 0.1


class MessageService:
    def __init__(self, store: MessageStore, stats: BrokerStats) -> None:
        self.store = store
        self.stats = stats
        self.sync_flush = store.config.sync_flush
        self.sync_flush_timeout_s = store.config.sync_flush_timeout / 1000
        self._pending: list[tuple[int, trio.Event]] = []
        self._wakeup = trio.Event()
        self._flushed = 0
        self._last_flush_error: str | None = None
        self.fsyncs = 0

    # -- puts ------------------------------------------------------------------------------------

    async def put(
        self, msgs: Sequence[MessageRecord], properties: Sequence[dict[str, str]] | None = None
    ) -> PutMessageResult:
        """Append records of one topic-queue; under SYNC_FLUSH wait for their fsync.
        ``properties``: each record's properties already decoded (see ``MessageStore.put_messages``)."""
        result = self.put_nowait(msgs, properties)
        if self.sync_flush:
            await self.wait_flushed(result)
        return result

    def put_nowait(
        self, msgs: Sequence[MessageRecord], properties: Sequence[dict[str, str]] | None = None
    ) -> PutMessageResult:
        """Append records of one topic-queue without waiting: under SYNC_FLUSH the caller must
        :meth:`wait_flushed` before it acknowledges them."""
        start = time.perf_counter()
        result = self.store.put_messages(msgs, properties)
        if result.ok and result.append_result is not None and msgs:
            elapsed_ms = int((time.perf_counter() - start) * 1000)
            if properties:
                first: dict[str, str] | None = properties[0]
            elif self.stats.put_observers:  # only the metrics exporter reads them
                first = decode_properties(msgs[0].properties)
            else:
                first = None
            wrote = result.append_result.wrote_bytes
            self.stats.record_put(msgs[0].topic, len(msgs), wrote, elapsed_ms, first)
        else:
            self.stats.record_put_failed()
        return result

    async def wait_flushed(self, result: PutMessageResult) -> None:
        """Wait until the records of a successful put are fsynced; a put not flushed within
        ``syncFlushTimeout`` becomes ``FLUSH_DISK_TIMEOUT``."""
        if not result.ok or result.append_result is None:
            return
        if not await self._wait_flushed(result.append_result.end_offset):
            result.status = PutMessageStatus.FLUSH_DISK_TIMEOUT
            result.remark = self._last_flush_error or "flush disk timeout"

    async def _wait_flushed(self, end: int) -> bool:
        if end <= self._flushed:
            return True
        event = trio.Event()
        self._pending.append((end, event))
        self._wakeup.set()
        with trio.move_on_after(self.sync_flush_timeout_s):
            await event.wait()
        return event.is_set() and end <= self._flushed

    async def run_group_commit(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        while True:
            await self._wakeup.wait()
            self._wakeup = trio.Event()
            if not self._pending:
                continue
            batch, self._pending = self._pending, []
            target = max(end for end, _ in batch)
            try:
                flushed = await trio.to_thread.run_sync(self.store.flush_up_to, target)
                self.fsyncs += 1
                self._flushed = max(self._flushed, flushed)
                self._last_flush_error = None
            except StoreIOError as err:
                logger.error("commit log flush failed: %s", err)
                self._last_flush_error = str(err)
                await trio.sleep(0.1)
            for end, event in batch:
                if end <= self._flushed:
                    event.set()
                elif self._last_flush_error is None:
                    self._pending.append((end, event))
            if self._pending:
                self._wakeup.set()

    # -- periodic work ---------------------------------------------------------------------------

    async def run_ticker(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await trio.sleep(TICK_INTERVAL_S)
            try:
                self.store.tick()
            except StoreIOError as err:
                logger.error("store periodic flush failed: %s", err)

    def statistics(self) -> dict[str, int]:
        return {**self.store.statistics(), "fsyncs": self.fsyncs}
