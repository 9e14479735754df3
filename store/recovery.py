"""Recovery at open (``DefaultMessageStore.recover``, ``CommitLog.recoverNormally`` / ``recoverAbnormally``).

What recovery trusts: the consume queues and index up to what they reference, and the checkpoint's
``confirmPhyOffset`` (the commit log was fsynced up to it before the checkpoint was written). What it
rebuilds: everything after the first of those points, from the commit log.

1. Consume queues recover on their own (:meth:`store.consume_queue.ConsumeQueue.recover`). A queue
   that looks damaged rather than torn (a zeroed file, a file ending early before a later one) is
   moved aside into ``damaged/`` and rebuilt from the whole commit log, with a WARNING.
2. Choose the commit-log file to scan from, as Java does:

   * normal (no ``abort``): the last file starting at or before the largest record end any consume
     queue references (``max_phy_cq``);
   * abnormal: the last file whose first record's store timestamp is at or before the checkpoint's
     ``min(physicMsgTimestamp, logicsMsgTimestamp) − 3 s`` (with ``messageIndexSafe`` also
     ``indexMsgTimestamp``); none qualifies → the first file;

   going back further if the index's ``endPhyOffset`` lies in an earlier file, so the keys of every
   record are indexed again. Then skip, inside that range, what is both durable and dispatched:
   the scan starts at ``min(confirmPhyOffset, max_phy_cq, index endPhyOffset)`` when that lies
   later, so a restart costs what was written since the last checkpoint, not the store's size.
3. Scan record by record (:meth:`store.commit_log.CommitLog.scan`, CRCs checked with
   ``checkCRCOnRecover``) and re-dispatch each whole record through the store's dispatcher
   (consume queues skip units they hold, the index records before its ``endPhyOffset``). A damaged
   record followed by sound ones is logged at ERROR with its exact range, its bytes are copied into
   ``damaged/``, the units pointing into it become placeholders, and the records after it are kept.
4. The end of the last whole record is the new commit-log end: the torn tail is zeroed (a copy of
   any non-zero bytes cut goes to ``damaged/`` first), later files are deleted, consume-queue units
   pointing past it are dropped, and every queue's min offset moves past records deleted by cleanup.
   Zeroing the tail reads only the parts of the file that hold blocks, not the unused rest of a
   1 GiB file (:mod:`store.mapped_file_queue`): a restart costs what was written since the last
   checkpoint plus a torn write, whatever the file size.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import time
from typing import NamedTuple

from codec.message import MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2, SYS_FLAG_POS, MessageRecord
from codec.properties import decode_properties
from store.checkpoint import StoreCheckpoint
from store.commit_log import CommitLog, store_timestamp_pos
from store.config import StoreConfig
from store.consume_queue_store import ConsumeQueueStore
from store.dispatch import CommitLogDispatcher
from store.errors import StoreIOError
from store.mapped_file import MappedFile

logger = logging.getLogger(__name__)

DAMAGED_DIR = "damaged"  # below storePathRootDir: bytes recovery cut or set aside, never deleted

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
) -> Recovered:
    """Bring the commit log, consume queues and index into agreement (module docstring). Records
    are re-dispatched through ``dispatcher``, the same step a put uses."""
    damaged_dir = os.path.join(config.store_path_root_dir, DAMAGED_DIR)
    rebuild = False
    for cq in queues.recover():
        kept = queues.remove(cq, damaged_dir)
        logger.warning(
            "consume queue %s/%d is damaged; moved to %s, rebuilding it from the commit log",
            cq.topic,
            cq.queue_id,
            kept,
        )
        rebuild = True
    max_phy_cq = queues.max_physic_offset()
    files = commit_log.queue.files
    if not files:
        queues.destroy()
        return Recovered(0, True)
    index = dispatcher.index
    start = 0 if rebuild else _start_file(config, files, max_phy_cq, checkpoint, clean)
    if config.message_index_enable and index.files:
        index_from = index.end_phy_offset
        for i in range(start - 1, -1, -1):
            if files[i].file_end_offset > index_from:
                start = i
            else:
                break
    start_offset = files[start].file_from_offset
    if not rebuild:
        durable = min(checkpoint.confirm_phy_offset, max_phy_cq)
        if config.message_index_enable:
            durable = min(durable, index.end_phy_offset)
        start_offset = max(start_offset, durable)

    dispatch_failed: list[StoreIOError] = []

    def visit(offset: int, size: int, record: MessageRecord) -> None:
        if dispatch_failed:
            return
        try:
            dispatcher.dispatch_record(record, offset, size, decode_properties(record.properties))
        except StoreIOError as err:
            # A full disk: open anyway and serve what is dispatched; the next start goes on from here.
            dispatch_failed.append(err)
            logger.error(
                "consume queues/index not rebuilt from commit-log offset %d on: %s; records after it "
                "are not served until the store restarts with room",
                offset,
                err,
            )

    def damaged(first: int, end: int) -> None:
        kept = _keep_aside(damaged_dir, commit_log.read_range(first, end), f"commitlog-{first}-{end}")
        blanked = queues.blank_units_in(first, end)
        logger.error(
            "commit log damaged from offset %d to %d (%d bytes, copied to %s); the records after it "
            "are kept, %d consume-queue unit(s) pointing into it are skipped",
            first,
            end,
            end - first,
            kept,
            blanked,
        )

    logger.debug("recovery scans the commit log from offset %d", start_offset)
    end = commit_log.scan(start_offset, visit, check_crc=config.check_crc_on_recover, on_damage=damaged)
    tail = commit_log.truncate(end)
    if tail.strip(b"\0"):
        kept = _keep_aside(damaged_dir, tail.rstrip(b"\0"), f"commitlog-tail-{end}")
        logger.warning(
            "commit log torn at offset %d; the %d bytes cut are copied to %s", end, len(tail), kept
        )
    queues.truncate_dirty(end)
    queues.correct_min_offsets(commit_log.min_offset)
    checkpoint.confirm_phy_offset = end
    return Recovered(end, not dispatch_failed)


class Recovered(NamedTuple):
    end: int  # the recovered end of the commit log
    complete: bool  # False: a full disk stopped the rebuild of consume queues/index part way


def _start_file(
    config: StoreConfig, files: list[MappedFile], max_phy_cq: int, checkpoint: StoreCheckpoint, clean: bool
) -> int:
    if clean:
        for i in range(len(files) - 1, -1, -1):
            if files[i].file_from_offset <= max_phy_cq:
                return i
        return 0
    bound = checkpoint.min_timestamp()
    if config.message_index_enable and config.message_index_safe:
        bound = checkpoint.min_timestamp_index()
    for i in range(len(files) - 1, -1, -1):
        ts = _first_store_timestamp(files[i].mm)
        if 0 < ts <= bound:
            return i
    return 0


def _keep_aside(directory: str, data: bytes, name: str) -> str:
    """Write ``data`` to ``directory/name`` (made unique); returns the path, or a note on failure."""
    path = os.path.join(directory, f"{name}-{time.time_ns()}.bin")
    try:
        os.makedirs(directory, exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    except OSError as err:
        return f"nowhere ({err})"
    return path


def _first_store_timestamp(mm: mmap.mmap) -> int:
    """Store timestamp of the first record of a commit-log file, 0 if it does not start with one."""
    (magic,) = _UINT.unpack_from(mm, 4)
    if magic not in (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2):
        return 0
    (sys_flag,) = _INT.unpack_from(mm, SYS_FLAG_POS)
    (ts,) = _LONG.unpack_from(mm, store_timestamp_pos(sys_flag))
    return int(ts)
