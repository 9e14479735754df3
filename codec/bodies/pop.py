"""POP bodies: revive-topic records, batch acks, queue assignments and message request modes.

Mirrors ``org.apache.rocketmq.store.pop.PopCheckPoint``, ``AckMsg``, ``BatchAckMsg`` (the bodies of
the ``ck``, ``ack`` and ``bAck`` records of ``rmq_sys_REVIVE_LOG_<cluster>``),
``org.apache.rocketmq.remoting.protocol.body.BatchAck``, ``BatchAckMessageRequestBody``,
``QueryAssignmentRequestBody``, ``QueryAssignmentResponseBody``, ``SetMessageRequestModeRequestBody``
and ``MessageRequestModeSerializeWrapper``.

fastjson writes these with its default ``SortField`` feature: keys in alphabetical order, and every
getter becomes a key, so a checkpoint carries ``reviveTime`` (``getReviveTime()``, read back by
nobody). The records written here are byte-identical to a Java broker's
(``tests/codec/test_pop_codec.py`` holds vectors printed by fastjson 1.2.83 with the 5.3.3 classes),
and a Java broker reading our revive topic, or we reading its, sees the same values. Reading takes
fastjson's ``alternateNames`` (``ackOffset`` for ``ao`` …) too.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Self

from codec.bodies.base import JsonBody, jfield
from codec.bodies.lock import MessageQueue
from codec.errors import BodyError

MAX_CK_MESSAGES = 32  # PopCheckPoint.bitMap is an int: a checkpoint covers at most 32 messages


def _sorted(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(obj.items()))


def _with_alternates(obj: Any, alternates: dict[str, str]) -> Any:
    """Map fastjson's ``alternateNames`` onto the short names (a short name present wins)."""
    if not isinstance(obj, dict):
        return obj
    out = dict(obj)
    for long_name, short in alternates.items():
        if long_name in out and short not in out:
            out[short] = out[long_name]
    return out


@dataclass(slots=True)
class PopCheckPoint(JsonBody):
    """A checkpoint: which messages of one queue a pop handed out, and which are acked (``bm``)."""

    bit_map: int = jfield("bm", default=0)
    broker_name: str | None = jfield("bn")
    group: str = jfield("c", default="")
    queue_offset_diff: list[int] | None = jfield("d")
    invisible_time: int = jfield("it", default=0)
    num: int = jfield("n", default=0)
    pop_time: int = jfield("pt", default=0)
    queue_id: int = jfield("q", default=0)
    revive_offset: int = jfield("ro", default=0)
    re_put_times: str | None = jfield("rp")
    start_offset: int = jfield("so", default=0)
    topic: str = jfield("t", default="")

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    def to_obj(self) -> dict[str, Any]:
        obj = JsonBody.to_obj(self)
        obj["reviveTime"] = self.revive_time
        return _sorted(obj)

    def index_of_ack(self, ack_offset: int) -> int:
        """``indexOfAck``: the message index of a queue offset, or -1."""
        if ack_offset < self.start_offset:
            return -1
        diff = ack_offset - self.start_offset
        if not self.queue_offset_diff:
            return diff if diff < self.num else -1
        try:
            return self.queue_offset_diff.index(diff)
        except ValueError:
            return -1

    def ack_offset_by_index(self, index: int) -> int:
        """``ackOffsetByIndex``: the queue offset of message ``index``."""
        if not self.queue_offset_diff:
            return self.start_offset + index
        return self.start_offset + self.queue_offset_diff[index]

    def parse_re_put_times(self) -> int:
        """``parseRePutTimes``: 0 when absent, ``Byte.MAX_VALUE`` when not a number."""
        if self.re_put_times is None:
            return 0
        try:
            return int(self.re_put_times)
        except ValueError:
            return 127


_ACK_ALTERNATES = {
    "ackOffset": "ao",
    "startOffset": "so",
    "consumerGroup": "c",
    "topic": "t",
    "queueId": "q",
    "popTime": "pt",
    "brokerName": "bn",
    "ackOffsetList": "aol",
}


@dataclass(slots=True)
class AckMsg(JsonBody):
    """An ``ack`` record: one acknowledged offset of the checkpoint starting at ``so``."""

    ack_offset: int = jfield("ao", default=0)
    broker_name: str | None = jfield("bn")
    group: str = jfield("c", default="")
    pop_time: int = jfield("pt", default=0)
    queue_id: int = jfield("q", default=0)
    start_offset: int = jfield("so", default=0)
    topic: str = jfield("t", default="")

    @classmethod
    def from_obj(cls, obj: Any) -> Self:
        return super(AckMsg, cls).from_obj(_with_alternates(obj, _ACK_ALTERNATES))


@dataclass(slots=True)
class BatchAckMsg(JsonBody):
    """A ``bAck`` record: several acknowledged offsets (``ao`` is -1)."""

    ack_offset: int = jfield("ao", default=-1)
    ack_offset_list: list[int] = jfield("aol", factory=list)
    broker_name: str | None = jfield("bn")
    group: str = jfield("c", default="")
    pop_time: int = jfield("pt", default=0)
    queue_id: int = jfield("q", default=0)
    start_offset: int = jfield("so", default=0)
    topic: str = jfield("t", default="")

    @classmethod
    def from_obj(cls, obj: Any) -> Self:
        return super(BatchAckMsg, cls).from_obj(_with_alternates(obj, _ACK_ALTERNATES))


def bitset_to_bytes(bits: list[int]) -> bytes:
    """``java.util.BitSet.toByteArray``: little-endian, no trailing zero bytes."""
    value = 0
    for bit in bits:
        value |= 1 << bit
    return value.to_bytes((value.bit_length() + 7) // 8, "little")


def bitset_indexes(data: bytes) -> list[int]:
    """The set bits of ``BitSet.valueOf(bytes)``, ascending."""
    value = int.from_bytes(data, "little")
    return [i for i in range(value.bit_length()) if value >> i & 1]


_MAX_BITSET_BYTES = 4096  # a batch ack of 32,768 offsets; Java's BitSet is unbounded


def _read_bitset(raw: Any) -> list[int]:
    if isinstance(raw, str):
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as err:
            raise BodyError(f"BatchAck.b is not Base64: {err}") from err
    elif isinstance(raw, list) and all(isinstance(b, int) and not isinstance(b, bool) for b in raw):
        data = bytes(b & 0xFF for b in raw)
    else:
        raise BodyError("BatchAck.b is neither a Base64 string nor a byte array")
    if len(data) > _MAX_BITSET_BYTES:
        raise BodyError(f"BatchAck.b has {len(data)} bytes, at most {_MAX_BITSET_BYTES}")
    return bitset_indexes(data)


_BATCH_ACK_ALTERNATES = {
    "consumerGroup": "c",
    "topic": "t",
    "retry": "r",
    "startOffset": "so",
    "queueId": "q",
    "reviveQueueId": "rq",
    "popTime": "pt",
    "invisibleTime": "it",
    "bitSet": "b",
}


@dataclass(slots=True)
class BatchAck(JsonBody):
    """One entry of BATCH_ACK_MESSAGE; ``bits`` are the set indexes of the Java ``BitSet``."""

    bits: list[int] = jfield("b", factory=list)
    group: str = jfield("c", default="")
    invisible_time: int = jfield("it", default=0)
    pop_time: int = jfield("pt", default=0)
    queue_id: int = jfield("q", default=0)
    retry: str = jfield("r", default="0")
    revive_queue_id: int = jfield("rq", default=0)
    start_offset: int = jfield("so", default=0)
    topic: str = jfield("t", default="")

    @classmethod
    def from_obj(cls, obj: Any) -> Self:
        obj = _with_alternates(obj, _BATCH_ACK_ALTERNATES)
        bits = _read_bitset(obj.pop("b")) if isinstance(obj, dict) and obj.get("b") is not None else []
        entry = super(BatchAck, cls).from_obj(obj)
        entry.bits = bits
        return entry

    def to_obj(self) -> dict[str, Any]:
        obj = JsonBody.to_obj(self)
        obj["b"] = base64.b64encode(bitset_to_bytes(self.bits)).decode("ascii")
        return obj


@dataclass(slots=True)
class BatchAckMessageRequestBody(JsonBody):
    acks: list[BatchAck] = jfield(factory=list)
    broker_name: str | None = None


@dataclass(slots=True)
class QueryAssignmentRequestBody(JsonBody):
    client_id: str = ""
    consumer_group: str = ""
    message_model: str | None = None  # CLUSTERING / BROADCASTING
    strategy_name: str | None = None
    topic: str = ""


@dataclass(slots=True)
class MessageQueueAssignment(JsonBody):
    attachments: dict[str, str] | None = None
    message_queue: MessageQueue | None = None
    mode: str = "PULL"

    def to_obj(self) -> dict[str, Any]:
        obj = JsonBody.to_obj(self)
        if self.message_queue is not None:
            obj["messageQueue"] = _sorted(self.message_queue.to_obj())
        return obj


@dataclass(slots=True)
class QueryAssignmentResponseBody(JsonBody):
    """``messageQueueAssignments`` absent means Java's ``null`` (no assignment known)."""

    message_queue_assignments: list[MessageQueueAssignment] | None = None


@dataclass(slots=True)
class SetMessageRequestModeRequestBody(JsonBody):
    consumer_group: str = ""
    mode: str = "PULL"  # MessageRequestMode.PULL / POP
    pop_share_queue_num: int = 0
    topic: str = ""


@dataclass(slots=True)
class MessageRequestModeSerializeWrapper(JsonBody):
    """``config/messageRequestMode.json`` and the body of GET_ALL_MESSAGE_REQUEST_MODE."""

    message_request_mode_map: dict[str, dict[str, SetMessageRequestModeRequestBody]] = jfield(factory=dict)
