"""Headers of PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361), and the pull sysflag bits.

Mirrors ``PullMessageRequestHeader``, ``PullMessageResponseHeader`` and ``PullSysFlag``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntFlag

from codec.headers.base import CustomHeader, wire


class PullSysFlag(IntFlag):
    """``org.apache.rocketmq.common.sysflag.PullSysFlag``."""

    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8
    LITE_PULL_MESSAGE = 0x10


@dataclass(slots=True)
class PullMessageRequestHeader(CustomHeader):
    consumer_group: str = wire("consumerGroup")
    topic: str = wire("topic")
    queue_id: int = wire("queueId", int32=True)
    queue_offset: int = wire("queueOffset")
    max_msg_nums: int = wire("maxMsgNums", int32=True)
    sys_flag: int = wire("sysFlag", int32=True)
    commit_offset: int = wire("commitOffset")
    suspend_timeout_millis: int = wire("suspendTimeoutMillis")
    subscription: str | None = wire("subscription", required=False)
    sub_version: int = wire("subVersion")
    expression_type: str | None = wire("expressionType", required=False)
    max_msg_bytes: int | None = wire("maxMsgBytes", required=False, int32=True)
    request_source: int | None = wire("requestSource", required=False, int32=True)
    proxy_forward_client_id: str | None = wire("proxyFrowardClientId", required=False)  # sic
    broker_name: str | None = wire("bname", required=False)


@dataclass(slots=True)
class PullMessageResponseHeader(CustomHeader):
    """The four required fields are unboxed by every client for codes 0, 19, 20 and 21."""

    suggest_which_broker_id: int = wire("suggestWhichBrokerId")
    next_begin_offset: int = wire("nextBeginOffset")
    min_offset: int = wire("minOffset")
    max_offset: int = wire("maxOffset")
    offset_delta: int | None = wire("offsetDelta", required=False)
    topic_sys_flag: int | None = wire("topicSysFlag", required=False, int32=True)
    group_sys_flag: int | None = wire("groupSysFlag", required=False, int32=True)
    forbidden_type: int | None = wire("forbiddenType", required=False, int32=True)
