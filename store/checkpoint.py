"""The ``checkpoint``, ``abort`` and ``lock`` files at the store root (``StoreCheckpoint``,
``DefaultMessageStore.createTempFile``, ``DefaultMessageStore.start``).

``checkpoint`` is one OS page (4096 bytes); the first 40 are five big-endian int64::

    0   physicMsgTimestamp   store time of the last message flushed to the commit log (ms)
    8   logicsMsgTimestamp   store time of the last message flushed into a consume queue
    16  indexMsgTimestamp    end timestamp of the last index file that filled up and was flushed
    24  masterFlushedOffset  HA; kept as read
    32  confirmPhyOffset     commit-log offset confirmed by recovery (end of the last whole record)

The rest of the page is zero. ``abort`` holds the PID as decimal text while a store is open;
finding it at open time means the last run did not close cleanly. ``lock`` is locked (POSIX
record lock on byte 0, what Java's ``FileChannel.tryLock(0, 1, false)`` takes) while a store is
open and contains ``lock``: our store and a Java broker exclude each other.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct

from store.errors import StoreCorruptionError, StoreLockedError
from store.mapped_file import wrap_os_error

CHECKPOINT_FILE_SIZE = 4096  # DefaultMappedFile.OS_PAGE_SIZE
_FIELDS = struct.Struct(">qqqqq")
_STARTUP_SLACK_MS = 3000  # StoreCheckpoint.getMinTimestamp subtracts 3 s


class StoreCheckpoint:
    """The checkpoint values, read at open and written (and fsynced) by :meth:`flush`."""

    __slots__ = (
        "confirm_phy_offset",
        "index_msg_timestamp",
        "logics_msg_timestamp",
        "master_flushed_offset",
        "path",
        "physic_msg_timestamp",
    )

    def __init__(self, path: str) -> None:
        self.path = path
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        self.master_flushed_offset = 0
        self.confirm_phy_offset = 0
        try:
            with open(path, "rb") as f:
                data = f.read(CHECKPOINT_FILE_SIZE)
        except FileNotFoundError:
            return
        except OSError as err:
            raise wrap_os_error(err, f"read {path}") from err
        if not data:
            return
        if len(data) < _FIELDS.size:
            raise StoreCorruptionError(f"{path}: {len(data)} bytes, a checkpoint has at least {_FIELDS.size}")
        values = _FIELDS.unpack_from(data)
        if any(v < 0 for v in values):
            raise StoreCorruptionError(f"{path}: negative checkpoint value {values}")
        (
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
            self.master_flushed_offset,
            self.confirm_phy_offset,
        ) = values

    def min_timestamp(self) -> int:
        """``getMinTimestamp``: min(physic, logics) − 3 s, at least 0."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - _STARTUP_SLACK_MS, 0)

    def min_timestamp_index(self) -> int:
        """``getMinTimestampIndex``: also bounded by the index timestamp."""
        return min(self.min_timestamp(), self.index_msg_timestamp)

    def flush(self) -> None:
        """Write the page and fsync it."""
        page = bytearray(CHECKPOINT_FILE_SIZE)
        _FIELDS.pack_into(
            page,
            0,
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
            self.master_flushed_offset,
            self.confirm_phy_offset,
        )
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, page, 0)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as err:
            raise wrap_os_error(err, f"write {self.path}") from err


class StoreLock:
    """The ``lock`` file, held while the store is open. Raises :class:`StoreLockedError` if taken."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise wrap_os_error(err, f"open {path}") from err
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError as err:
            os.close(self._fd)
            raise StoreLockedError(f"{path} is locked by another process: the store is in use") from err
        os.pwrite(self._fd, b"lock", 0)
        os.fsync(self._fd)

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, 0)
            os.close(self._fd)
            self._fd = -1


def abort_file_exists(path: str) -> bool:
    return os.path.exists(path)


def create_abort_file(path: str) -> None:
    """Write our PID into ``abort`` and fsync it (``createTempFile``)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, str(os.getpid()).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        raise wrap_os_error(err, f"write {path}") from err


def remove_abort_file(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
