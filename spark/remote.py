"""A blocking remoting client for the network mode of the Spark readers: the few read-only calls a
reader makes to a NameServer and to brokers, over a plain ``socket`` with our codec.

Mirrors the parts of ``org.apache.rocketmq.client.impl.MQClientAPIImpl`` a pull consumer uses:
``getTopicRouteInfoFromNameServer`` (GET_ROUTEINFO_BY_TOPIC), ``getMinOffset`` /
``getMaxOffset`` / ``searchOffset`` (GET_MIN_OFFSET, GET_MAX_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP),
``queryConsumerOffset`` (QUERY_CONSUMER_OFFSET) and ``pullMessage`` (PULL_MESSAGE). Nothing here
writes: a pull never commits an offset (no COMMIT_OFFSET bit) and carries its subscription
(SUBSCRIPTION bit), so the broker needs no heartbeat of the reader's group
(``PullMessageProcessor`` builds the subscription from the request and only looks the consumer up
when the bit is absent).

Any failure to reach or understand a server raises :class:`RemoteError`, one line naming the
address, meant for the user.
"""

from __future__ import annotations

import itertools
import socket
import time
from dataclasses import dataclass

from codec.bodies.route import TopicRouteData
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.frame import FrameDecoder, encode_frame
from codec.headers.base import CustomHeader
from codec.headers.client import (
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
)
from codec.headers.namesrv import GetRouteInfoRequestHeader
from codec.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader, PullSysFlag
from codec.message import MessageRecord, iter_records
from spark.options import OptionError

DEFAULT_TIMEOUT_S = 10.0  # per call: connect, send, and the whole response
# Messages asked for per pull: the largest pullBatchSize DefaultLitePullConsumer accepts. The broker
# answers at most its maxTransferCountOnMessageInMemory (32 by default; 8 from disk) and
# maxTransferBytesOnMessageInMemory (256 KiB): asking more costs nothing and lets a broker
# configured for larger transfers send them (DefaultMessageStore.isTheBatchFull).
PULL_BATCH = 1024
READER_GROUP = "SPARK_READER"  # the consumer group named in pulls; it never heartbeats or commits
_RECV_CHUNK = 256 * 1024


class RemoteError(OptionError):
    """A NameServer or broker that cannot be reached or answered with an error (one line)."""


@dataclass(frozen=True)
class QueueRoute:
    """One readable message queue of a master broker."""

    topic: str
    broker: str
    addr: str
    queue_id: int


@dataclass(frozen=True)
class PullResult:
    """``PullResultExt`` in our terms: the response code, where to pull next, and the records as
    the broker sent them (stored records back to back; empty unless SUCCESS)."""

    code: int
    next_offset: int
    min_offset: int
    max_offset: int
    body: bytes

    def records(self) -> list[MessageRecord]:
        """The records decoded one by one; raises :class:`RemoteError` on a malformed one."""
        try:
            return list(iter_records(self.body))
        except RocketMQError as err:
            raise RemoteError(f"rocketmq: bad pull response: {err}") from None


class Connection:
    """One TCP connection doing synchronous request/response calls (requests are not pipelined)."""

    _opaques = itertools.count(1)

    def __init__(self, addr: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.addr = addr
        self.timeout_s = timeout_s
        host, _, port = addr.rpartition(":")
        try:
            self._sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        except (OSError, ValueError) as err:
            raise RemoteError(f"rocketmq: cannot connect to {addr}: {err}") from None
        self._decoder = FrameDecoder()

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, code: int, header: CustomHeader, body: bytes = b"") -> RemotingCommand:
        """Send one request and return its response; raises :class:`RemoteError`."""
        opaque = next(self._opaques)
        request = RemotingCommand.request(code, header, opaque=opaque, body=body)
        deadline = time.monotonic() + self.timeout_s
        try:
            self._sock.settimeout(self.timeout_s)
            self._sock.sendall(encode_frame(request))
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self._sock.settimeout(left)
                for response in self._decoder.feed(self._receive()):
                    if response.is_response and response.opaque == opaque:
                        return response
        except TimeoutError:
            raise RemoteError(f"rocketmq: {self.addr} did not answer within {self.timeout_s:g} s") from None
        except (OSError, RocketMQError) as err:
            raise RemoteError(f"rocketmq: call to {self.addr} failed: {err}") from None

    def _receive(self) -> bytes:
        data = self._sock.recv(_RECV_CHUNK)
        if not data:
            raise RemoteError(f"rocketmq: {self.addr} closed the connection")
        return data


def _failed(addr: str, what: str, response: RemotingCommand) -> RemoteError:
    return RemoteError(f"rocketmq: {what} at {addr}: code {response.code} {response.remark or ''}".rstrip())


def topic_routes(namesrv: str, topic: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[QueueRoute]:
    """The readable queues of ``topic`` on every master broker, sorted by broker and queue id.

    ``namesrv`` may list several NameServers separated by ``;``: the first that answers is used.
    Raises :class:`RemoteError`, also for a topic the NameServer does not know.
    """
    errors = []
    for addr in [a.strip() for a in namesrv.split(";") if a.strip()]:
        try:
            with Connection(addr, timeout_s) as conn:
                header = GetRouteInfoRequestHeader(topic=topic)
                response = conn.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, header)
        except RemoteError as err:
            errors.append(str(err))
            continue
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            raise RemoteError(f"rocketmq: topic {topic!r} not found on NameServer {addr}")
        if response.code != ResponseCode.SUCCESS:
            raise _failed(addr, f"route of topic {topic!r}", response)
        return _master_queues(topic, _decode_route(addr, response.body))
    raise RemoteError(errors[-1] if errors else f"rocketmq: no NameServer address in {namesrv!r}")


def _master_queues(topic: str, route: TopicRouteData) -> list[QueueRoute]:
    masters = {b.broker_name: b.master_addr() for b in route.broker_datas}
    out: list[QueueRoute] = []
    for q in route.queue_datas:
        addr = masters.get(q.broker_name)
        if addr is None or not q.perm & 0x4:  # PermName.PERM_READ; a broker without master is skipped
            continue
        out.extend(QueueRoute(topic, q.broker_name, addr, i) for i in range(q.read_queue_nums))
    return sorted(out, key=lambda r: (r.broker, r.queue_id))


def _offset(conn: Connection, code: int, header: CustomHeader, what: str) -> int:
    response = conn.call(code, header)
    if response.code != ResponseCode.SUCCESS:
        raise _failed(conn.addr, what, response)
    return response.header(OffsetResponseHeader).offset


def min_offset(conn: Connection, q: QueueRoute) -> int:
    header = GetMinOffsetRequestHeader(topic=q.topic, queue_id=q.queue_id, broker_name=q.broker)
    return _offset(conn, RequestCode.GET_MIN_OFFSET, header, f"min offset of {q.topic}/{q.queue_id}")


def max_offset(conn: Connection, q: QueueRoute) -> int:
    header = GetMaxOffsetRequestHeader(
        topic=q.topic, queue_id=q.queue_id, committed=True, broker_name=q.broker
    )
    return _offset(conn, RequestCode.GET_MAX_OFFSET, header, f"max offset of {q.topic}/{q.queue_id}")


def search_offset(conn: Connection, q: QueueRoute, timestamp_ms: int) -> int:
    """The first queue offset whose message was stored at or after ``timestamp_ms`` (lower boundary)."""
    header = SearchOffsetRequestHeader(
        topic=q.topic,
        queue_id=q.queue_id,
        timestamp=timestamp_ms,
        boundary_type="lower",
        broker_name=q.broker,
    )
    what = f"offset by time of {q.topic}/{q.queue_id}"
    return _offset(conn, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header, what)


def consumer_offset(conn: Connection, q: QueueRoute, group: str) -> int | None:
    """The committed offset of ``group`` on ``q``; ``None`` when it has none (QUERY_NOT_FOUND)."""
    header = QueryConsumerOffsetRequestHeader(
        consumer_group=group,
        topic=q.topic,
        queue_id=q.queue_id,
        set_zero_if_not_found=False,
        broker_name=q.broker,
    )
    response = conn.call(RequestCode.QUERY_CONSUMER_OFFSET, header)
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    if response.code != ResponseCode.SUCCESS:
        raise _failed(conn.addr, f"offset of group {group!r} on {q.topic}/{q.queue_id}", response)
    return response.header(OffsetResponseHeader).offset


def pull(conn: Connection, q: QueueRoute, offset: int, max_nums: int, subscription: str) -> PullResult:
    """One non-suspending, non-committing PULL_MESSAGE of ``q`` from ``offset``.

    ``subscription`` is a TAG expression (``*`` or ``a || b``). Codes other than SUCCESS,
    PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY and PULL_OFFSET_MOVED raise :class:`RemoteError`.
    """
    header = PullMessageRequestHeader(
        consumer_group=READER_GROUP,
        topic=q.topic,
        queue_id=q.queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=int(PullSysFlag.SUBSCRIPTION),
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription=subscription,
        sub_version=0,
        expression_type="TAG",
        broker_name=q.broker,
    )
    response = conn.call(RequestCode.PULL_MESSAGE, header)
    if response.code not in _PULL_CODES:
        raise _failed(conn.addr, f"pull of {q.topic}/{q.queue_id} at {offset}", response)
    try:
        h = response.header(PullMessageResponseHeader)
    except RocketMQError as err:
        raise RemoteError(f"rocketmq: bad pull response from {conn.addr}: {err}") from None
    body = response.body if response.code == ResponseCode.SUCCESS else b""
    return PullResult(response.code, h.next_begin_offset, h.min_offset, h.max_offset, body)


_PULL_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.PULL_NOT_FOUND,
        ResponseCode.PULL_RETRY_IMMEDIATELY,
        ResponseCode.PULL_OFFSET_MOVED,
    }
)


def _decode_route(addr: str, body: bytes) -> TopicRouteData:
    try:
        return TopicRouteData.decode(body)
    except RocketMQError as err:
        raise RemoteError(f"rocketmq: bad route data from {addr}: {err}") from None
