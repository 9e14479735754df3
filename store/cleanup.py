"""Expiry and cleanup (``DefaultMessageStore.CleanCommitLogService`` / ``CleanConsumeQueueService``).

A commit-log file is *expired* when its last modification is older than ``fileReservedTime``
hours. Expired files are deleted, oldest first, at most ``deleteFileBatchMax`` per round and
never the last file, when one of these holds:

* the local hour is in ``deleteWhen`` (``"04"`` by default);
* disk use of the commit-log partition is above ``diskMaxUsedSpaceRatio`` (75 %);
* a manual deletion was requested.

Above ``diskSpaceCleanForciblyRatio`` (85 %, with ``cleanFileForciblyEnable``) files are deleted
even when not expired. Above ``diskSpaceWarningLevelRatio`` (90 %) the store refuses puts
(``SERVICE_NOT_AVAILABLE``) until use drops again. Deletion stops at the first file that may not
go. After commit-log files go, consume-queue files whose units all point below the new commit-log
minimum are deleted and every queue's min offset moves to its first unit still backed by the log;
index files whose entries all point below it follow.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from store.message_store import MessageStore


class CleanService:
    def __init__(self, store: MessageStore) -> None:
        self.store = store
        self.next_run = 0
        self.last_disk_ratio = -1.0

    def tick(self, now_ms: int) -> None:
        if now_ms >= self.next_run:
            self.next_run = now_ms + self.store.config.clean_resource_interval
            self.run(now_ms)

    def run(self, now_ms: int, manual: bool = False) -> int:
        store = self.store
        config = store.config
        ratio = store.disk_usage(config.commit_log_dir)
        self.last_disk_ratio = ratio
        store.writable = not ratio > config.disk_space_warning_level_ratio
        is_time = time.localtime(now_ms / 1000).tm_hour in config.delete_hours()
        space_full = ratio > config.disk_max_used_space_ratio
        forcibly = config.clean_file_forcibly_enable and ratio > config.disk_space_clean_forcibly_ratio
        if not (is_time or space_full or forcibly or manual):
            return 0
        reserved_ms = config.file_reserved_time * 3600 * 1000
        queue = store.commit_log.queue
        count = 0
        for mf in queue.files[:-1]:
            if count >= config.delete_file_batch_max:
                break
            expired = now_ms - int(mf.last_modified() * 1000) >= reserved_ms
            if not (expired or forcibly):
                break
            count += 1
        if count:
            queue.delete_first(count)
            self.clean_queues()
        return count

    def clean_queues(self) -> None:
        """Make consume queues and index follow the commit log's min offset."""
        store = self.store
        min_phy = store.commit_log.min_offset
        store.queues.delete_expired(min_phy)
        store.index.delete_expired(min_phy)
