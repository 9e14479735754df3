"""The stored message record: commit log entries and PULL / QUERY / VIEW response bodies.

Mirrors ``MessageExtEncoder.encode`` / ``MessageDecoder.decode``. Layout with IPv4 hosts
(each IPv6 host adds 12 bytes), all integers big-endian::

    offset size    field
    0      4       TOTALSIZE          whole record, this field included
    4      4       MAGICCODE          v1 0xDAA320A7 (1-byte topic length), v2 0xDAA320AB (2-byte)
    8      4       BODYCRC            crc32(body as stored) & 0x7FFFFFFF
    12     4       QUEUEID
    16     4       FLAG               user flag from the producer
    20     8       QUEUEOFFSET        logical offset in the consume queue
    28     8       PHYSICALOFFSET     commit-log offset of this record
    36     4       SYSFLAG            MessageSysFlag
    40     8       BORNTIMESTAMP      ms
    48     8|20    BORNHOST           4|16-byte address + int32 port (IPv6 if SYSFLAG & 0x10)
    56     8       STORETIMESTAMP     ms
    64     8|20    STOREHOSTADDRESS   as BORNHOST (IPv6 if SYSFLAG & 0x20)
    72     4       RECONSUMETIMES
    76     8       PREPARED TRANSACTION OFFSET
    84     4       BODYLEN, then BODY
    ..     1|2     TOPICLEN, then TOPIC (UTF-8)
    ..     2       PROPLEN, then PROPERTIES (UTF-8, see codec.properties)

A commit-log file that cannot hold the next record ends with an 8-byte blank marker:
TOTALSIZE = bytes left in the file, MAGICCODE = 0xCBD43194.

Decoding validates every length against the buffer and TOTALSIZE against the sum of the parts
(``CommitLog.checkMessageAndReturnSize`` treats a mismatch as corruption) and raises
:class:`MessageFormatError`; nothing here trusts a length field.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Final

from codec.errors import MessageFormatError
from codec.hashing import body_crc32

MESSAGE_MAGIC_CODE_V1 = 0xDAA320A7
MESSAGE_MAGIC_CODE_V2 = 0xDAA320AB
BLANK_MAGIC_CODE = 0xCBD43194
BLANK_MARKER_SIZE = 8  # TOTALSIZE + MAGICCODE
MAX_V1_TOPIC_BYTES = 127  # longer topics need the v2 record (2-byte topic length)


class MessageSysFlag:
    """``org.apache.rocketmq.common.sysflag.MessageSysFlag``."""

    COMPRESSED_FLAG: Final = 0x1
    MULTI_TAGS_FLAG: Final = 0x2
    TRANSACTION_NOT_TYPE: Final = 0x0
    TRANSACTION_PREPARED_TYPE: Final = 0x4
    TRANSACTION_COMMIT_TYPE: Final = 0x8
    TRANSACTION_ROLLBACK_TYPE: Final = 0xC
    TRANSACTION_MASK: Final = 0xC
    BORNHOST_V6_FLAG: Final = 0x10
    STOREHOSTADDRESS_V6_FLAG: Final = 0x20
    NEED_UNWRAP_FLAG: Final = 0x40
    INNER_BATCH_FLAG: Final = 0x80
    COMPRESSION_TYPE_MASK: Final = 0x700
    COMPRESSION_LZ4: Final = 0x100
    COMPRESSION_ZSTD: Final = 0x200
    COMPRESSION_ZLIB: Final = 0x300

    @staticmethod
    def transaction_type(sys_flag: int) -> int:
        return sys_flag & MessageSysFlag.TRANSACTION_MASK


_HEAD = struct.Struct(">iIiiiqqiq")  # TOTALSIZE..BORNTIMESTAMP: 48 bytes
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")
_MID = struct.Struct(">iq")  # RECONSUMETIMES, PREPARED TRANSACTION OFFSET
_BLANK = struct.Struct(">iI")

# Byte positions of the fields the store fills in at append time (the same for every layout).
QUEUE_OFFSET_POS = 20
PHYSICAL_OFFSET_POS = 28
SYS_FLAG_POS = 36
BORN_HOST_POS = 48


#: The fields of :class:`MessageRecord` (its ``__slots__``; compiled classes have no ``__slots__`` to read).
RECORD_FIELDS: Final = (
    "body",
    "body_crc",
    "born_host",
    "born_port",
    "born_timestamp",
    "flag",
    "magic",
    "physical_offset",
    "prepared_transaction_offset",
    "properties",
    "queue_id",
    "queue_offset",
    "reconsume_times",
    "store_host",
    "store_port",
    "store_size",
    "store_timestamp",
    "sys_flag",
    "topic",
)


class MessageRecord:
    """One stored message. Hosts are raw address bytes (4 or 16) plus a port.

    ``properties`` is the raw properties string, kept as stored so that a record re-encodes to the
    same bytes; :func:`codec.properties.decode_properties` turns it into a dict.
    """

    __slots__ = RECORD_FIELDS

    def __init__(
        self,
        *,
        topic: str,
        queue_id: int,
        body: bytes,
        properties: str = "",
        flag: int = 0,
        queue_offset: int = 0,
        physical_offset: int = 0,
        sys_flag: int = 0,
        born_timestamp: int = 0,
        born_host: bytes = b"\x7f\x00\x00\x01",
        born_port: int = 0,
        store_timestamp: int = 0,
        store_host: bytes = b"\x7f\x00\x00\x01",
        store_port: int = 0,
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
        body_crc: int | None = None,
        magic: int = 0,
        store_size: int = 0,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.body = body
        self.properties = properties
        self.flag = flag
        self.queue_offset = queue_offset
        self.physical_offset = physical_offset
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.born_port = born_port
        self.store_timestamp = store_timestamp
        self.store_host = store_host
        self.store_port = store_port
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset
        self.body_crc = body_crc_of(body) if body_crc is None else body_crc
        self.magic = magic
        self.store_size = store_size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageRecord):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in RECORD_FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"MessageRecord(topic={self.topic!r}, queue_id={self.queue_id}, "
            f"queue_offset={self.queue_offset}, physical_offset={self.physical_offset}, "
            f"sys_flag={self.sys_flag:#x}, body=<{len(self.body)} bytes>, properties={self.properties!r})"
        )

    def to_put_again(
        self,
        *,
        topic: str,
        queue_id: int,
        properties: str,
        store_host: bytes | None = None,
        store_port: int | None = None,
        reconsume_times: int | None = None,
        born_host: bytes | None = None,
        born_port: int | None = None,
        sys_flag: int | None = None,
        prepared_transaction_offset: int = 0,
    ) -> MessageRecord:
        """A new record carrying this one's message (body, flags, born host and time) to another
        topic and queue, for the broker to put again (delay and timer delivery, send-back, POP
        revive, a transaction's half message renewed or committed); the store assigns the offsets
        and store time anew. A field given here replaces this record's."""
        return MessageRecord(
            topic=topic,
            queue_id=queue_id,
            body=self.body,
            properties=properties,
            flag=self.flag,
            sys_flag=self.sys_flag if sys_flag is None else sys_flag,
            born_timestamp=self.born_timestamp,
            born_host=self.born_host if born_host is None else born_host,
            born_port=self.born_port if born_port is None else born_port,
            store_host=self.store_host if store_host is None else store_host,
            store_port=self.store_port if store_port is None else store_port,
            reconsume_times=self.reconsume_times if reconsume_times is None else reconsume_times,
            prepared_transaction_offset=prepared_transaction_offset,
        )

    def uncompressed_body(self) -> bytes:
        """The body as the producer gave it: zlib-inflated when the record is compressed."""
        if not self.sys_flag & MessageSysFlag.COMPRESSED_FLAG:
            return self.body
        kind = self.sys_flag & MessageSysFlag.COMPRESSION_TYPE_MASK
        if kind not in (0, MessageSysFlag.COMPRESSION_ZLIB):
            raise MessageFormatError(f"unsupported compression type {kind >> 8:#x}")
        try:
            return zlib.decompress(self.body)
        except zlib.error as err:
            raise MessageFormatError(f"compressed body does not inflate: {err}") from err


def make_system_record(
    topic: str, queue_id: int, body: bytes, properties: str, now_ms: int, host: bytes, port: int
) -> MessageRecord:
    """A record the broker writes for itself into one of its system topics (a POP checkpoint or
    ack, a transaction's op message): born now at the broker's own address, which is also the
    store host, as Java's ``buildCkMsg`` and ``makeOpMessageInner`` set both."""
    return MessageRecord(
        topic=topic,
        queue_id=queue_id,
        body=body,
        properties=properties,
        born_timestamp=now_ms,
        born_host=host,
        born_port=port,
        store_host=host,
        store_port=port,
    )


def body_crc_of(body: bytes | bytearray | memoryview) -> int:
    return body_crc32(body)


def record_size(sys_flag: int, body_len: int, topic_len: int, properties_len: int) -> int:
    """TOTALSIZE of a record (``MessageExtEncoder.calMsgLength``)."""
    born = 20 if sys_flag & MessageSysFlag.BORNHOST_V6_FLAG else 8
    store = 20 if sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG else 8
    topic_size = 1 if topic_len <= MAX_V1_TOPIC_BYTES else 2
    return 72 + born + store + body_len + topic_size + topic_len + 2 + properties_len


class RecordLayout:
    """What encoding a record needs besides the record: its TOTALSIZE, the topic and properties
    as UTF-8, the sys flag with the host flags set, and the fixed-part struct for its hosts.
    :func:`measure_record` makes one (all the checks), :func:`encode_record_into` writes with it."""

    __slots__ = ("fixed", "properties", "size", "sys_flag", "topic")

    def __init__(
        self, size: int, topic: bytes, properties: bytes, sys_flag: int, fixed: struct.Struct
    ) -> None:
        self.size = size
        self.topic = topic
        self.properties = properties
        self.sys_flag = sys_flag
        self.fixed = fixed


def _fixed_struct(born_len: int, store_len: int) -> struct.Struct:
    """TOTALSIZE .. BODYLEN in one struct for the given host address lengths."""
    return struct.Struct(f">iIiiiqqiq{born_len}siq{store_len}siiqi")


# (born host bytes, store host bytes) -> the fixed part: one pack_into per record.
_FIXED = {(b, s): _fixed_struct(b, s) for b in (4, 16) for s in (4, 16)}
_V6_FLAGS = MessageSysFlag.BORNHOST_V6_FLAG | MessageSysFlag.STOREHOSTADDRESS_V6_FLAG


def measure_record(record: MessageRecord) -> RecordLayout:
    """Check a record can be encoded and size it; raises :class:`MessageFormatError`.

    The magic is v1 unless the topic needs a 2-byte length (v2). Host flags in ``sys_flag`` are
    derived from the address lengths, as the broker derives them from the socket families."""
    topic = record.topic.encode()
    props = record.properties.encode()
    if len(props) > 32767:
        raise MessageFormatError(f"properties of {len(props)} bytes exceed 32767")
    if len(topic) > 32767:
        raise MessageFormatError("topic too long")
    sys_flag = record.sys_flag & ~_V6_FLAGS
    sys_flag |= _host_flag(record.born_host, MessageSysFlag.BORNHOST_V6_FLAG)
    sys_flag |= _host_flag(record.store_host, MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
    size = record_size(sys_flag, len(record.body), len(topic), len(props))
    return RecordLayout(size, topic, props, sys_flag, _FIXED[len(record.born_host), len(record.store_host)])


def encode_record_into(buf: bytearray, pos: int, record: MessageRecord, layout: RecordLayout) -> None:
    """Write ``record`` at ``buf[pos : pos + layout.size]`` (``layout`` from :func:`measure_record`).

    The store encodes a whole batch into one buffer this way: one ``pack_into`` for the fixed
    part and slice copies for the rest, no intermediate ``bytes`` per field."""
    body = record.body
    topic = layout.topic
    props = layout.properties
    v2 = len(topic) > MAX_V1_TOPIC_BYTES
    fixed = layout.fixed
    fixed.pack_into(
        buf,
        pos,
        layout.size,
        MESSAGE_MAGIC_CODE_V2 if v2 else MESSAGE_MAGIC_CODE_V1,
        record.body_crc,
        record.queue_id,
        record.flag,
        record.queue_offset,
        record.physical_offset,
        layout.sys_flag,
        record.born_timestamp,
        record.born_host,
        record.born_port,
        record.store_timestamp,
        record.store_host,
        record.store_port,
        record.reconsume_times,
        record.prepared_transaction_offset,
        len(body),
    )
    pos += fixed.size
    end = pos + len(body)
    buf[pos:end] = body
    if v2:
        _SHORT.pack_into(buf, end, len(topic))
        pos = end + 2
    else:
        buf[end] = len(topic)
        pos = end + 1
    end = pos + len(topic)
    buf[pos:end] = topic
    _SHORT.pack_into(buf, end, len(props))
    pos = end + 2
    buf[pos : pos + len(props)] = props


def encode_record(record: MessageRecord) -> bytes:
    """Encode one record (see :func:`measure_record` for the checks and flags)."""
    layout = measure_record(record)
    buf = bytearray(layout.size)
    encode_record_into(buf, 0, record, layout)
    return bytes(buf)


def _host_flag(address: bytes, v6_flag: int) -> int:
    if len(address) == 16:
        return v6_flag
    if len(address) == 4:
        return 0
    raise MessageFormatError(f"host address must be 4 or 16 bytes, not {len(address)}")


def encode_blank(size: int) -> bytes:
    """The end-of-file marker that fills ``size`` remaining bytes of a commit-log file."""
    return _BLANK.pack(size, BLANK_MAGIC_CODE)


def peek_record(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """``(TOTALSIZE, MAGICCODE)`` at ``pos``; raises when fewer than 8 bytes remain."""
    if len(buf) - pos < BLANK_MARKER_SIZE:
        raise MessageFormatError(f"only {len(buf) - pos} bytes left for a record header")
    size, magic = _BLANK.unpack_from(buf, pos)
    return size, magic


def decode_record(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, with_body: bool = True
) -> MessageRecord:
    """Decode the record at ``pos``; raises :class:`MessageFormatError` on any inconsistency.

    A blank marker is not a record: check :func:`peek_record` first when reading a commit log.
    ``with_body=False`` skips copying the body (recovery and dispatch need only the metadata).
    """
    view = memoryview(buf)
    end_of_buf = len(view)
    if end_of_buf - pos < _HEAD.size:
        raise MessageFormatError(f"truncated record at {pos}: {end_of_buf - pos} bytes")
    (total, magic, crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born_ts) = _HEAD.unpack_from(
        view, pos
    )
    if magic == BLANK_MAGIC_CODE:
        raise MessageFormatError(f"blank end-of-file marker at {pos}, not a record")
    if magic not in (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2):
        raise MessageFormatError(f"bad magic code {magic:#010x} at {pos}")
    if total < _HEAD.size or pos + total > end_of_buf:
        raise MessageFormatError(f"record size {total} at {pos} exceeds the buffer ({end_of_buf - pos})")
    end = pos + total
    cur = pos + _HEAD.size
    born_len = 16 if sys_flag & MessageSysFlag.BORNHOST_V6_FLAG else 4
    store_len = 16 if sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG else 4
    fixed_rest = born_len + 4 + 8 + store_len + 4 + 12 + 4
    if cur + fixed_rest > end:
        raise MessageFormatError(f"record at {pos} too short for its fixed fields")
    born_host = bytes(view[cur : cur + born_len])
    cur += born_len
    (born_port,) = _INT.unpack_from(view, cur)
    (store_ts,) = _LONG.unpack_from(view, cur + 4)
    cur += 12
    store_host = bytes(view[cur : cur + store_len])
    cur += store_len
    (store_port,) = _INT.unpack_from(view, cur)
    reconsume, prepared = _MID.unpack_from(view, cur + 4)
    (body_len,) = _INT.unpack_from(view, cur + 16)
    cur += 20
    if body_len < 0 or cur + body_len > end:
        raise MessageFormatError(f"body length {body_len} out of bounds in record at {pos}")
    body = bytes(view[cur : cur + body_len]) if with_body else b""
    cur += body_len
    if magic == MESSAGE_MAGIC_CODE_V1:
        if cur + 1 > end:
            raise MessageFormatError(f"record at {pos} truncated before its topic")
        topic_len = view[cur]
        cur += 1
    else:
        if cur + 2 > end:
            raise MessageFormatError(f"record at {pos} truncated before its topic")
        (topic_len,) = _SHORT.unpack_from(view, cur)
        cur += 2
    if topic_len < 0 or cur + topic_len + 2 > end:
        raise MessageFormatError(f"topic length {topic_len} out of bounds in record at {pos}")
    topic = _text(view[cur : cur + topic_len], pos)
    cur += topic_len
    (props_len,) = _SHORT.unpack_from(view, cur)
    cur += 2
    if props_len < 0 or cur + props_len != end:
        raise MessageFormatError(
            f"record at {pos}: TOTALSIZE {total} does not match its fields (properties length {props_len})"
        )
    properties = _text(view[cur:end], pos)
    return MessageRecord(
        topic=topic,
        queue_id=queue_id,
        body=body,
        properties=properties,
        flag=flag,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=born_host,
        born_port=born_port,
        store_timestamp=store_ts,
        store_host=store_host,
        store_port=store_port,
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
        body_crc=crc,
        magic=magic,
        store_size=total,
    )


def iter_records(buf: bytes | bytearray | memoryview) -> Iterator[MessageRecord]:
    """Decode records back to back until the buffer ends (a PULL or QUERY response body)."""
    pos = 0
    while pos < len(buf):
        record = decode_record(buf, pos)
        yield record
        pos += record.store_size


def _text(view: memoryview, pos: int) -> str:
    try:
        return str(view, "utf-8")
    except UnicodeDecodeError as err:
        raise MessageFormatError(f"record at {pos} has a string that is not UTF-8") from err
