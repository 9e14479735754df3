"""Recovery at open (``DefaultMessageStore.recover``, ``CommitLog.recoverNormally`` / ``recoverAbnormally``).

1. Consume queues recover on their own (:meth:`store.consume_queue.ConsumeQueue.recover`); the largest
   record end they reference is ``max_phy_cq``.
2. Choose the commit-log file to scan from:

   * normal (no ``abort``): the last file starting at or before ``max_phy_cq``; everything before it
     is trusted, as Java does;
   * abnormal: the last file whose first record's store timestamp is at or before the checkpoint's
     ``min(physicMsgTimestamp, logicsMsgTimestamp) − 3 s`` (with ``messageIndexSafe`` also
     ``indexMsgTimestamp``); none qualifies → the first file.

   In both cases we go back further if the index's ``endPhyOffset`` lies in an earlier file, so the
   keys of every record are indexed again after a crash (our index files are kept, see
   :mod:`store.index_file`).
3. Scan record by record (:meth:`store.commit_log.CommitLog.scan`, CRCs checked with
   ``checkCRCOnRecover``). Each whole record is re-dispatched: consume queues skip units they
   already hold, the index skips records before its ``endPhyOffset``.
4. The end of the last whole record is the new commit-log end: the torn tail is zeroed, later
   files are deleted, consume-queue units pointing past it are dropped, and every queue's min
   offset is moved past records deleted by cleanup. Next queue offsets are the queues' max offsets.
"""

from __future__ import annotations

import mmap
import struct

from codec.message import MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2, SYS_FLAG_POS, MessageRecord
from codec.properties import decode_properties
from store.checkpoint import StoreCheckpoint
from store.commit_log import CommitLog, store_timestamp_pos
from store.config import StoreConfig
from store.consume_queue_store import ConsumeQueueStore
from store.dispatch import CommitLogDispatcher

_INT = struct.Struct(">i")
_UINT = struct.Struct(">I")
_LONG = struct.Struct(">q")


def recover(
    config: StoreConfig,
    commit_log: CommitLog,
    queues: ConsumeQueueStore,
    checkpoint: StoreCheckpoint,
    dispatcher: CommitLogDispatcher,
    clean: bool,
) -> int:
    """Bring the commit log, consume queues and index into agreement (module docstring); returns
    the recovered end of the commit log. Records are re-dispatched through ``dispatcher``, the
    same step a put uses."""
    queues.recover()
    max_phy_cq = queues.max_physic_offset()
    files = commit_log.queue.files
    if not files:
        queues.destroy()
        return 0
    if clean:
        start = 0
        for i in range(len(files) - 1, -1, -1):
            if files[i].file_from_offset <= max_phy_cq:
                start = i
                break
    else:
        bound = checkpoint.min_timestamp()
        if config.message_index_enable and config.message_index_safe:
            bound = checkpoint.min_timestamp_index()
        start = 0
        for i in range(len(files) - 1, -1, -1):
            ts = _first_store_timestamp(files[i].mm)
            if 0 < ts <= bound:
                start = i
                break
    index = dispatcher.index
    if config.message_index_enable and index.files:
        index_from = index.end_phy_offset
        for i in range(start - 1, -1, -1):
            if files[i].file_end_offset > index_from:
                start = i
            else:
                break

    def visit(offset: int, size: int, record: MessageRecord) -> None:
        dispatcher.dispatch_record(record, offset, size, decode_properties(record.properties))

    end = commit_log.scan(start, visit, check_crc=config.check_crc_on_recover)
    commit_log.truncate(end)
    queues.truncate_dirty(end)
    queues.correct_min_offsets(commit_log.min_offset)
    checkpoint.confirm_phy_offset = end
    return end


def _first_store_timestamp(mm: mmap.mmap) -> int:
    """Store timestamp of the first record of a commit-log file, 0 if it does not start with one."""
    (magic,) = _UINT.unpack_from(mm, 4)
    if magic not in (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2):
        return 0
    (sys_flag,) = _INT.unpack_from(mm, SYS_FLAG_POS)
    (ts,) = _LONG.unpack_from(mm, store_timestamp_pos(sys_flag))
    return int(ts)
