"""Result types of the store facade, named as in Java's store (``PutMessageResult``,
``AppendMessageResult``, ``GetMessageResult``, ``QueryMessageResult``) with status enums whose
member names are Java's constant names, so a grep finds both sides.
"""

from __future__ import annotations

import enum
from typing import NamedTuple


class PutMessageStatus(enum.Enum):
    """``org.apache.rocketmq.store.PutMessageStatus``."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPPED_FILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGE_CACHE_BUSY = "OS_PAGE_CACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class AppendMessageStatus(enum.Enum):
    """``org.apache.rocketmq.store.AppendMessageStatus``."""

    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetMessageStatus(enum.Enum):
    """``org.apache.rocketmq.store.GetMessageStatus``."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"
    OFFSET_RESET = "OFFSET_RESET"


class CqUnit(NamedTuple):
    """One consume-queue unit as the store's readers see it (``org.apache.rocketmq.store.CqUnit``)."""

    queue_offset: int
    phy_offset: int  # commit-log offset of the record
    size: int  # TOTALSIZE of the record
    tags_code: int  # hash of TAGS; the delivery time in SCHEDULE_TOPIC_XXXX


class AppendMessageResult:
    """Where a put went. For a batch, offsets are those of the first record and ``msg_num`` > 1."""

    __slots__ = ("logics_offset", "msg_num", "store_timestamp", "wrote_bytes", "wrote_offset")

    def __init__(
        self, wrote_offset: int, wrote_bytes: int, logics_offset: int, store_timestamp: int, msg_num: int
    ) -> None:
        self.wrote_offset = wrote_offset  # commit-log offset of the (first) record
        self.wrote_bytes = wrote_bytes
        self.logics_offset = logics_offset  # queue offset of the (first) record
        self.store_timestamp = store_timestamp
        self.msg_num = msg_num

    @property
    def end_offset(self) -> int:
        """Commit-log offset just past the last byte written: what :meth:`MessageStore.flush_up_to` takes."""
        return self.wrote_offset + self.wrote_bytes

    def __repr__(self) -> str:
        return (
            f"AppendMessageResult(wrote_offset={self.wrote_offset}, wrote_bytes={self.wrote_bytes}, "
            f"logics_offset={self.logics_offset}, msg_num={self.msg_num})"
        )


class PutMessageResult:
    __slots__ = ("append_result", "remark", "status")

    def __init__(
        self, status: PutMessageStatus, append_result: AppendMessageResult | None = None, remark: str = ""
    ) -> None:
        self.status = status
        self.append_result = append_result
        self.remark = remark

    @property
    def ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK

    def __repr__(self) -> str:
        return f"PutMessageResult({self.status.name}, {self.append_result!r}, {self.remark!r})"


class GetMessageResult:
    """Records selected by a get: raw bytes, ready to be concatenated into a PULL body."""

    __slots__ = (
        "buffers",
        "max_offset",
        "min_offset",
        "next_begin_offset",
        "queue_offsets",
        "status",
        "suggest_pulling_from_slave",
    )

    def __init__(
        self, status: GetMessageStatus, next_begin_offset: int, min_offset: int, max_offset: int
    ) -> None:
        self.status = status
        self.next_begin_offset = next_begin_offset
        self.min_offset = min_offset
        self.max_offset = max_offset
        self.buffers: list[bytes] = []
        self.queue_offsets: list[int] = []
        self.suggest_pulling_from_slave = False

    @property
    def message_count(self) -> int:
        return len(self.buffers)

    @property
    def buffer_total_size(self) -> int:
        return sum(len(b) for b in self.buffers)

    def body(self) -> bytes:
        """The records back to back (the PULL response body)."""
        return b"".join(self.buffers)

    def __repr__(self) -> str:
        return (
            f"GetMessageResult({self.status.name}, next={self.next_begin_offset}, min={self.min_offset}, "
            f"max={self.max_offset}, messages={self.message_count})"
        )


class QueryMessageResult:
    """Records found by key (``QueryMessageResult``), newest first."""

    __slots__ = ("buffers", "index_last_update_phyoffset", "index_last_update_timestamp", "offsets")

    def __init__(self, index_last_update_timestamp: int, index_last_update_phyoffset: int) -> None:
        self.index_last_update_timestamp = index_last_update_timestamp
        self.index_last_update_phyoffset = index_last_update_phyoffset
        self.buffers: list[bytes] = []
        self.offsets: list[int] = []

    def body(self) -> bytes:
        return b"".join(self.buffers)
