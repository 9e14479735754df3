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

import logging
import os
import shutil
import time
from collections.abc import Callable

from store.commit_log import CommitLog
from store.config import StoreConfig
from store.consume_queue_store import ConsumeQueueStore
from store.index_service import IndexService

logger = logging.getLogger(__name__)


def disk_usage_percent(path: str) -> float:
    """Used space of the file system holding ``path`` in percent, as Java's
    ``UtilAll.getDiskPartitionSpaceUsedPercent``: used / (used + usable), where used is total minus
    free and usable leaves out the blocks reserved for root; -1 when it cannot be read."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    return 100.0 * used / entire if entire > 0 else -1.0


class CleanService:
    """Deletes expired files and watches disk use; :attr:`disk_ok` is false above the warning ratio."""

    def __init__(
        self,
        config: StoreConfig,
        commit_log: CommitLog,
        queues: ConsumeQueueStore,
        index: IndexService,
        disk_usage: Callable[[str], float] = disk_usage_percent,
    ) -> None:
        self.config = config
        self.commit_log = commit_log
        self.queues = queues
        self.index = index
        self.disk_usage = disk_usage
        self.next_run = 0
        self.last_disk_ratio = -1.0
        self.disk_ok = True  # False while disk use is above diskSpaceWarningLevelRatio

    def tick(self, now_ms: int) -> None:
        if now_ms >= self.next_run:
            self.next_run = now_ms + self.config.clean_resource_interval
            self.run(now_ms)

    def check_disk(self) -> float:
        """Measure disk use now; puts are refused above ``diskSpaceWarningLevelRatio``. Logs when
        that changes. Returns the used percentage (-1 when it cannot be read)."""
        config = self.config
        ratio = self.disk_usage(config.commit_log_dir)
        self.last_disk_ratio = ratio
        ok = not ratio > config.disk_space_warning_level_ratio
        if ok != self.disk_ok:
            if ok:
                logger.info("disk use back to %s: the store takes writes again", self.disk_report())
            else:
                logger.error(
                    "disk full: %s, above diskSpaceWarningLevelRatio %d%%; the store refuses writes",
                    self.disk_report(),
                    config.disk_space_warning_level_ratio,
                )
        self.disk_ok = ok
        return ratio

    def disk_report(self) -> str:
        """``93.1% used, 12.0 MiB free`` for the commit log's file system."""
        try:
            usage = shutil.disk_usage(self.config.commit_log_dir)
        except OSError as err:
            return f"unreadable ({err.strerror})"
        used = 100.0 * (usage.total - usage.free) / usage.total if usage.total else 0.0
        return f"{used:.1f}% used, {usage.free / 2**20:.1f} MiB free"

    def run(self, now_ms: int, manual: bool = False) -> int:
        """One cleanup round; returns the number of commit-log files deleted."""
        config = self.config
        ratio = self.check_disk()
        is_time = time.localtime(now_ms / 1000).tm_hour in config.delete_hours()
        space_full = ratio > config.disk_max_used_space_ratio
        forcibly = config.clean_file_forcibly_enable and ratio > config.disk_space_clean_forcibly_ratio
        if not (is_time or space_full or forcibly or manual):
            return 0
        reserved_ms = config.file_reserved_time * 3600 * 1000
        queue = self.commit_log.queue
        count = 0
        for mf in queue.files[:-1]:
            if count >= config.delete_file_batch_max:
                break
            expired = now_ms - int(mf.last_modified() * 1000) >= reserved_ms
            if not (expired or forcibly):
                break
            count += 1
        if count:
            doomed = queue.files[:count]
            end = doomed[-1].file_end_offset
            messages = self.queues.units_below(end)
            reason = "forcibly, disk above diskSpaceCleanForciblyRatio" if forcibly else "expired"
            logger.warning(
                "deleting %d commit-log file(s) %s..%s (%d MiB, %d message(s)): %s; disk %s",
                count,
                os.path.basename(doomed[0].path),
                os.path.basename(doomed[-1].path),
                count * self.commit_log.file_size // 2**20,
                messages,
                reason,
                self.disk_report(),
            )
            queue.delete_first(count)
            self.clean_queues()
        return count

    def clean_queues(self) -> None:
        """Make consume queues and index follow the commit log's min offset."""
        min_phy = self.commit_log.min_offset
        self.queues.delete_expired(min_phy)
        self.index.delete_expired(min_phy)
