"""Decoding many commit-log records at once into Arrow columns (numpy over the mapped segment).

Given the record starts found by :func:`spark.records.walk`, the fixed fields of every record are
gathered in one numpy fancy-index per host layout (IPv4/IPv6 born and store hosts shift the later
fields by 12 bytes each; ``MessageDecoder.decode``) and viewed through a big-endian structured
dtype, so the per-record cost in Python is a few slices (topic, properties, body) instead of a full
decode. The same pass validates every record as ``CommitLog.checkMessageAndReturnSize`` does:
PHYSICALOFFSET equals the record's own offset, every length stays inside TOTALSIZE and they add up
to it exactly, and (``checkCRC``) BODYCRC matches. Decoding stops at the first record that fails.

Properties become ``map<string,string>`` with Arrow compute kernels (split on U+0002, then on the
first U+0001, Java's rules for malformed entries as :func:`codec.properties.decode_properties`).
A key stored twice (the real broker appends a batch's own ``UNIQ_KEY`` and ``WAIT`` to each inner
message's) must keep the later value as Java's ``HashMap`` does: rows where that happens are
detected with a per-row bitmask of key ids and rebuilt with :func:`decode_properties`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from codec.hashing import crc32_ranges
from codec.message import MESSAGE_MAGIC_CODE_V2, MessageSysFlag
from codec.message_id import encode_offset_msg_id
from codec.properties import KEYS, TAGS, UNIQ_KEY, decode_properties
from spark.bodies import inflate

_BORN_V6 = MessageSysFlag.BORNHOST_V6_FLAG
_STORE_V6 = MessageSysFlag.STOREHOSTADDRESS_V6_FLAG
_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
_NAME_VALUE = "\x01"
_PROPERTY_SEP = "\x02"
# How _slices copies byte ranges, by their lengths (crossovers measured on 1 KiB bodies, ~70-byte
# properties and ~11-byte topics, per record: a row copy + mask ~0.1 us, a byte index ~6 ns per
# byte, a memoryview slice + join ~0.5 us):
_PAD_MAX_WIDTH = 256  # widest range copied as a fixed-width row
_PAD_SLACK = 16  # bytes of padding per range accepted beyond twice the bytes kept
_GATHER_MAX_MEAN = 64  # mean bytes per range up to which every byte is gathered by index

# TopicValidator.SYSTEM_TOPIC_SET (5.3.3) and SYSTEM_TOPIC_PREFIX.
SYSTEM_TOPICS = frozenset(
    {
        "TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT",
        "CHECKPOINT_TOPIC",
    }
)  # fmt: skip
SYSTEM_TOPIC_PREFIX = "rmq_sys_"


def _head_dtype(born_len: int, store_len: int) -> np.dtype[Any]:
    """The fixed part of a record (TOTALSIZE .. BODYLEN) for one host layout, big-endian."""
    b, s = born_len, store_len
    fields = [
        ("total", ">i4", 0), ("magic", ">u4", 4), ("crc", ">i4", 8), ("queue_id", ">i4", 12),
        ("flag", ">i4", 16), ("queue_offset", ">i8", 20), ("phys", ">i8", 28), ("sys_flag", ">i4", 36),
        ("born_ts", ">i8", 40), ("born_ip", ("u1", (b,)), 48), ("born_port", ">i4", 48 + b),
        ("store_ts", ">i8", 52 + b), ("store_ip", ("u1", (s,)), 60 + b), ("store_port", ">i4", 60 + b + s),
        ("reconsume", ">i4", 64 + b + s), ("prepared", ">i8", 68 + b + s), ("body_len", ">i4", 76 + b + s),
    ]  # fmt: skip
    return np.dtype(
        {
            "names": [f[0] for f in fields],
            "formats": [f[1] for f in fields],
            "offsets": [f[2] for f in fields],
            "itemsize": 80 + b + s,
        }
    )


_LAYOUTS = {
    (bv6, sv6): _head_dtype(16 if bv6 else 4, 16 if sv6 else 4)
    for bv6 in (False, True)
    for sv6 in (False, True)
}
_INT_FIELDS = ("total", "magic", "crc", "queue_id", "flag", "queue_offset", "phys", "sys_flag", "born_ts",
               "born_port", "store_ts", "store_port", "reconsume", "prepared", "body_len")  # fmt: skip


@dataclass
class RowFilter:
    """Row selection applied while decoding (options and pushed-down filters); ``None`` = no limit."""

    topics: frozenset[str] | None = None
    include_system: bool = False
    queue_ids: frozenset[int] | None = None
    queue_offset: tuple[int | None, int | None] = (None, None)  # inclusive bounds
    commit_log_offset: tuple[int | None, int | None] = (None, None)  # inclusive bounds
    store_ms: tuple[int | None, int | None] = (None, None)  # inclusive bounds, ms since the epoch


@dataclass
class Projection:
    """Which columns to produce (the reader's schema, in order) and how."""

    names: Sequence[str]
    schema: pa.Schema
    include_body: bool = True
    check_crc: bool = True
    stats: dict[str, int] = field(default_factory=dict)


class Heads:
    """The fixed fields of ``n`` records as numpy columns, plus derived positions."""

    def __init__(self, data: np.ndarray[Any, Any], starts: np.ndarray[Any, Any]) -> None:
        n = len(starts)
        self.starts = starts
        self.cols: dict[str, np.ndarray[Any, Any]] = {}
        flags = _gather(data, starts + 36, 4).view(">i4").reshape(n).astype(np.int64)
        bv6 = (flags & _BORN_V6) != 0
        sv6 = (flags & _STORE_V6) != 0
        self.born_ip = np.zeros((n, 16), dtype=np.uint8)
        self.store_ip = np.zeros((n, 16), dtype=np.uint8)
        self.body_pos = np.zeros(n, dtype=np.int64)
        for (b6, s6), dtype in _LAYOUTS.items():
            rows = np.flatnonzero((bv6 == b6) & (sv6 == s6))
            if not len(rows):
                continue
            raw = _gather(data, starts[rows], dtype.itemsize).view(dtype).reshape(len(rows))
            if len(rows) == n:  # one host layout in the batch (the usual case): no scatter
                self.cols = {name: raw[name].astype(np.int64) for name in _INT_FIELDS}
            else:
                for name in _INT_FIELDS:
                    self.cols.setdefault(name, np.zeros(n, dtype=np.int64))[rows] = raw[name]
            self.born_ip[rows, : 16 if b6 else 4] = raw["born_ip"]
            self.store_ip[rows, : 16 if s6 else 4] = raw["store_ip"]
            self.body_pos[rows] = starts[rows] + dtype.itemsize
        if not n:
            self.cols = {name: np.zeros(0, dtype=np.int64) for name in _INT_FIELDS}
        self.bv6 = bv6
        self.sv6 = sv6


def _gather(data: np.ndarray[Any, Any], pos: np.ndarray[Any, Any], width: int) -> np.ndarray[Any, Any]:
    """``width`` bytes at each position, as a C-contiguous ``(n, width)`` uint8 array (clipped in bounds)."""
    if len(data) < width:  # a file shorter than one header: rows of zeros, which fail validation
        data = np.concatenate([data, np.zeros(width - len(data), dtype=np.uint8)])
    safe = np.clip(pos, 0, len(data) - width)
    # Rows of a view whose row i starts at byte i: one index per record, each row copied whole.
    windows: np.ndarray[Any, Any] = np.lib.stride_tricks.as_strided(
        data, shape=(len(data) - width + 1, width), strides=(1, 1), writeable=False
    )
    rows: np.ndarray[Any, Any] = windows[safe]
    return rows


def validate(
    data: np.ndarray[Any, Any], segment_start: int | None, heads: Heads, check_crc: bool
) -> tuple[int, np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """How many leading records are whole, and each record's topic/properties positions and lengths.

    ``segment_start`` None: the records are not at their stored positions (a pull response), so
    PHYSICALOFFSET is not checked against them.
    """
    c = heads.cols
    starts = heads.starts
    ends = starts + c["total"]
    body_len = c["body_len"]
    topic_len_pos = heads.body_pos + body_len
    v2 = c["magic"] == MESSAGE_MAGIC_CODE_V2
    ok = (body_len >= 0) & (topic_len_pos + 1 + v2 <= ends)
    if segment_start is not None:
        ok &= c["phys"] == segment_start + starts
    raw_tl = _gather(data, topic_len_pos, 2)
    topic_len = np.where(v2, raw_tl.view(">i2").reshape(-1).astype(np.int64), raw_tl[:, 0].astype(np.int64))
    topic_pos = topic_len_pos + 1 + v2
    props_len_pos = topic_pos + topic_len
    ok &= (topic_len >= 0) & (props_len_pos + 2 <= ends)
    props_len = _gather(data, props_len_pos, 2).view(">i2").reshape(-1).astype(np.int64)
    props_pos = props_len_pos + 2
    ok &= (props_len >= 0) & (props_pos + props_len == ends)
    count = len(starts) if ok.all() else int(np.argmin(ok))
    if check_crc and count:
        body_pos = heads.body_pos[:count]
        computed = np.fromiter(
            crc32_ranges(data.data, body_pos.tolist(), (body_pos + body_len[:count]).tolist()),
            dtype=np.int64,
            count=count,
        )
        bad = np.flatnonzero((computed & 0x7FFFFFFF) != c["crc"][:count])  # UtilAll.crc32's mask
        if len(bad):
            count = int(bad[0])
    return count, topic_pos, topic_len, props_pos, props_len


def _slices(
    data: np.ndarray[Any, Any],
    pos: np.ndarray[Any, Any],
    lens: np.ndarray[Any, Any],
    offsets: np.ndarray[Any, Any],
) -> pa.Buffer:
    """The byte ranges ``[pos, pos + len)`` back to back (``offsets``: where each one goes).

    Ranges of similar lengths are copied as fixed-width rows and trimmed by a mask; short ranges of
    mixed lengths (topics, properties) are gathered in one numpy fancy-index of every byte; long
    ones (bodies) are copied a range at a time, where the per-byte index would cost more.
    """
    total = int(offsets[-1])
    if not len(pos):
        return pa.py_buffer(b"")
    widest = int(lens.max())
    fits = int(pos.max()) + widest <= len(data)  # _gather would clip a row that runs past the end
    if fits and int(lens.min()) == widest:
        # One length (bodies of a load test, fixed-size payloads): the rows are the result, one
        # numpy copy (~0.3 us per 1 KiB range against ~3 us for slices joined).
        return pa.py_buffer(_gather(data, pos, widest))
    if fits and widest <= _PAD_MAX_WIDTH and widest * len(pos) <= 2 * total + _PAD_SLACK * len(pos):
        # Lengths alike (topics, properties of one producer): copy a fixed-width row per range,
        # then keep each row's first len bytes.
        rows = _gather(data, pos, widest)
        return pa.py_buffer(rows[np.arange(widest) < lens[:, None]])
    if total <= _GATHER_MAX_MEAN * len(pos):
        index = np.repeat(pos - offsets[:-1], lens)
        index += np.arange(total, dtype=np.int64)
        return pa.py_buffer(data[index])
    view = memoryview(data.data)
    return pa.py_buffer(b"".join([view[p : p + n] for p, n in zip(pos.tolist(), lens.tolist(), strict=True)]))


def var_array(
    data: np.ndarray[Any, Any], pos: np.ndarray[Any, Any], lens: np.ndarray[Any, Any], kind: pa.DataType
) -> pa.Array:
    """A string or binary Arrow array of the byte ranges ``[pos, pos + len)``; strings are UTF-8 checked."""
    offsets = np.zeros(len(pos) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    values = _slices(data, pos, lens, offsets)
    arr = pa.Array.from_buffers(kind, len(pos), [None, pa.py_buffer(offsets.astype(np.int32)), values])
    if kind == pa.string():
        arr.validate(full=True)  # raises ArrowInvalid on bytes that are not UTF-8
    return arr


def select_rows(
    topic: pa.Array, heads: Heads, count: int, row_filter: RowFilter, keep: np.ndarray[Any, Any] | None = None
) -> np.ndarray[Any, Any]:
    """Indices (among the first ``count`` records) that pass ``row_filter`` and are set in ``keep``."""
    c = heads.cols
    mask = np.ones(count, dtype=bool) if keep is None else keep[:count].copy()
    if row_filter.topics is not None:
        mask &= pc.is_in(topic, value_set=pa.array(sorted(row_filter.topics), pa.string())).to_numpy(
            zero_copy_only=False
        )
    elif not row_filter.include_system:
        system = pc.or_(
            pc.is_in(topic, value_set=pa.array(sorted(SYSTEM_TOPICS), pa.string())),
            pc.starts_with(topic, SYSTEM_TOPIC_PREFIX),
        )
        mask &= ~system.to_numpy(zero_copy_only=False)
    if row_filter.queue_ids is not None:
        mask &= np.isin(c["queue_id"][:count], np.array(sorted(row_filter.queue_ids), dtype=np.int64))
    for name, (lo, hi) in (
        ("queue_offset", row_filter.queue_offset),
        ("phys", row_filter.commit_log_offset),
        ("store_ts", row_filter.store_ms),
    ):
        if lo is not None:
            mask &= c[name][:count] >= lo
        if hi is not None:
            mask &= c[name][:count] <= hi
    return np.flatnonzero(mask)


def hosts(ip: np.ndarray[Any, Any], v6: np.ndarray[Any, Any], port: np.ndarray[Any, Any]) -> pa.Array:
    """``a.b.c.d:port`` strings (IPv6 rows: ``[addr]:port``).

    A batch holds few distinct IPv4 hosts (one store host; a producer's address and port per
    connection), so each distinct one is formatted once and the column is a ``take`` of them.
    """
    if len(port) > 1 and not v6.any():
        address = np.ascontiguousarray(ip[:, :4]).view(">u4").reshape(-1).astype(np.uint64)
        key = (address << np.uint64(32)) | (port.astype(np.uint64) & np.uint64(0xFFFFFFFF))
        distinct, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        if len(distinct) < len(port):
            return _format_hosts(ip[first], v6[first], port[first]).take(pa.array(inverse.reshape(-1)))
    return _format_hosts(ip, v6, port)


def _format_hosts(ip: np.ndarray[Any, Any], v6: np.ndarray[Any, Any], port: np.ndarray[Any, Any]) -> pa.Array:
    ports = pc.cast(pa.array(port), pa.string())
    if not v6.any():
        octets = [pc.cast(pa.array(ip[:, i]), pa.string()) for i in range(4)]
        return pc.binary_join_element_wise(pc.binary_join_element_wise(*octets, "."), ports, ":")
    import ipaddress

    out = []
    for row, is6, p in zip(ip, v6.tolist(), port.tolist(), strict=True):
        if is6:
            out.append(f"[{ipaddress.IPv6Address(bytes(row))}]:{p}")
        else:
            out.append(f"{'.'.join(str(x) for x in row[:4])}:{p}")
    return pa.array(out, pa.string())


def offset_msg_ids(heads: Heads, rows: np.ndarray[Any, Any]) -> pa.Array:
    """``MessageDecoder.createMessageId``: hex of store host, port and commit-log offset."""
    c = heads.cols
    if heads.sv6[rows].any():
        return pa.array(
            [
                encode_offset_msg_id(bytes(ip[: 16 if v6 else 4]), int(port), int(phys))
                for ip, v6, port, phys in zip(
                    heads.store_ip[rows], heads.sv6[rows], c["store_port"][rows], c["phys"][rows], strict=True
                )
            ],
            pa.string(),
        )
    raw = np.empty((len(rows), 16), dtype=np.uint8)
    raw[:, :4] = heads.store_ip[rows, :4]
    raw[:, 4:8] = c["store_port"][rows].astype(">i4").view(np.uint8).reshape(-1, 4)
    raw[:, 8:] = c["phys"][rows].astype(">i8").view(np.uint8).reshape(-1, 8)
    text = np.empty((len(rows), 32), dtype=np.uint8)
    text[:, 0::2] = _HEX[raw >> 4]
    text[:, 1::2] = _HEX[raw & 0x0F]
    offsets = np.arange(0, 32 * len(rows) + 1, 32, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), len(rows), [None, pa.py_buffer(offsets), pa.py_buffer(text)])


def properties_map(props: pa.Array, map_type: pa.DataType) -> pa.Array:
    """The properties strings as a map column, Java's parsing rules and later-duplicate-wins."""
    n = len(props)
    segments = pc.split_pattern(props, _PROPERTY_SEP)
    parents = pc.list_parent_indices(segments).to_numpy()
    flat = pc.list_flatten(segments)
    sep = pc.find_substring(flat, _NAME_VALUE).to_numpy()
    length = pc.binary_length(flat).to_numpy()
    keep = (sep > 0) & (sep < length - 1)
    kept = flat.filter(pa.array(keep))
    pairs = pc.split_pattern(kept, _NAME_VALUE, max_splits=1)
    keys = pc.list_element(pairs, 0)
    values = pc.list_element(pairs, 1)
    counts = np.bincount(parents[keep], minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    if _has_duplicate_keys(keys, offsets, counts):
        return pa.array([list(decode_properties(text).items()) for text in props.to_pylist()], type=map_type)
    return pa.MapArray.from_arrays(pa.array(offsets), keys, values, type=map_type)


def _has_duplicate_keys(keys: pa.Array, offsets: np.ndarray[Any, Any], counts: np.ndarray[Any, Any]) -> bool:
    """True if some row names a key twice: compares each row's entry count with its distinct key ids."""
    if not len(keys):
        return False
    ids = pc.dictionary_encode(keys).indices.to_numpy().astype(np.uint64)
    if ids.max() >= 64:
        return True  # more than 64 distinct names in this batch: let the exact slow path decide
    bits = np.left_shift(np.uint64(1), ids)
    nonempty = counts > 0
    masks = np.bitwise_or.reduceat(bits, offsets[:-1][nonempty])
    return bool((np.bitwise_count(masks) != counts[nonempty]).any())


def lookup(properties: pa.Array, key: str) -> pa.Array:
    return pc.map_lookup(properties, key, "last")


def bodies(
    data: np.ndarray[Any, Any], heads: Heads, rows: np.ndarray[Any, Any], stats: dict[str, int]
) -> pa.Array:
    """The body column; compressed bodies (``COMPRESSED_FLAG``) inflated per ``MessageSysFlag``."""
    c = heads.cols
    pos, lens, flags = heads.body_pos[rows], c["body_len"][rows], c["sys_flag"][rows]
    compressed = (flags & MessageSysFlag.COMPRESSED_FLAG) != 0
    if not compressed.any():
        return var_array(data, pos, lens, pa.binary())
    view = memoryview(data.data)
    out: list[bytes | None] = []
    for p, n, f in zip(pos.tolist(), lens.tolist(), flags.tolist(), strict=True):
        raw = bytes(view[p : p + n])
        out.append(inflate(raw, f, stats) if f & MessageSysFlag.COMPRESSED_FLAG else raw)
    return pa.array(out, pa.binary())


KEY_COLUMNS = {"uniq_key": UNIQ_KEY, "keys": KEYS, "tags": TAGS}
