"""The two halves of a put split across processes, as a prototype of Java's ``ReputMessageService``
(``DefaultMessageStore``, 5.3.3): :class:`CommitLogWriter` appends (process A), :func:`serve_dispatch`
dispatches (process B).

The writer is ``MessageStore.put_messages`` without its dispatch, made of the store's own steps:
stamp and measure each record (``_measure_batch``), reserve the commit-log space
(``CommitLog.reserve``), encode the batch into one buffer (``_encode_batch``) and copy it into the
mapped file (``CommitLog.write``, first TOTALSIZE last). After each batch it rings a doorbell: the
batch's end offset, 8 bytes into a pipe (one ``write`` under ``PIPE_BUF`` is atomic).

The dispatcher maps the same commit-log files (``MappedFile.open``, ``MAP_SHARED``: the writer's bytes
are in the same page cache, and the pipe's system calls order them before the doorbell), reads each
record from where it stopped to the newest end rung (``decode_record(..., with_body=False)`` and
``decode_properties``, what ``checkMessageAndReturnSize`` does for the reput without a CRC check),
writes the consume-queue units and index entries with the store's own ``CommitLogDispatcher``
(``dispatch_batch`` per run of records of one queue, as a put does), and answers with the offset it
dispatched up to: what the broker would use to wake long polls.

:func:`ship_batch` and :meth:`Reput.dispatch_shipped` are the variant without the read-back: the
writer packs what the dispatch reads of each record and the dispatcher works from that.
:func:`verify_store` checks a store either way wrote (every unit points at its own record).
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path

from codec.message import (
    BLANK_MAGIC_CODE,
    BLANK_MARKER_SIZE,
    MessageRecord,
    RecordLayout,
    decode_record,
)
from codec.properties import DELAY, KEYS, TAGS, UNIQ_KEY, decode_properties
from store.commit_log import CommitLog
from store.config import StoreConfig
from store.consume_queue_store import ConsumeQueueStore
from store.dispatch import CommitLogDispatcher
from store.index_service import IndexService
from store.mapped_file import MappedFile, offset_to_file_name
from store.message_store import MAX_KEYS_RESERVED, MessageStore, system_clock_ms
from store.results import PutMessageResult

OFFSET = struct.Struct(">q")  # one doorbell or answer: a commit-log offset
FRAME = struct.Struct(">iq")  # a shipped batch's length and end offset (length 0: stop), then the batch
STOP = -1  # the doorbell that ends the dispatcher once it has caught up
_SIZE_MAGIC = struct.Struct(">iI")
_SIZE_ONLY = struct.Struct(">i")  # dispatch_batch reads only RecordLayout.size
_SHIPPED = struct.Struct(
    ">qqiqiH"
)  # queue offset, commit-log offset, size, store time, sys flag, text length
_SHIPPED_PROPERTIES = (TAGS, KEYS, UNIQ_KEY, DELAY)  # all the dispatch reads of a record's properties
_SEP = "\x01"


def ship_batch(
    msgs: Sequence[MessageRecord], layouts: Sequence[RecordLayout], props: Sequence[dict[str, str]]
) -> bytes:
    """The variant without a read-back: a put's dispatch fields as bytes for process B (the
    topic and queue once, then per record its offsets, size, store time, sys flag and the
    properties the dispatch reads), instead of B decoding them from the commit log."""
    first = msgs[0]
    head = f"{first.topic}{_SEP}{first.queue_id}".encode()
    parts = [_SHIPPED_HEAD.pack(len(msgs), len(head)), head]
    for msg, layout, mapping in zip(msgs, layouts, props, strict=True):
        text = _SEP.join(mapping.get(name, "") for name in _SHIPPED_PROPERTIES).encode()
        parts.append(
            _SHIPPED.pack(
                msg.queue_offset,
                msg.physical_offset,
                layout.size,
                msg.store_timestamp,
                msg.sys_flag,
                len(text),
            )
        )
        parts.append(text)
    return b"".join(parts)


_SHIPPED_HEAD = struct.Struct(">iH")  # records, length of "topic<SEP>queue id"


class CommitLogWriter:
    """Process A: :meth:`store.message_store.MessageStore.put_messages` without its dispatch, through
    the store's own (compiled, when the build is) steps: ``_measure_batch``, ``CommitLog.reserve``,
    ``_encode_batch`` and ``CommitLog.write``. The consume queues and index are never opened here:
    their files belong to process B."""

    def __init__(self, config: StoreConfig, clock: Callable[[], int]) -> None:
        self.clock = clock
        self.store = MessageStore(config, clock)  # never opened: its put steps, one commit log
        self.commit_log = self.store.commit_log
        self.commit_log.load()
        self.queue_offsets: dict[tuple[str, int], int] = {}
        self.last_layouts: list[RecordLayout] = []  # of the last put (for ship_batch)

    def put(self, msgs: Sequence[MessageRecord], props: Sequence[dict[str, str]]) -> int:
        """Append one batch of one topic-queue; returns the commit-log end offset after it."""
        now = self.clock()
        first = msgs[0]
        key = (first.topic, first.queue_id)
        measured = self.store._measure_batch(msgs, props, self.queue_offsets.get(key, 0), now)
        if isinstance(measured, PutMessageResult):
            raise ValueError(f"refused: {measured.remark}")
        layouts, _props, total, next_offset = measured
        self.last_layouts = layouts
        mf, phys = self.commit_log.reserve(total)
        data = MessageStore._encode_batch(msgs, layouts, total, phys)
        end = self.commit_log.write(mf, data)
        self.queue_offsets[key] = next_offset
        return end

    def close(self) -> None:
        self.commit_log.close()


class CommitLogTail:
    """Process B's view of the commit log: files mapped as the offsets reach them."""

    def __init__(self, config: StoreConfig) -> None:
        self.directory = config.commit_log_dir
        self.file_size = config.mapped_file_size_commit_log
        self.files: dict[int, MappedFile] = {}

    def file_at(self, offset: int) -> MappedFile:
        start = offset - offset % self.file_size
        mf = self.files.get(start)
        if mf is None:
            path = os.path.join(self.directory, offset_to_file_name(start))
            mf = self.files[start] = MappedFile.open(path, self.file_size, preallocate=False)
        return mf

    def close(self) -> None:
        for mf in self.files.values():
            mf.close()


class Reput:
    """Process B's work: dispatch every record between two commit-log offsets."""

    def __init__(self, config: StoreConfig, clock: Callable[[], int]) -> None:
        self.config = config
        self.tail = CommitLogTail(config)
        self.queues = ConsumeQueueStore(
            config.consume_queue_dir, config.mapped_file_size_consume_queue, config.preallocate
        )
        self.queues.load()
        self.index = IndexService(
            config.index_dir, config.max_hash_slot_num, config.max_index_num, clock, config.preallocate
        )
        self.index.load()
        self.dispatcher = CommitLogDispatcher(
            self.queues, self.index, config.delay_levels_ms(), config.message_index_enable
        )
        self.records = 0

    def dispatch(self, start: int, end: int) -> int:
        """Dispatch the records in ``[start, end)``; returns ``end``."""
        offset = start
        run: list[MessageRecord] = []
        layouts: list[RecordLayout] = []
        props: list[dict[str, str]] = []
        while offset < end:
            mf = self.tail.file_at(offset)
            pos = offset - mf.file_from_offset
            size, magic = _SIZE_MAGIC.unpack_from(mf.mm, pos)
            if magic == BLANK_MAGIC_CODE or mf.file_size - pos < BLANK_MARKER_SIZE:
                offset = mf.file_end_offset
                continue
            record = decode_record(mf.mm, pos, with_body=False)
            if run and (record.topic != run[0].topic or record.queue_id != run[0].queue_id):
                self._dispatch_run(run, layouts, props)
                run, layouts, props = [], [], []
            run.append(record)
            layouts.append(RecordLayout(size, b"", b"", record.sys_flag, _SIZE_ONLY))
            props.append(decode_properties(record.properties))
            offset += size
        if run:
            self._dispatch_run(run, layouts, props)
        return end

    def dispatch_shipped(self, data: bytes) -> None:
        """Dispatch one batch shipped by :func:`ship_batch` (no commit-log read)."""
        count, head_len = _SHIPPED_HEAD.unpack_from(data, 0)
        pos = _SHIPPED_HEAD.size
        topic, queue_text = data[pos : pos + head_len].decode().split(_SEP)
        queue_id = int(queue_text)
        pos += head_len
        run: list[MessageRecord] = []
        layouts: list[RecordLayout] = []
        props: list[dict[str, str]] = []
        for _ in range(count):
            queue_offset, phys, size, store_ts, sys_flag, text_len = _SHIPPED.unpack_from(data, pos)
            pos += _SHIPPED.size
            values = data[pos : pos + text_len].decode().split(_SEP)
            pos += text_len
            run.append(
                MessageRecord(
                    topic=topic,
                    queue_id=queue_id,
                    body=b"",
                    queue_offset=queue_offset,
                    physical_offset=phys,
                    store_timestamp=store_ts,
                    sys_flag=sys_flag,
                )
            )
            layouts.append(RecordLayout(size, b"", b"", sys_flag, _SIZE_ONLY))
            props.append({k: v for k, v in zip(_SHIPPED_PROPERTIES, values, strict=True) if v})
        self._dispatch_run(run, layouts, props)

    def _dispatch_run(
        self, run: list[MessageRecord], layouts: list[RecordLayout], props: list[dict[str, str]]
    ) -> None:
        """What a put does after its copy: reserve the queue's and index's blocks, then dispatch."""
        first = run[0]
        self.queues.find_or_create(first.topic, first.queue_id).prepare(first.queue_offset, len(run))
        if self.config.message_index_enable:
            self.index.prepare(MAX_KEYS_RESERVED * len(run))
        self.dispatcher.dispatch_batch(run, layouts, props)
        self.records += len(run)

    def close(self) -> None:
        self.tail.close()
        self.queues.close()
        self.index.close()


def serve_dispatch(
    config: StoreConfig, clock: Callable[[], int], doorbell: int, answer: int, report: Connection
) -> None:
    """Process B's loop: wait for a doorbell, dispatch up to the newest end rung, answer with the
    offset dispatched. On :data:`STOP` it sends ``(records, CPU seconds)`` through ``report`` once
    it has dispatched everything rung before."""
    dispatched = 0

    def handle(reput: Reput, data: bytes) -> tuple[int, bool]:
        nonlocal dispatched
        target, stop = dispatched, False
        for (value,) in OFFSET.iter_unpack(data):
            if value == STOP:
                stop = True
            else:
                target = max(target, value)
        if target <= dispatched:
            return -1, stop
        dispatched = reput.dispatch(dispatched, target)
        return dispatched, stop

    serve(config, clock, doorbell, answer, report, handle)


def serve_shipped(
    config: StoreConfig, clock: Callable[[], int], doorbell: int, answer: int, report: Connection
) -> None:
    """:func:`serve_dispatch` for shipped batches: the doorbell pipe carries :data:`FRAME`-prefixed
    :func:`ship_batch` bytes; B dispatches every whole frame read and answers with the end offset of
    the last one. A frame of length 0 stops it."""
    pending = bytearray()

    def handle(reput: Reput, data: bytes) -> tuple[int, bool]:
        pending.extend(data)
        pos, dispatched, stop = 0, -1, False
        while len(pending) - pos >= FRAME.size:
            length, end = FRAME.unpack_from(pending, pos)
            if length == 0:
                stop = True
                pos += FRAME.size
                break
            if len(pending) - pos - FRAME.size < length:
                break
            reput.dispatch_shipped(bytes(pending[pos + FRAME.size : pos + FRAME.size + length]))
            dispatched = end
            pos += FRAME.size + length
        del pending[:pos]
        return dispatched, stop

    serve(config, clock, doorbell, answer, report, handle)


def serve(
    config: StoreConfig,
    clock: Callable[[], int],
    doorbell: int,
    answer: int,
    report: Connection,
    handle: Callable[[Reput, bytes], tuple[int, bool]],
) -> None:
    """The loop both kinds of process B share: read the doorbell pipe, ``handle`` what arrived
    (it answers the offset dispatched, or -1 for none yet, and whether to stop), write that answer,
    and at the end send ``(records, CPU seconds from the first doorbell)`` through ``report``."""
    reput = Reput(config, clock)
    cpu_start: float | None = None
    stop = False
    try:
        while not stop:
            data = os.read(doorbell, 65536)
            if not data:
                break
            if cpu_start is None:
                cpu_start = time.process_time()
            dispatched, stop = handle(reput, data)
            if dispatched >= 0:
                os.write(answer, OFFSET.pack(dispatched))
        report.send((reput.records, time.process_time() - (cpu_start or time.process_time())))
    finally:
        reput.close()


def store_config(root: Path, file_size: int) -> StoreConfig:
    config, _ = StoreConfig.from_properties(
        {
            "storePathRootDir": str(root),
            "flushDiskType": "ASYNC_FLUSH",
            "mappedFileSizeCommitLog": str(file_size),
        }
    )
    return config


def verify_store(root: Path, file_size: int) -> tuple[int, int]:
    """``(consume-queue units, index entries)`` of a store, after checking that each unit points at
    a record of its own queue and queue offset; raises ``AssertionError`` otherwise."""
    config = store_config(root, file_size)
    commit_log = CommitLog(config)
    commit_log.load()
    queues = ConsumeQueueStore(config.consume_queue_dir, config.mapped_file_size_consume_queue)
    queues.load()
    queues.recover()
    index = IndexService(config.index_dir, config.max_hash_slot_num, config.max_index_num, system_clock_ms)
    index.load()
    units = 0
    try:
        for cq in queues:
            for queue_offset, phys, size, _tags in cq.units():
                mf = commit_log.queue.find(phys)
                assert mf is not None, f"unit {cq.queue_id}/{queue_offset} points past the commit log"
                record = decode_record(mf.mm, phys - mf.file_from_offset, with_body=False)
                found = (record.queue_id, record.queue_offset, record.store_size)
                assert found == (cq.queue_id, queue_offset, size), f"unit {cq.queue_id}/{queue_offset}"
                units += 1
        entries = sum(f.index_count - 1 for f in index.files)
    finally:
        commit_log.close()
        queues.close()
        index.close()
    return units, entries
