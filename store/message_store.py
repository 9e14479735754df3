"""The store facade the broker uses (``DefaultMessageStore``).

Layout of the store directory, file formats and recovery rules are in the modules it combines:
:mod:`store.commit_log`, :mod:`store.consume_queue`, :mod:`store.index_file`,
:mod:`store.checkpoint`, :mod:`store.metadata`; the read side is :mod:`store.message_reader`.

Threading contract (the store has no threads of its own):

* One writer. :meth:`put_message`, :meth:`put_messages`, :meth:`flush`, :meth:`tick`,
  :meth:`clean` and :meth:`close` must be called from one thread at a time (the broker's Trio
  thread). Reads may be called from that thread too; they see every put that returned.
* A put dispatches its records (consume-queue units and index entries) through the same
  :class:`store.dispatch.CommitLogDispatcher` that recovery uses, a batch's as blocks
  (``dispatch_batch``: the bytes recovery's record-by-record ``dispatch_record`` writes), then
  tells the owner's ``on_arrival`` listener what it dispatched (topic, queue, queue offset, tags
  code, store time, properties), so the owner never reads that back out of a consume queue.
* Group commit for ``SYNC_FLUSH``: a put copies the record into the mapped file and returns at
  once with :attr:`AppendMessageResult.end_offset`. The record must not be acknowledged until
  ``flush_up_to(end_offset)`` has returned. ``flush_up_to`` is the one method that may run in
  another thread while the writer keeps putting (the Trio side runs it through
  ``trio.to_thread.run_sync``): it ``msync``s everything written so far, so one call covers
  every put that returned before it started; callers waiting on offsets ≤ its return value are
  all released by it. A typical loop: collect the end offsets of the puts since the last fsync,
  run one ``flush_up_to(max(ends))`` in a worker thread, then acknowledge those puts.
* ``ASYNC_FLUSH``: acknowledge after the put; call :meth:`tick` every ~100 ms and it flushes the
  commit log every ``flushIntervalCommitLog`` ms (if at least ``flushCommitLogLeastPages`` pages
  are dirty, or ``flushCommitLogThoroughInterval`` ms have passed), consume queues, index and the
  checkpoint every ``flushIntervalConsumeQueue`` ms, and runs cleanup every
  ``cleanResourceInterval`` ms.

Open: takes the ``lock`` file, recovers (normally if there is no ``abort`` file, else abnormally:
``DefaultMessageStore.recover``, see :mod:`store.recovery`) and writes ``abort``; close flushes
everything and removes ``abort``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence

from codec.errors import MessageFormatError
from codec.message import MessageRecord, RecordLayout, encode_record_into, measure_record
from codec.properties import MAX_PROPERTIES_BYTES, decode_properties
from store.checkpoint import (
    StoreCheckpoint,
    StoreLock,
    abort_file_exists,
    create_abort_file,
    remove_abort_file,
)
from store.cleanup import CleanService, disk_usage_percent
from store.commit_log import CommitLog
from store.config import StoreConfig
from store.consume_queue_store import ConsumeQueueStore
from store.dispatch import ArrivalListener, CommitLogDispatcher, has_queue_entry
from store.errors import MessageTooLargeError, RateLimitedLog, StoreClosedError, StoreIOError
from store.index_service import IndexService
from store.mapped_file import PAGE_SIZE, MappedFile
from store.message_reader import MessageReader
from store.metadata import ConfigFiles
from store.recovery import recover
from store.results import AppendMessageResult, PutMessageResult, PutMessageStatus

logger = logging.getLogger(__name__)
REFUSAL_LOG_INTERVAL_S = 10.0  # refused puts: one ERROR line this often, with the count in between
MAX_KEYS_RESERVED = 8  # index entries reserved per record before a put (UNIQ_KEY and a few KEYS)


def system_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class MessageStore(MessageReader):
    """Open with :meth:`open`; see the module docstring for the calling contract."""

    def __init__(
        self,
        config: StoreConfig,
        clock: Callable[[], int] = system_clock_ms,
        on_arrival: ArrivalListener | None = None,
        disk_usage: Callable[[str], float] = disk_usage_percent,
    ) -> None:
        config.validate()
        self.clock = clock
        self.on_arrival = on_arrival
        commit_log = CommitLog(config)
        queues = ConsumeQueueStore(
            config.consume_queue_dir, config.mapped_file_size_consume_queue, config.preallocate
        )
        index = IndexService(
            config.index_dir, config.max_hash_slot_num, config.max_index_num, clock, config.preallocate
        )
        super().__init__(config, commit_log, queues, index)
        self.dispatcher = CommitLogDispatcher(
            queues, index, config.delay_levels_ms(), config.message_index_enable
        )
        self.config_files = ConfigFiles(config.config_dir)
        self.checkpoint: StoreCheckpoint | None = None
        self.queue_offsets: dict[tuple[str, int], int] = {}  # next queue offset (CommitLog.topicQueueTable)
        self.last_exit_ok = True
        self.cleaner = CleanService(config, commit_log, queues, index, disk_usage)
        self._lock: StoreLock | None = None
        self._open = False
        self._last_put = (0, 0)  # (end offset, store timestamp) of the newest put
        self._dispatch_failed = False
        #: Set by a test tool to refuse puts as a full disk does (the disk itself is not looked at).
        self.disk_full_injected = False
        self._refusals = RateLimitedLog(logger, REFUSAL_LOG_INTERVAL_S)
        self.put_times = 0  # successful puts (StoreStatsService.putMessageTimesTotal)
        self.put_message_count = 0  # records they stored
        self._next_cl_flush = 0
        self._last_thorough_flush = 0
        self._next_cq_flush = 0

    # -- life cycle ------------------------------------------------------------------------------

    def open(self) -> MessageStore:
        """Lock, load and recover the store; raises :class:`StoreLockedError`, :class:`StoreCorruptionError`
        or :class:`StoreIOError`."""
        os.makedirs(self.config.store_path_root_dir, exist_ok=True)
        self._lock = StoreLock(self.config.lock_path)
        try:
            self.last_exit_ok = not abort_file_exists(self.config.abort_path)
            self.commit_log.load()
            self.queues.load()
            self.checkpoint = StoreCheckpoint(self.config.checkpoint_path)
            if self.config.message_index_enable:
                self.index.load()
            self.index.on_file_full = self._on_index_file_full
            recovered = recover(
                self.config, self.commit_log, self.queues, self.checkpoint, self.dispatcher, self.last_exit_ok
            )
            self._dispatch_failed = not recovered.complete
            self.queue_offsets = self.queues.max_offsets()
            create_abort_file(self.config.abort_path)
            self.cleaner.check_disk()  # a full disk at start: serve reads, refuse writes
        except BaseException:
            self._release_files()
            raise
        now = self.clock()
        self._next_cl_flush = now + self.config.flush_interval_commit_log
        self._last_thorough_flush = now
        self._next_cq_flush = now + self.config.flush_interval_consume_queue
        self._open = True
        return self

    def close(self) -> None:
        """Flush everything, write the checkpoint, remove ``abort`` and release the lock."""
        if not self._open:
            return
        self._open = False
        try:
            self._flush_all()
            remove_abort_file(self.config.abort_path)
        finally:
            self._release_files()

    def _release_files(self) -> None:
        self.commit_log.close()
        self.queues.close()
        self.index.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> MessageStore:
        return self.open() if not self._open else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def is_open(self) -> bool:
        return self._open

    @property
    def writable(self) -> bool:
        """False while disk use is above ``diskSpaceWarningLevelRatio`` (puts are refused), after
        a consume queue or index could not be written, and while a full disk is injected."""
        return self.cleaner.disk_ok and not self._dispatch_failed and not self.disk_full_injected

    def disk_report(self) -> str:
        """Disk use and free space of the store, for log lines."""
        return self.cleaner.disk_report()

    def disk_util(self) -> str:
        """``CL: 0.91 CQ: 0.91 INDEX: 0.91``: used ratio of the file systems of the commit log, the
        consume queues and the index, as the Java broker's send remark shows it (``diskUtil``)."""
        usage = self.cleaner.disk_usage
        ratios = [
            max(usage(path), 0.0) / 100
            for path in (self.config.commit_log_dir, self.config.consume_queue_dir, self.config.index_dir)
        ]
        return "CL: {:5.2f} CQ: {:5.2f} INDEX: {:5.2f}".format(*ratios)

    def disk_used_ratio(self) -> float:
        """Used space of the commit log's file system, 0.0 to 1.0 (-1.0 when it cannot be read)."""
        percent = self.cleaner.disk_usage(self.config.commit_log_dir)
        return percent / 100 if percent >= 0 else -1.0

    # -- offsets ---------------------------------------------------------------------------------

    @property
    def min_phy_offset(self) -> int:
        return self.commit_log.min_offset

    @property
    def max_phy_offset(self) -> int:
        return self.commit_log.max_offset

    # -- writing ---------------------------------------------------------------------------------

    def put_message(self, msg: MessageRecord) -> PutMessageResult:
        """Append one record (``asyncPutMessage`` without the wait). Sets ``msg.queue_offset``,
        ``physical_offset`` and ``store_timestamp``. Never raises for a bad message or a full
        disk: the status says so."""
        return self.put_messages([msg])

    def put_messages(
        self, msgs: Sequence[MessageRecord], properties: Sequence[dict[str, str]] | None = None
    ) -> PutMessageResult:
        """Append a batch for one topic-queue with consecutive queue offsets, in one file.

        ``properties``, when given, are the records' properties strings already decoded (the
        caller built them), so the dispatch (tags, keys, delay) need not parse them again.
        The steps (each a method, called once per put): refuse when closed or not writable,
        measure every record, reserve the disk blocks, encode the batch, write it, dispatch it.
        """
        if properties is not None and len(properties) != len(msgs):
            raise ValueError("one properties mapping per message")
        refused = self._refuse_put()
        if refused is not None:
            return refused
        if not msgs:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="empty batch")
        now = self.clock()
        first = msgs[0]
        key = (first.topic, first.queue_id)
        queue_offset = self.queue_offsets.get(key, 0)
        measured = self._measure_batch(msgs, properties, queue_offset, now)
        if isinstance(measured, PutMessageResult):
            return measured
        layouts, props_list, total, next_offset = measured
        reserved = self._reserve_batch(total, key, queue_offset, next_offset, len(msgs))
        if isinstance(reserved, PutMessageResult):
            return reserved
        mf, phys = reserved
        data = self._encode_batch(msgs, layouts, total, phys)
        end = self.commit_log.write(mf, data)
        self.queue_offsets[key] = next_offset
        self._last_put = (end, now)
        self.put_times += 1
        self.put_message_count += len(msgs)
        self._dispatch_batch(msgs, layouts, props_list)
        return PutMessageResult(
            PutMessageStatus.PUT_OK, AppendMessageResult(phys, len(data), queue_offset, now, len(msgs))
        )

    def _refuse_put(self) -> PutMessageResult | None:
        """The answer to a put while the store is closed or not writable, else ``None``."""
        if not self._open:
            return PutMessageResult(
                PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="message store is not open"
            )
        if self.config.is_slave:  # HookUtils.checkBeforePutMessage: a slave's store is written by HA only
            return PutMessageResult(
                PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="message store is in slave mode"
            )
        if not self.writable:
            self._refusals.log(
                "put refused: the message store is not writable (%s); disk %s",
                "a consume queue or index write failed"
                if self._dispatch_failed
                else "disk full (injected)"
                if self.disk_full_injected
                else "disk full",
                self.disk_report(),
            )
            return PutMessageResult(
                PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="message store is not writeable (disk full)"
            )
        return None

    def _measure_batch(
        self,
        msgs: Sequence[MessageRecord],
        properties: Sequence[dict[str, str]] | None,
        queue_offset: int,
        now: int,
    ) -> tuple[list[RecordLayout], list[dict[str, str]], int, int] | PutMessageResult:
        """Stamp each record (queue offset, store time) and measure it: the layouts, the decoded
        properties, the batch's total size and the queue offset after it; or the refusal of the
        first record that cannot be stored."""
        first = msgs[0]
        next_offset = queue_offset
        layouts: list[RecordLayout] = []
        props_list: list[dict[str, str]] = []
        total = 0
        for i, msg in enumerate(msgs):
            if msg.topic != first.topic or msg.queue_id != first.queue_id:
                return PutMessageResult(
                    PutMessageStatus.MESSAGE_ILLEGAL, remark="a batch must be for one queue"
                )
            if len(msg.body) > self.config.max_message_size:
                return PutMessageResult(
                    PutMessageStatus.MESSAGE_ILLEGAL,
                    remark=f"body of {len(msg.body)} bytes exceeds maxMessageSize",
                )
            in_queue = has_queue_entry(msg.sys_flag)
            msg.queue_offset = next_offset if in_queue else 0
            msg.store_timestamp = now
            msg.physical_offset = 0
            next_offset += 1 if in_queue else 0
            try:
                layout = measure_record(msg)
            except MessageFormatError as err:
                status = PutMessageStatus.MESSAGE_ILLEGAL
                if len(msg.properties.encode()) > MAX_PROPERTIES_BYTES:
                    status = PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
                return PutMessageResult(status, remark=str(err))
            layouts.append(layout)
            total += layout.size
            props_list.append(decode_properties(msg.properties) if properties is None else properties[i])
        return layouts, props_list, total, next_offset

    def _reserve_batch(
        self, total: int, key: tuple[str, int], queue_offset: int, next_offset: int, count: int
    ) -> tuple[MappedFile, int] | PutMessageResult:
        """The commit-log file and offset the batch goes to, with every file the dispatch will
        need created first, so that a full disk fails the put cleanly instead of leaving a record
        without its queue unit; or the refusal."""
        try:
            mf, phys = self.commit_log.reserve(total)
            if next_offset > queue_offset:
                self.queues.find_or_create(*key).prepare(queue_offset, next_offset - queue_offset)
            if self.config.message_index_enable:
                self.index.prepare(MAX_KEYS_RESERVED * count)
        except MessageTooLargeError as err:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=str(err))
        except StoreIOError as io_err:  # its own name: mypyc types a name by its first binding
            self._refusals.log("put refused: %s; disk %s", io_err, self.disk_report())
            return PutMessageResult(PutMessageStatus.CREATE_MAPPED_FILE_FAILED, remark=str(io_err))
        return mf, phys

    @staticmethod
    def _encode_batch(
        msgs: Sequence[MessageRecord], layouts: list[RecordLayout], total: int, phys: int
    ) -> bytearray:
        """The whole batch encoded into one buffer, each record given its commit-log offset, so
        that it is copied into the file at once."""
        data = bytearray(total)
        pos = 0
        for msg, layout in zip(msgs, layouts, strict=True):
            msg.physical_offset = phys + pos
            encode_record_into(data, pos, msg, layout)
            pos += layout.size
        return data

    def _dispatch_batch(
        self, msgs: Sequence[MessageRecord], layouts: list[RecordLayout], props_list: list[dict[str, str]]
    ) -> None:
        """Consume-queue units and index entries of the written records, and the arrival listener."""
        try:
            reqs = self.dispatcher.dispatch_batch(msgs, layouts, props_list)
        except StoreIOError as err:
            # The records are in the commit log (acknowledged by the caller); the next start
            # re-dispatches them. Until then the store takes no writes (Java's makeLogicsQueueError).
            self._dispatch_failed = True
            logger.error(
                "consume queue/index write failed for the records from commit-log offset %d: %s; the "
                "store refuses writes until restarted (disk %s)",
                msgs[0].physical_offset,
                err,
                self.disk_report(),
            )
            return
        on_arrival = self.on_arrival
        if on_arrival is not None:
            for req, props in zip(reqs, props_list, strict=True):
                if req.has_queue_entry:
                    on_arrival(req, props)

    # -- flushing --------------------------------------------------------------------------------

    def delete_topics(self, topics: set[str]) -> int:
        """``DefaultMessageStore.deleteTopics``: delete the consume queues of ``topics`` and forget
        their next queue offsets (a later message of such a topic starts at queue offset 0); the
        commit log keeps its bytes until they expire. Returns how many queues went."""
        gone = self.queues.destroy_topics(topics)
        for key in gone:
            self.queue_offsets.pop(key, None)
        return len(gone)

    def flush_up_to(self, offset: int) -> int:
        """``msync`` the commit log up to at least ``offset``; returns the flushed offset.

        May run in one other thread concurrently with puts (module docstring). Raises
        :class:`StoreIOError` if the OS reports a write error.
        """
        end, ts = self._last_put
        flushed = self.commit_log.flush(max(offset, 0))
        if flushed >= end and self.checkpoint is not None:
            self.checkpoint.physic_msg_timestamp = max(self.checkpoint.physic_msg_timestamp, ts)
        return flushed

    def flush(self) -> int:
        """Flush the commit log, consume queues, index and checkpoint now; returns the flushed offset."""
        if not self._open:
            raise StoreClosedError("message store is not open")
        return self._flush_all()

    def _flush_all(self) -> int:
        _end, ts = self._last_put
        flushed = self.commit_log.flush()
        dispatched_ts = self.dispatcher.last_timestamp
        self.queues.flush()
        self.index.flush()
        if self.checkpoint is not None:
            if ts:
                self.checkpoint.physic_msg_timestamp = max(self.checkpoint.physic_msg_timestamp, ts)
            if dispatched_ts:
                self.checkpoint.logics_msg_timestamp = max(
                    self.checkpoint.logics_msg_timestamp, dispatched_ts
                )
            self.checkpoint.confirm_phy_offset = self.commit_log.max_offset
            self.checkpoint.flush()
        return flushed

    def tick(self, now: int | None = None) -> None:
        """Periodic work: async commit-log flush, consume-queue/index/checkpoint flush, cleanup."""
        if not self._open:
            return
        now = self.clock() if now is None else now
        config = self.config
        if now >= self._next_cl_flush:
            self._next_cl_flush = now + config.flush_interval_commit_log
            dirty = self.commit_log.max_offset - self.commit_log.queue.flushed_offset
            thorough = now - self._last_thorough_flush >= config.flush_commit_log_thorough_interval
            if thorough or dirty >= config.flush_commit_log_least_pages * PAGE_SIZE:
                self.flush_up_to(self.commit_log.max_offset)
                if thorough:
                    self._last_thorough_flush = now
        if now >= self._next_cq_flush:
            self._next_cq_flush = now + config.flush_interval_consume_queue
            self._flush_all()
        self.cleaner.tick(now)

    def clean(self, now: int | None = None, manual: bool = False) -> int:
        """Run one cleanup round now (``executeDeleteFilesManually`` when ``manual``); returns the
        number of commit-log files deleted."""
        return self.cleaner.run(self.clock() if now is None else now, manual)

    def statistics(self) -> dict[str, int]:
        return {
            "puts": self.put_times,
            "messages": self.put_message_count,
            "max_phy_offset": self.max_phy_offset,
        }

    def _on_index_file_full(self, end_timestamp: int) -> None:
        if self.checkpoint is not None:
            self.checkpoint.index_msg_timestamp = end_timestamp
            self.checkpoint.flush()
