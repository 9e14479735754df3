"""Commit-log replication, the store's side: what a master sends, what a slave appends.

Mirrors the store calls of ``org.apache.rocketmq.store.ha.DefaultHAConnection`` (master) and
``DefaultHAClient`` (slave), and the slave's ``ReputMessageService``. No sockets and no Trio here:
:mod:`broker.ha` moves the bytes. The wire protocol they carry::

    slave -> master   report   slaveMaxOffset int64           (REPORT, big-endian, 8 bytes)
    master -> slave   transfer physicalOffset int64, bodySize int32, body
                               (TRANSFER_HEADER, 12 bytes; bodySize 0 is a heartbeat)

The master answers a slave's first report with the bytes from that offset (from the start of its
last commit-log file when the slave reports 0, ``transfer_start``), each transfer at most
``haTransferBatchSize`` bytes and never across a file (``getCommitLogData``): a full file is sent
with its blank marker and the zeros after it, so the slave's files are byte-identical to the
master's. A transfer may end in the middle of a record.

The slave (:class:`ReplicaAppender`) appends each body at its own max offset (which must be the
transfer's offset unless its log is empty, as ``dispatchReadRequest`` checks), then dispatches the
whole records now present into its consume queues and index as if it had written them: the same
:class:`store.dispatch.CommitLogDispatcher` a put and recovery use, and the store's arrival
listener is told, so held pulls on the slave wake. A record cut by a transfer waits for the rest.
After a crash the slave's recovery drops a torn tail (a cut record is one) and its report asks
the master for the bytes from there.
"""

from __future__ import annotations

import logging
import struct

from codec.errors import MessageFormatError
from codec.message import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2, decode_record
from codec.properties import decode_properties
from store.errors import StoreError
from store.message_store import MessageStore

logger = logging.getLogger(__name__)

REPORT = struct.Struct(">q")  # DefaultHAClient.REPORT_HEADER_SIZE: slave max offset
TRANSFER_HEADER = struct.Struct(">qi")  # DefaultHAConnection.TRANSFER_HEADER_SIZE: offset, body size
_SIZE_MAGIC = struct.Struct(">iI")
_SIZE_FIELD = 4  # TOTALSIZE


class ReplicationError(StoreError):
    """The master's bytes do not fit the slave's log (wrong offset, across a file, bad record)."""


def transfer_start(store: MessageStore, slave_offset: int) -> int:
    """Where the master starts sending to a slave whose first report is ``slave_offset``: there,
    or for an empty slave (0) the start of the master's last commit-log file."""
    if slave_offset != 0:
        return slave_offset
    max_offset = store.max_phy_offset
    return max(max_offset - max_offset % store.config.mapped_file_size_commit_log, 0)


def transfer_data(store: MessageStore, offset: int, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of the commit log from ``offset`` to the written end of the file
    holding it (``getCommitLogData``); ``None`` when nothing is written there yet."""
    mf = store.commit_log.queue.find(offset)
    if mf is None:
        return None
    pos = offset - mf.file_from_offset
    end = min(mf.wrote_position, pos + limit)
    if end <= pos:
        return None
    return mf.mm[pos:end]


class ReplicaAppender:
    """A slave's writer: appends the master's bytes and dispatches the whole records in them."""

    def __init__(self, store: MessageStore) -> None:
        self.store = store
        self.dispatched = store.max_phy_offset  # recovery dispatched every whole record
        self.appended_bytes = 0
        self._held = b""  # the TOTALSIZE bytes of a cut record, kept out of the file
        self._held_at = -1

    @property
    def max_offset(self) -> int:
        """What the slave reports: the end of the bytes it holds (a cut record included)."""
        return self.store.max_phy_offset

    def check_offset(self, master_offset: int) -> None:
        """``dispatchReadRequest``'s check of a transfer header; raises :class:`ReplicationError`."""
        mine = self.max_offset
        if mine != 0 and mine != master_offset:
            raise ReplicationError(
                "master pushed offset not equal the max phy offset in slave, "
                f"SLAVE: {mine} MASTER: {master_offset}"
            )

    def append(self, offset: int, data: bytes | memoryview) -> int:
        """Append a transfer body at ``offset`` and dispatch what it completes; returns the
        number of records dispatched. Raises :class:`ReplicationError` (or a
        :class:`store.errors.StoreIOError` for a full disk) and then writes nothing.

        The TOTALSIZE of a record the body leaves cut is kept out of the file (zeros there, the
        real bytes held here) until the rest arrives, then written last, as a put writes it: a
        restart after a crash finds a torn record, not a whole-looking one with missing bytes."""
        self.check_offset(offset)
        if not data:
            return 0
        queue = self.store.commit_log.queue
        mf = queue.last_for_write(offset)
        pos = offset - mf.file_from_offset
        if pos != mf.wrote_position:
            raise ReplicationError(
                f"transfer at {offset} does not follow the slave's file {mf.file_from_offset} "
                f"written to {mf.wrote_position}"
            )
        end = pos + len(data)
        if end > mf.file_size:
            raise ReplicationError(f"transfer of {len(data)} bytes at {offset} crosses a commit-log file")
        # An empty slave's first file starts where the master began sending (its last file).
        self.dispatched = max(self.dispatched, self.store.commit_log.min_offset)
        cut = self._tail_cut(offset, data)
        body: bytes | bytearray | memoryview = data
        held = self._held
        if cut is not None and cut >= offset:
            k = cut - offset
            body = bytearray(data)
            held = bytes(body[k : k + _SIZE_FIELD])
            body[k : k + len(held)] = bytes(len(held))
        mf.reserve(end)
        mf.mm[pos:end] = body
        mf.wrote_position = end
        if self._held and cut != self._held_at:  # the held record is whole now: its size goes last
            head = queue.find(self._held_at)
            assert head is not None
            at = self._held_at - head.file_from_offset
            head.mm[at : at + len(self._held)] = self._held
            self._held = b""
        if cut is not None:
            self._held, self._held_at = held, cut
        self.appended_bytes += len(data)
        return self.reput()

    def _tail_cut(self, offset: int, data: bytes | memoryview) -> int | None:
        """The offset of the record that appending ``data`` at ``offset`` would leave cut, if any."""
        end = offset + len(data)
        r = self.dispatched
        while r < end:
            head = self._peek(r, _SIZE_MAGIC.size, offset, data)
            if len(head) < _SIZE_MAGIC.size:
                return r
            size, magic = _SIZE_MAGIC.unpack(head)
            if magic == BLANK_MAGIC_CODE or size <= 0:
                return None  # a file's end, or bytes reput refuses
            if r + size > end:
                return r
            r += size
        return None

    def _peek(self, r: int, n: int, offset: int, data: bytes | memoryview) -> bytes:
        """``n`` bytes at ``r`` as they will be once ``data`` is appended at ``offset`` (held
        bytes in place), fewer when the data ends first."""
        out = bytearray()
        if r < offset:
            mf = self.store.commit_log.queue.find(r)
            if mf is None:
                return b""
            p = r - mf.file_from_offset
            out += mf.mm[p : p + min(n, offset - r)]
            if self._held and r == self._held_at:
                out[: len(self._held)] = self._held
        rest = n - len(out)
        if rest > 0:
            start = max(r, offset) - offset
            out += data[start : start + rest]
        return bytes(out)

    def reput(self) -> int:
        """Dispatch every whole record between the dispatched offset and the end of the data
        (``ReputMessageService.doReput``); returns how many."""
        store = self.store
        commit_log = store.commit_log
        end = commit_log.max_offset
        pos = self.dispatched
        count = 0
        last_ts = 0
        while pos < end:
            mf = commit_log.queue.find(pos)
            if mf is None:
                break
            if pos == self._held_at and self._held:
                break  # cut by the transfer: the rest comes with the next one
            p = pos - mf.file_from_offset
            avail = mf.wrote_position - p
            if avail < _SIZE_MAGIC.size:
                break
            size, magic = _SIZE_MAGIC.unpack_from(mf.mm, p)
            if magic == BLANK_MAGIC_CODE:
                if mf.wrote_position < mf.file_size:
                    break  # the zeros after the marker are still coming
                pos = mf.file_end_offset
                continue
            if magic not in (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2) or size <= 0 or size > avail:
                raise ReplicationError(f"no record at replicated commit-log offset {pos}")
            with memoryview(mf.mm) as view:
                try:
                    record = decode_record(view[: p + size], p)
                except MessageFormatError as err:
                    raise ReplicationError(f"replicated record at {pos} is unreadable: {err}") from err
            props = decode_properties(record.properties)
            req = store.dispatcher.dispatch_record(record, pos, size, props)
            if req.has_queue_entry:
                store.queue_offsets[(req.topic, req.queue_id)] = req.queue_offset + 1
                if store.on_arrival is not None:
                    store.on_arrival(req, props)
            last_ts = record.store_timestamp
            pos += size
            count += 1
        self.dispatched = pos
        if count:
            # What a put records, so that the periodic flush advances the checkpoint's times.
            store._last_put = (pos, last_ts)
        return count
