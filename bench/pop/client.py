"""The raw-frame consumer both servers are driven with: :class:`compat_tests.pop_raw.RawSession`
(JSON headers, one request in flight), so the client's cost is the same Python on both sides.

Records are parsed with :func:`codec.message.iter_records`, which is cheaper than the compat
suite's full record view and leaves more of the machine's two cores to the server measured.
"""

from __future__ import annotations

from codec.codes import RequestCode, ResponseCode
from codec.message import iter_records
from codec.properties import decode_properties
from compat_tests.pop_raw import RawSession, ack, pop, send

FLAG_COMMIT_OFFSET = 1  # PullSysFlag
FLAG_SUBSCRIPTION = 4
EMPTY_CODES = {ResponseCode.PULL_NOT_FOUND, ResponseCode.POLLING_TIMEOUT}


def fill(session: RawSession, topic: str, count: int, size: int, queues: int) -> None:
    """``count`` messages of ``size`` bytes, round-robin over ``queues`` queues."""
    pad = b"x" * size
    for i in range(count):
        body = (f"{i:08d}".encode() + pad)[:size]
        answer = send(session, topic, body, i % queues)
        if answer["code"] != ResponseCode.SUCCESS:
            raise RuntimeError(f"send {i}: {answer['code']} {answer['remark']}")


def pop_batch(
    session: RawSession, topic: str, group: str, queue_id: int, invisible_ms: int, batch: int
) -> tuple[int, list[tuple[int, int, str, bytes]]]:
    """One POP; its code and (queue id, queue offset, receipt handle, body) of each record."""
    answer = pop(session, topic, group, queue_id, invisible_ms, maxMsgNums=str(batch))
    if answer["code"] != ResponseCode.SUCCESS:
        return answer["code"], []
    head = answer["ext_fields"] or {}
    starts = {}
    for entry in (head.get("startOffsetInfo") or "").split(";"):
        if entry:
            flag, queue, start = entry.split(" ")
            starts[(flag, int(queue))] = start
    out = []
    for record in iter_records(answer["body"]):
        handle = decode_properties(record.properties).get("POP_CK") or " ".join(
            [
                starts[("0", record.queue_id)],
                head["popTime"],
                head["invisibleTime"],
                head["reviveQid"],
                "0",
                "broker-a",
                str(record.queue_id),
                str(record.queue_offset),
            ]
        )
        out.append((record.queue_id, record.queue_offset, handle, record.body))
    return answer["code"], out


def ack_one(session: RawSession, topic: str, group: str, queue_id: int, offset: int, handle: str) -> None:
    answer = ack(session, topic, group, queue_id, offset, handle)
    if answer["code"] != ResponseCode.SUCCESS:
        raise RuntimeError(f"ack {queue_id}/{offset}: {answer['code']} {answer['remark']}")


def pull_batch(
    session: RawSession, topic: str, group: str, queue_id: int, offset: int, commit: int, batch: int
) -> tuple[int, int, int]:
    """One PULL that also commits ``commit`` (the push consumer's way); code, records, next offset."""
    ext = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": str(queue_id),
        "queueOffset": str(offset),
        "maxMsgNums": str(batch),
        "sysFlag": str(FLAG_COMMIT_OFFSET | FLAG_SUBSCRIPTION),
        "commitOffset": str(commit),
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
        "expressionType": "TAG",
    }
    answer = session.call(RequestCode.PULL_MESSAGE, ext)
    head = answer["ext_fields"] or {}
    next_offset = int(head.get("nextBeginOffset", offset))
    if answer["code"] != ResponseCode.SUCCESS:
        return answer["code"], 0, next_offset
    return answer["code"], sum(1 for _ in iter_records(answer["body"])), next_offset
