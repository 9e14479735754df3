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
from typing import TYPE_CHECKING

from codec.message import MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2, SYS_FLAG_POS, MessageRecord
from codec.properties import decode_properties
from store.commit_log import store_timestamp_pos
from store.dispatch import dispatch_of

if TYPE_CHECKING:
    from store.message_store import MessageStore

_INT = struct.Struct(">i")
_UINT = struct.Struct(">I")
_LONG = struct.Struct(">q")


def recover(store: MessageStore, clean: bool) -> None:
    """Bring the commit log, consume queues and index into agreement (module docstring)."""
    queues = store.queues
    commit_log = store.commit_log
    checkpoint = store.checkpoint
    assert checkpoint is not None
    queues.recover()
    max_phy_cq = queues.max_physic_offset()
    files = commit_log.queue.files
    if not files:
        queues.destroy()
        store.queue_offsets = {}
        return
    if clean:
        start = 0
        for i in range(len(files) - 1, -1, -1):
            if files[i].file_from_offset <= max_phy_cq:
                start = i
                break
    else:
        bound = checkpoint.min_timestamp()
        if store.config.message_index_enable and store.config.message_index_safe:
            bound = checkpoint.min_timestamp_index()
        start = 0
        for i in range(len(files) - 1, -1, -1):
            ts = _first_store_timestamp(files[i].mm)
            if 0 < ts <= bound:
                start = i
                break
    index_from = store.index.end_phy_offset if store.index.files else 0
    if store.config.message_index_enable and store.index.files:
        for i in range(start - 1, -1, -1):
            if files[i].file_end_offset > index_from:
                start = i
            else:
                break
    delay_levels = store.delay_levels_ms
    index_enabled = store.config.message_index_enable

    def visit(offset: int, size: int, record: MessageRecord) -> None:
        props = decode_properties(record.properties)
        req = dispatch_of(record, offset, size, delay_levels, props)
        if store.tags_code_hook is not None:
            hooked = store.tags_code_hook(record, props)
            if hooked is not None:
                req.tags_code = hooked
        if req.has_queue_entry:
            queues.find_or_create(req.topic, req.queue_id).put(req.queue_offset, offset, size, req.tags_code)
        if index_enabled and req.is_indexed and offset >= index_from:
            keys = req.index_keys()
            if keys:
                store.index.build(req.topic, keys, offset, req.store_timestamp)
        store._last_dispatch_ts = req.store_timestamp

    end = commit_log.scan(start, visit, check_crc=store.config.check_crc_on_recover)
    commit_log.truncate(end)
    queues.truncate_dirty(end)
    queues.correct_min_offsets(commit_log.min_offset)
    store.queue_offsets = {key: cq.max_offset for key, cq in queues.queues.items()}
    checkpoint.confirm_phy_offset = end


def _first_store_timestamp(mm: mmap.mmap) -> int:
    """Store timestamp of the first record of a commit-log file, 0 if it does not start with one."""
    (magic,) = _UINT.unpack_from(mm, 4)
    if magic not in (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2):
        return 0
    (sys_flag,) = _INT.unpack_from(mm, SYS_FLAG_POS)
    (ts,) = _LONG.unpack_from(mm, store_timestamp_pos(sys_flag))
    return int(ts)
