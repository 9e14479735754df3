"""POP receipt handles (``extraInfo``), the offset-info strings of a POP response, retry topic names.

Mirrors ``org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil`` and the POP half of
``org.apache.rocketmq.common.KeyBuilder``.

An ``extraInfo`` is space-separated, fixed positions (``ExtraInfoUtil.split`` is Java's
``String.split(" ")``, which drops trailing empty parts)::

    ckQueueOffset popTime invisibleTime reviveQid retryFlag brokerName queueId [queueOffset]

``retryFlag`` is ``0`` for the normal topic, ``1`` for the POP retry topic ``%RETRY%group_topic``
and ``2`` for its V2 name ``%RETRY%group+topic``. ``reviveQid`` 999 marks an orderly pop.

The response strings join one entry per queue with ``;``, each entry three space-separated parts:
``startOffsetInfo`` ``flag queueId startOffset``, ``msgOffsetInfo`` ``flag queueId o1,o2,…``,
``orderCountInfo`` ``flag queueId count`` or ``flag qo<queueId>%<offset> count``. Parsing keys them
``flag@queueId`` as the Java client does.

Everything here comes from the wire or from a client: malformed text raises
:class:`codec.errors.CodecError` (the broker answers ``SYSTEM_ERROR``, as the Java broker does when
``ExtraInfoUtil`` throws), never another exception.
"""

from __future__ import annotations

from typing import NamedTuple

from codec.errors import CodecError

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"  # MixAll.RETRY_GROUP_TOPIC_PREFIX
POP_ORDER_REVIVE_QUEUE = 999  # KeyBuilder.POP_ORDER_REVIVE_QUEUE
NORMAL_TOPIC_FLAG = "0"
RETRY_TOPIC_FLAG = "1"
RETRY_TOPIC_V2_FLAG = "2"
_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR
_QUEUE_OFFSET = "qo"
_MAX_DIGITS = 20
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


# --- KeyBuilder ------------------------------------------------------------------------------


def build_pop_retry_topic(topic: str, group: str, v2: bool = False) -> str:
    """``KeyBuilder.buildPopRetryTopic``: V1 ``%RETRY%group_topic``, V2 ``%RETRY%group+topic``."""
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}{'+' if v2 else '_'}{topic}"


def is_pop_retry_topic_v2(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and "+" in topic


def parse_normal_topic(topic: str, group: str) -> str:
    """``KeyBuilder.parseNormalTopic(topic, cid)``: the topic a POP retry topic stands for."""
    if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return topic
    v2_prefix = f"{RETRY_GROUP_TOPIC_PREFIX}{group}+"
    if topic.startswith(v2_prefix):
        return topic[len(v2_prefix) :]
    return topic[len(RETRY_GROUP_TOPIC_PREFIX) + len(group) + 1 :]


def retry_flag(topic: str) -> str:
    """``ExtraInfoUtil.getRetry(topic)``: the flag of the topic a message was read from."""
    if is_pop_retry_topic_v2(topic):
        return RETRY_TOPIC_V2_FLAG
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_TOPIC_FLAG
    return NORMAL_TOPIC_FLAG


def real_topic(topic: str, group: str, flag: str) -> str:
    """``ExtraInfoUtil.getRealTopic(topic, cid, retry)``; an unknown flag raises CodecError."""
    if flag == NORMAL_TOPIC_FLAG:
        return topic
    if flag == RETRY_TOPIC_FLAG:
        return build_pop_retry_topic(topic, group)
    if flag == RETRY_TOPIC_V2_FLAG:
        return build_pop_retry_topic(topic, group, v2=True)
    raise CodecError("getRetry fail, format is wrong")


def polling_key(topic: str, group: str, queue_id: int) -> str:
    """``KeyBuilder.buildPollingKey`` (also the queue lock key): ``topic@group@queueId``."""
    return f"{topic}@{group}@{queue_id}"


# --- extraInfo -------------------------------------------------------------------------------


def _java_split(text: str) -> list[str]:
    parts = text.split(_SEPARATOR)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def _parse_number(text: str, bounds: tuple[int, int], what: str) -> int:
    digits = text[1:] if text[:1] in ("-", "+") else text
    if not digits or not digits.isascii() or not digits.isdigit() or len(text) > _MAX_DIGITS:
        raise CodecError(f"{what} is not a number: {text!r}")
    value = int(text)
    if not bounds[0] <= value <= bounds[1]:
        raise CodecError(f"{what} is out of range: {text!r}")
    return value


class ExtraInfo(NamedTuple):
    """A parsed ``extraInfo``; ``queue_id``/``queue_offset`` are None in the short forms."""

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry_flag: str
    broker_name: str
    queue_id: int | None
    queue_offset: int | None

    def is_order(self) -> bool:
        return self.revive_qid == POP_ORDER_REVIVE_QUEUE

    def real_topic(self, topic: str, group: str) -> str:
        return real_topic(topic, group, self.retry_flag)


def parse_extra_info(text: str) -> ExtraInfo:
    """Parse an ``extraInfo``; at least the six fields every ack needs, each number in Java's range.

    Raises CodecError (what ``ExtraInfoUtil``'s ``IllegalArgumentException`` is on the Java side).
    """
    parts = _java_split(text)
    if len(parts) < 6:
        raise CodecError(f"extraInfo has {len(parts)} fields, at least 6 needed")
    queue_id = _parse_number(parts[6], _INT32, "extraInfo queueId") if len(parts) > 6 else None
    queue_offset = _parse_number(parts[7], _INT64, "extraInfo queueOffset") if len(parts) > 7 else None
    return ExtraInfo(
        _parse_number(parts[0], _INT64, "extraInfo ckQueueOffset"),
        _parse_number(parts[1], _INT64, "extraInfo popTime"),
        _parse_number(parts[2], _INT64, "extraInfo invisibleTime"),
        _parse_number(parts[3], _INT32, "extraInfo reviveQid"),
        parts[4],
        parts[5],
        queue_id,
        queue_offset,
    )


def build_extra_info(
    ck_queue_offset: int,
    pop_time: int,
    invisible_time: int,
    revive_qid: int,
    topic: str,
    broker_name: str,
    queue_id: int,
    queue_offset: int | None = None,
) -> str:
    """``ExtraInfoUtil.buildExtraInfo``; ``topic`` is the topic read (its retry flag is written)."""
    fields = [ck_queue_offset, pop_time, invisible_time, revive_qid, retry_flag(topic), broker_name, queue_id]
    if queue_offset is not None:
        fields.append(queue_offset)
    return _SEPARATOR.join(str(field) for field in fields)


# --- response offset-info strings ------------------------------------------------------------


def start_offset_entry(topic: str, queue_id: int, start_offset: int) -> str:
    """One ``startOffsetInfo`` entry (``ExtraInfoUtil.buildStartOffsetInfo``)."""
    return f"{retry_flag(topic)} {queue_id} {start_offset}"


def msg_offset_entry(topic: str, queue_id: int, offsets: list[int]) -> str:
    """One ``msgOffsetInfo`` entry (``ExtraInfoUtil.buildMsgOffsetInfo``)."""
    return f"{retry_flag(topic)} {queue_id} {','.join(str(o) for o in offsets)}"


def queue_order_count_entry(topic: str, queue_id: int, count: int) -> str:
    """The queue-level ``orderCountInfo`` entry (``buildQueueIdOrderCountInfo``)."""
    return f"{retry_flag(topic)} {queue_id} {count}"


def offset_order_count_entry(topic: str, queue_id: int, offset: int, count: int) -> str:
    """A per-offset ``orderCountInfo`` entry (``buildQueueOffsetOrderCountInfo``)."""
    return f"{retry_flag(topic)} {_QUEUE_OFFSET}{queue_id}%{offset} {count}"


def join_entries(entries: list[str]) -> str:
    return ";".join(entries)


def _parse_entries(text: str, what: str) -> list[tuple[str, str]]:
    out: dict[str, str] = {}
    for one in text.split(";"):
        parts = _java_split(one)
        if len(parts) != 3:
            raise CodecError(f"parse {what} error, {text!r}")
        key = f"{parts[0]}@{parts[1]}"
        if key in out:
            raise CodecError(f"parse {what} error, duplicate, {text!r}")
        out[key] = parts[2]
    return list(out.items())


def parse_start_offset_info(text: str | None) -> dict[str, int] | None:
    """``ExtraInfoUtil.parseStartOffsetInfo``: ``flag@queueId`` → start offset."""
    if not text:
        return None
    return {k: _parse_number(v, _INT64, "startOffset") for k, v in _parse_entries(text, "startOffsetInfo")}


def parse_msg_offset_info(text: str | None) -> dict[str, list[int]] | None:
    """``ExtraInfoUtil.parseMsgOffsetInfo``: ``flag@queueId`` → message offsets."""
    if not text:
        return None
    return {
        k: [_parse_number(o, _INT64, "msgOffset") for o in v.split(",")]
        for k, v in _parse_entries(text, "msgOffsetMap")
    }


def parse_order_count_info(text: str | None) -> dict[str, int] | None:
    """``ExtraInfoUtil.parseOrderCountInfo``: ``flag@queueId`` or ``flag@qo<q>%<offset>`` → count."""
    if not text:
        return None
    return {k: _parse_number(v, _INT32, "orderCount") for k, v in _parse_entries(text, "orderCountInfo")}
