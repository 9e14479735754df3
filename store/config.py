"""Store configuration: ``StoreConfig``, mirroring ``org.apache.rocketmq.store.config.MessageStoreConfig``.

Field names are the Java keys in snake_case (``mappedFileSizeCommitLog`` is
``mapped_file_size_commit_log``), with the Java defaults; :meth:`StoreConfig.from_properties`
takes a ``broker.conf`` mapping with the Java (camelCase) keys and returns the config plus the keys
it did not know. Units are in the comments: sizes in bytes, intervals in ms, ratios in percent,
``file_reserved_time`` in hours, ``delete_when`` a ``;``-separated list of hours of the day.

Directory layout under ``store_path_root_dir`` (``StorePathConfigHelper``)::

    commitlog/            (or store_path_commit_log when set)
    consumequeue/TOPIC/QUEUEID/
    index/
    config/               topics.json, consumerOffset.json, subscriptionGroup.json, delayOffset.json
    checkpoint  abort  lock
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from codec.config_fields import apply_properties
from store.errors import StoreConfigError

CQ_STORE_UNIT_SIZE = 20  # ConsumeQueue.CQ_STORE_UNIT_SIZE: offset int64 + size int32 + tags int64
ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"
ASYNC_MASTER = "ASYNC_MASTER"  # BrokerRole: acknowledges a put without waiting for a slave
SYNC_MASTER = "SYNC_MASTER"  # waits for inSyncReplicas copies (itself included) within slaveTimeout
SLAVE = "SLAVE"  # takes no puts; copies the master's commit log over the HA connection
BROKER_ROLES = (ASYNC_MASTER, SYNC_MASTER, SLAVE)
MIN_COMMIT_LOG_FILE_SIZE = 4096  # ours: a file must hold at least one small record plus a blank marker
#: MessageStoreConfig's file sizes are Java ints (MappedFile.fileSize): 2 GiB - 1 at most.
MAX_MAPPED_FILE_SIZE = 2**31 - 1


@dataclasses.dataclass
class StoreConfig:
    """``MessageStoreConfig`` subset that this store implements (Java defaults)."""

    store_path_root_dir: str = os.path.join(os.path.expanduser("~"), "store")
    store_path_commit_log: str = ""  # empty: <root>/commitlog
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024  # bytes per commit-log file
    mapped_file_size_consume_queue: int = 300_000 * CQ_STORE_UNIT_SIZE  # bytes per consume-queue file
    max_hash_slot_num: int = 5_000_000  # index hash slots per file
    max_index_num: int = 5_000_000 * 4  # index entries per file
    message_index_enable: bool = True
    message_index_safe: bool = False
    max_msgs_num_batch: int = 64  # cap of one index query
    default_query_max_num: int = 32  # used for unique-key queries (QueryMessageProcessor)
    flush_disk_type: str = ASYNC_FLUSH  # ASYNC_FLUSH or SYNC_FLUSH
    flush_interval_commit_log: int = 500  # ms between async flushes
    flush_commit_log_least_pages: int = 4  # 4 KiB pages that make an async flush worth it
    flush_commit_log_thorough_interval: int = 10_000  # ms after which any dirty data is flushed
    flush_interval_consume_queue: int = 1000  # ms
    flush_consume_queue_least_pages: int = 2
    flush_consume_queue_thorough_interval: int = 60_000  # ms
    sync_flush_timeout: int = 5000  # ms a SYNC_FLUSH put may wait for its fsync
    max_message_size: int = 1024 * 1024 * 4  # bytes of body
    check_crc_on_recover: bool = True
    file_reserved_time: int = 72  # hours a commit-log file is kept after its last write
    delete_when: str = "04"  # hours of day at which expired files are deleted
    disk_max_used_space_ratio: int = 75  # % disk use above which expired files go at once
    disk_space_clean_forcibly_ratio: int = 85  # % above which even unexpired files go
    disk_space_warning_level_ratio: int = 90  # % above which puts are refused
    clean_file_forcibly_enable: bool = True
    delete_file_batch_max: int = 10  # files deleted per cleanup tick
    clean_resource_interval: int = 10_000  # ms between cleanup checks
    max_transfer_bytes_on_message_in_memory: int = 1024 * 256
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 1024 * 64
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40  # % of RAM behind the head that counts as "in memory"
    max_filter_message_size: int = 16_000  # bytes of CQ units one get may scan
    travel_cq_file_num_when_get_message: int = 1
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    broker_role: str = ASYNC_MASTER  # ASYNC_MASTER, SYNC_MASTER or SLAVE
    ha_master_address: str = ""  # a slave's master HA address host:port; empty: learnt on registration
    ha_send_heartbeat_interval: int = 5000  # ms: slave offset reports and master heartbeats when idle
    ha_housekeeping_interval: int = 20_000  # ms without a read after which an HA connection is closed
    ha_transfer_batch_size: int = 32 * 1024  # bytes of commit log per transfer
    ha_max_gap_not_in_sync: int = 256 * 1024 * 1024  # bytes behind the master a slave may be and be in sync
    slave_timeout: int = 3000  # ms a SYNC_MASTER put waits for its slave acks (FLUSH_SLAVE_TIMEOUT)
    in_sync_replicas: int = 1  # copies a SYNC_MASTER put needs, the master's included
    preallocate: bool = True  # ours: reserve disk blocks (posix_fallocate) so a full disk fails cleanly
    enable_lmq_quota: bool = False  # a message for a new LMQ queue past the limit below is refused
    max_lmq_consume_queue_num: int = 20000  # LMQ queues (lite topics among them) the store may hold

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> tuple[StoreConfig, dict[str, str]]:
        """A config from ``broker.conf`` keys; returns it and the keys it does not know.

        Raises :class:`StoreConfigError` for a malformed or out-of-range value.
        """
        config = cls()
        try:
            unknown = apply_properties(config, props)
        except ValueError as err:
            raise StoreConfigError(str(err)) from err
        config.validate()
        return config, unknown

    def validate(self) -> None:
        """Check ranges and round the consume-queue file size to whole units, as Java does."""
        if self.flush_disk_type not in (ASYNC_FLUSH, SYNC_FLUSH):
            raise StoreConfigError(
                f"flushDiskType must be ASYNC_FLUSH or SYNC_FLUSH, not {self.flush_disk_type!r}"
            )
        if self.broker_role not in BROKER_ROLES:
            roles = ", ".join(BROKER_ROLES)
            raise StoreConfigError(f"brokerRole must be one of {roles}, not {self.broker_role!r}")
        if self.ha_transfer_batch_size <= 0:
            raise StoreConfigError("haTransferBatchSize must be positive")
        if self.mapped_file_size_commit_log < MIN_COMMIT_LOG_FILE_SIZE:
            raise StoreConfigError(f"mappedFileSizeCommitLog {self.mapped_file_size_commit_log} is too small")
        if self.mapped_file_size_commit_log > MAX_MAPPED_FILE_SIZE:
            raise StoreConfigError(
                f"mappedFileSizeCommitLog {self.mapped_file_size_commit_log} is larger than a Java int "
                f"({MAX_MAPPED_FILE_SIZE} bytes, MappedFile.fileSize)"
            )
        if self.mapped_file_size_consume_queue > MAX_MAPPED_FILE_SIZE:
            raise StoreConfigError(
                f"mappedFileSizeConsumeQueue {self.mapped_file_size_consume_queue} is larger than a Java int"
            )
        units = -(-self.mapped_file_size_consume_queue // CQ_STORE_UNIT_SIZE)
        if units <= 0:
            raise StoreConfigError("mappedFileSizeConsumeQueue must be positive")
        self.mapped_file_size_consume_queue = units * CQ_STORE_UNIT_SIZE
        if self.max_hash_slot_num <= 0 or self.max_index_num <= 1:
            raise StoreConfigError("maxHashSlotNum and maxIndexNum must be positive")
        if self.max_message_size <= 0:
            raise StoreConfigError("maxMessageSize must be positive")
        self.delete_hours()  # raises on a malformed deleteWhen
        self.delay_levels_ms()

    # -- derived paths (StorePathConfigHelper) -------------------------------------------------

    @property
    def commit_log_dir(self) -> str:
        return self.store_path_commit_log or os.path.join(self.store_path_root_dir, "commitlog")

    @property
    def consume_queue_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def index_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "index")

    @property
    def config_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "config")

    @property
    def checkpoint_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "checkpoint")

    @property
    def abort_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "abort")

    @property
    def lock_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "lock")

    @property
    def sync_flush(self) -> bool:
        return self.flush_disk_type == SYNC_FLUSH

    @property
    def is_slave(self) -> bool:
        return self.broker_role == SLAVE

    def delete_hours(self) -> frozenset[int]:
        """The hours of ``delete_when`` (``"04"``, ``"04;16"``)."""
        try:
            hours = frozenset(int(h) for h in self.delete_when.split(";") if h.strip())
        except ValueError as err:
            raise StoreConfigError(f"deleteWhen {self.delete_when!r} is not a ';' list of hours") from err
        if any(not 0 <= h < 24 for h in hours):
            raise StoreConfigError(f"deleteWhen {self.delete_when!r} has an hour outside 0..23")
        return hours

    def delay_levels_ms(self) -> tuple[int, ...]:
        """``messageDelayLevel`` in ms; level n is element n−1 (``parseDelayLevel``)."""
        units = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
        levels = []
        for item in self.message_delay_level.split():
            unit = units.get(item[-1:])
            if unit is None or not item[:-1].isdigit():
                raise StoreConfigError(f"messageDelayLevel entry {item!r} is not N followed by s, m, h or d")
            levels.append(int(item[:-1]) * unit)
        return tuple(levels)
