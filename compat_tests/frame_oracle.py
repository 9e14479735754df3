"""An independent, declarative decoder of remoting frames and stored message records.

Built with ``construct`` straight from the Java classes (``RemotingCommand``, ``RocketMQSerializable``,
``MessageDecoder``, ``MessageExtEncoder``) and
deliberately sharing nothing with ``codec/``: it is the test oracle the codec is checked against and
the decoder that writes the readable sidecars of ``tests/golden``. Speed does not matter here;
clarity and strictness do (every length is checked, trailing bytes are errors).

Layouts:

* ``FRAME``: int32 length (not counting itself), a header word whose high byte is the serialize
  type (0 JSON, 1 ROCKETMQ) and whose low 24 bits are the header length, the header, the body.
* ``ROCKETMQ_HEADER``: the binary header of ``RocketMQSerializable.rocketMQProtocolEncode``.
* ``MESSAGE_RECORD``: one stored record (``MessageDecoder``; both magic codes, IPv4/IPv6 hosts by sysflag).
* ``BATCH_ENTRY``: one entry of a SEND_BATCH_MESSAGE body (``MessageDecoder.encodeMessages``).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import zlib
from collections.abc import Iterator
from typing import Any

from construct import (
    Bytes,
    Check,
    ConstructError,
    FixedSized,
    GreedyRange,
    IfThenElse,
    Int8ub,
    Int16sb,
    Int16ub,
    Int24ub,
    Int32sb,
    Int32ub,
    Int64sb,
    PascalString,
    Struct,
    Tell,
    Terminated,
    this,
)

from compat_tests.code_names import LANGUAGE_CODES, request_code_name, response_code_name

SERIALIZE_TYPES = {0: "JSON", 1: "ROCKETMQ"}  # SerializeType byte in the header word
RPC_TYPE_RESPONSE = 0x1  # flag bit 0: the command is a response
RPC_ONEWAY = 0x2  # flag bit 1: oneway request
MAGIC_V1 = 0xDAA320A7  # MessageVersion.MESSAGE_VERSION_V1 (1-byte topic length)
MAGIC_V2 = 0xDAA320AB  # MessageVersion.MESSAGE_VERSION_V2 (2-byte topic length)
BLANK_MAGIC = 0xCBD43194  # end-of-file marker of a commit-log file
BORNHOST_V6_FLAG = 0x10  # MessageSysFlag bits
STOREHOST_V6_FLAG = 0x20
COMPRESSED_FLAG = 0x1
TRANSACTION_TYPES = {0x0: "NOT_TYPE", 0x4: "PREPARED_TYPE", 0x8: "COMMIT_TYPE", 0xC: "ROLLBACK_TYPE"}
COMPRESSION_TYPES = {0: "ZLIB", 1: "LZ4", 2: "ZSTD", 3: "ZLIB"}  # (sysflag & 0x700) >> 8

# Request codes whose response body is stored records (PULL, QUERY, VIEW, LITE_PULL), and the
# broker-to-client request whose body is one record (CHECK_TRANSACTION_STATE).
RECORD_RESPONSE_REQUESTS = frozenset({11, 12, 33, 361})
RECORD_REQUESTS = frozenset({39})
SEND_BATCH_MESSAGE = 320


class OracleError(ValueError):
    """Bytes that do not follow the layouts of the spec."""


FRAME = Struct(
    "length" / Int32sb,
    Check(this.length >= 4),
    "serialize_type" / Int8ub,
    "header_length" / Int24ub,
    Check(this.header_length <= this.length - 4),
    "header" / Bytes(this.header_length),
    "body" / Bytes(this.length - 4 - this.header_length),
)

EXT_ENTRY = Struct(
    "key" / PascalString(Int16ub, "utf8"),
    "value" / PascalString(Int32ub, "utf8"),
)

ROCKETMQ_HEADER = Struct(
    "code" / Int16sb,
    "language" / Int8ub,
    "version" / Int16sb,
    "opaque" / Int32sb,
    "flag" / Int32sb,
    "remark" / PascalString(Int32ub, "utf8"),
    "ext_length" / Int32ub,
    "ext" / FixedSized(this.ext_length, Struct("entries" / GreedyRange(EXT_ENTRY), Terminated)),
    Terminated,
)


def _host(v6_flag: int) -> IfThenElse:
    return IfThenElse(
        this.sysflag & v6_flag,
        Struct("ip" / Bytes(16), "port" / Int32sb),
        Struct("ip" / Bytes(4), "port" / Int32sb),
    )


MESSAGE_RECORD = Struct(
    "_start" / Tell,
    "total_size" / Int32sb,
    "magic" / Int32ub,
    Check((this.magic == MAGIC_V1) | (this.magic == MAGIC_V2)),
    "body_crc" / Int32sb,
    "queue_id" / Int32sb,
    "flag" / Int32sb,
    "queue_offset" / Int64sb,
    "physical_offset" / Int64sb,
    "sysflag" / Int32sb,
    "born_timestamp" / Int64sb,
    "born_host" / _host(BORNHOST_V6_FLAG),
    "store_timestamp" / Int64sb,
    "store_host" / _host(STOREHOST_V6_FLAG),
    "reconsume_times" / Int32sb,
    "prepared_transaction_offset" / Int64sb,
    "body_length" / Int32sb,
    Check(this.body_length >= 0),
    "body" / Bytes(this.body_length),
    "topic" / IfThenElse(this.magic == MAGIC_V2, PascalString(Int16ub, "utf8"), PascalString(Int8ub, "utf8")),
    "properties" / PascalString(Int16ub, "utf8"),
    "_end" / Tell,
    Check(this._end - this._start == this.total_size),
)

BATCH_ENTRY = Struct(  # parsed from the entry's own bytes, so the end position is its size
    "total_size" / Int32sb,
    "magic" / Int32sb,
    "body_crc" / Int32sb,
    "flag" / Int32sb,
    "body_length" / Int32sb,
    Check(this.body_length >= 0),
    "body" / Bytes(this.body_length),
    "properties" / PascalString(Int16ub, "utf8"),
    "_end" / Tell,
    Check(this._end == this.total_size),
)


def split_frames(data: bytes) -> tuple[list[bytes], bytes]:
    """Whole frames (length prefix included) at the start of ``data``, and the incomplete rest."""
    frames: list[bytes] = []
    pos = 0
    while len(data) - pos >= 4:
        length = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        if length < 4:
            raise OracleError(f"frame length {length} at byte {pos}")
        if len(data) - pos < 4 + length:
            break
        frames.append(data[pos : pos + 4 + length])
        pos += 4 + length
    return frames, data[pos:]


def _language_name(value: int) -> str:
    return LANGUAGE_CODES[value] if 0 <= value < len(LANGUAGE_CODES) else f"UNKNOWN_{value}"


def parse_command(data: bytes) -> dict[str, Any]:
    """Decode one whole frame into its command fields plus ``body`` (bytes).

    The result holds ``serialize_type``, ``code``, ``language`` (name), ``version``, ``opaque``,
    ``flag``, ``remark``, ``ext_fields`` (``None`` when absent, as Java leaves it), ``length``,
    ``header_length`` and, for JSON headers, ``header_keys`` (their order on the wire).
    Raises OracleError on anything the spec does not allow, including trailing bytes.
    """
    try:
        frame = FRAME.parse(data)
    except ConstructError as err:
        raise OracleError(f"bad frame: {err}") from err
    if len(data) != 4 + frame.length:
        raise OracleError(f"frame of {len(data)} bytes, length prefix says {4 + frame.length}")
    if frame.serialize_type not in SERIALIZE_TYPES:
        raise OracleError(f"unknown serialize type {frame.serialize_type}")
    out: dict[str, Any] = {"serialize_type": SERIALIZE_TYPES[frame.serialize_type]}
    if frame.serialize_type == 0:
        out.update(_parse_json_header(frame.header))
    else:
        out.update(_parse_binary_header(frame.header))
    out["length"] = frame.length
    out["header_length"] = frame.header_length
    out["body"] = frame.body
    return out


def _parse_json_header(header: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise OracleError(f"bad JSON header: {err}") from err
    if not isinstance(obj, dict) or not isinstance(obj.get("code"), int):
        raise OracleError("JSON header is not an object with an integer code")
    ext = obj.get("extFields")
    if ext is not None and not (isinstance(ext, dict) and all(isinstance(v, str) for v in ext.values())):
        raise OracleError("extFields is not a map of strings")
    return {
        "code": obj["code"],
        "language": obj.get("language"),
        "version": obj.get("version"),
        "opaque": obj.get("opaque"),
        "flag": obj.get("flag", 0),
        "remark": obj.get("remark"),
        "ext_fields": ext,
        "header_keys": list(obj),
        "serialize_type_current_rpc": obj.get("serializeTypeCurrentRPC"),
    }


def _parse_binary_header(header: bytes) -> dict[str, Any]:
    try:
        parsed = ROCKETMQ_HEADER.parse(header)
    except ConstructError as err:
        raise OracleError(f"bad ROCKETMQ header: {err}") from err
    entries = parsed.ext.entries
    ext = {entry.key: entry.value for entry in entries}
    if len(ext) != len(entries):
        raise OracleError("duplicate extFields key in ROCKETMQ header")
    return {
        "code": parsed.code,
        "language": _language_name(parsed.language),
        "version": parsed.version,
        "opaque": parsed.opaque,
        "flag": parsed.flag,
        # RocketMQSerializable reads a zero length as null, for the remark and the whole map
        "remark": parsed.remark or None,
        "ext_fields": ext if parsed.ext_length else None,
    }


def code_name(code: int, flag: int) -> str:
    """The Java constant name of ``code``: a ResponseCode when ``flag`` marks a response."""
    return response_code_name(code) if flag & RPC_TYPE_RESPONSE else request_code_name(code)


def decode_properties(text: str) -> dict[str, str]:
    """Spec 4.3: ``name`` U+0001 ``value`` U+0002 per property; malformed segments are skipped."""
    props: dict[str, str] = {}
    for segment in text.split("\x02"):
        name, sep, value = segment.partition("\x01")
        if sep and name and value:
            props[name] = value
    return props


def repair_fastjson(text: str) -> str:
    """Quote the bare integer object keys fastjson writes (``{0:"a"}``) so ``json`` can read them."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        out.append(ch)
        i += 1
        if in_string:
            if ch == "\\" and i < n:
                out.append(text[i])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{,":
            j = i
            while j < n and text[j] in " \t\r\n":
                j += 1
            k = j + 1 if j < n and text[j] == "-" else j
            while k < n and text[k].isdigit():
                k += 1
            m = k
            while m < n and text[m] in " \t\r\n":
                m += 1
            if k > j and text[k - 1].isdigit() and m < n and text[m] == ":":
                out.append(text[i:j] + '"' + text[j:k] + '"')
                i = k
    return "".join(out)


def iter_records(data: bytes, *, commit_log: bool = False) -> Iterator[tuple[int, Any]]:
    """Yield ``(position, record)`` for the stored records in ``data``.

    With ``commit_log`` the scan stops at a zero size, a blank (end-of-file) marker or fewer than 8
    bytes left, as a commit-log reader does; otherwise (pull/query bodies) every byte must belong to
    a record. Raises OracleError on a malformed record.
    """
    pos = 0
    while pos < len(data):
        if commit_log:
            if len(data) - pos < 8:
                return
            size = int.from_bytes(data[pos : pos + 4], "big", signed=True)
            magic = int.from_bytes(data[pos + 4 : pos + 8], "big")
            if size == 0 or magic == BLANK_MAGIC:
                return
        elif len(data) - pos < 4:
            raise OracleError(f"{len(data) - pos} stray bytes after the records")
        size = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        if size <= 0 or pos + size > len(data):
            raise OracleError(f"record at {pos} claims {size} bytes, {len(data) - pos} left")
        try:
            record = MESSAGE_RECORD.parse(data[pos : pos + size])
        except ConstructError as err:
            raise OracleError(f"bad record at {pos}: {err}") from err
        yield pos, record
        pos += size


def _host_text(host: Any) -> dict[str, Any]:
    return {"ip": str(ipaddress.ip_address(host.ip)), "port": host.port}


def _body_fields(body: bytes, prefix: str = "body") -> dict[str, Any]:
    out: dict[str, Any] = {f"{prefix}_len": len(body), f"{prefix}_sha256": hashlib.sha256(body).hexdigest()}
    try:
        out[f"{prefix}_text"] = body.decode("utf-8") if len(body) <= 4096 else None
    except UnicodeDecodeError:
        out[f"{prefix}_text"] = None
    if out[f"{prefix}_text"] is None and len(body) <= 4096:
        out[f"{prefix}_base64"] = base64.b64encode(body).decode("ascii")
    return out


def describe_record(record: Any) -> dict[str, Any]:
    """A JSON-ready view of one parsed record: every stored field plus derived checks."""
    sysflag = record.sysflag
    body = bytes(record.body)
    store_ip = bytes(record.store_host.ip)
    out: dict[str, Any] = {
        "total_size": record.total_size,
        "magic": "v2" if record.magic == MAGIC_V2 else "v1",
        "body_crc": record.body_crc,
        "body_crc_ok": record.body_crc == zlib.crc32(body) & 0x7FFFFFFF,
        "queue_id": record.queue_id,
        "flag": record.flag,
        "queue_offset": record.queue_offset,
        "physical_offset": record.physical_offset,
        "sysflag": sysflag,
        "transaction_type": TRANSACTION_TYPES[sysflag & 0xC],
        "born_timestamp": record.born_timestamp,
        "born_host": _host_text(record.born_host),
        "store_timestamp": record.store_timestamp,
        "store_host": _host_text(record.store_host),
        "reconsume_times": record.reconsume_times,
        "prepared_transaction_offset": record.prepared_transaction_offset,
        "topic": record.topic,
        "properties": record.properties,
        "properties_map": decode_properties(record.properties),
        # offset message id (MessageDecoder.createMessageId): store ip, store port, physical offset, hex
        "offset_msg_id": (
            store_ip
            + record.store_host.port.to_bytes(4, "big", signed=True)
            + record.physical_offset.to_bytes(8, "big", signed=True)
        )
        .hex()
        .upper(),
    }
    out.update(_body_fields(body))
    if sysflag & COMPRESSED_FLAG:
        out["compression"] = COMPRESSION_TYPES[(sysflag & 0x700) >> 8]
        if out["compression"] == "ZLIB":
            try:
                out.update(_body_fields(zlib.decompress(body), "body_inflated"))
            except zlib.error:
                out["body_inflated_len"] = None
    return out


def describe_batch(body: bytes) -> list[dict[str, Any]]:
    """The entries of a SEND_BATCH_MESSAGE body (``MessageDecoder.decodeMessages``). Raises OracleError
    if malformed."""
    entries: list[dict[str, Any]] = []
    pos = 0
    while pos < len(body):
        size = int.from_bytes(body[pos : pos + 4], "big", signed=True)
        if size < 4 or pos + size > len(body):
            raise OracleError(f"batch entry at {pos} claims {size} bytes")
        try:
            entry = BATCH_ENTRY.parse(body[pos : pos + size])
        except ConstructError as err:
            raise OracleError(f"bad batch entry at {pos}: {err}") from err
        item: dict[str, Any] = {
            "total_size": entry.total_size,
            "magic": entry.magic,
            "body_crc": entry.body_crc,
            "flag": entry.flag,
            "properties": entry.properties,
            "properties_map": decode_properties(entry.properties),
        }
        item.update(_body_fields(bytes(entry.body)))
        entries.append(item)
        pos += size
    return entries


def describe_body(body: bytes, *, code: int, flag: int, request_code: int | None) -> dict[str, Any]:
    """Readable views of a command body, chosen by what the command is.

    Stored records for successful PULL/LITE_PULL/QUERY/VIEW responses (``request_code`` names the
    request answered) and CHECK_TRANSACTION_STATE; batch entries for SEND_BATCH_MESSAGE; otherwise the
    UTF-8 text and, if it is JSON (after quoting fastjson's bare integer keys), the parsed value.
    """
    is_response = bool(flag & RPC_TYPE_RESPONSE)
    out: dict[str, Any] = {"body_len": len(body), "body_sha256": hashlib.sha256(body).hexdigest()}
    if not body:
        return out
    if (is_response and code == 0 and request_code in RECORD_RESPONSE_REQUESTS) or (
        not is_response and code in RECORD_REQUESTS
    ):
        out["body_records"] = [describe_record(r) for _, r in iter_records(body)]
        return out
    if not is_response and code == SEND_BATCH_MESSAGE:
        out["body_batch"] = describe_batch(body)
        return out
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        if len(body) <= 4096:
            out["body_base64"] = base64.b64encode(body).decode("ascii")
        return out
    out["body_text"] = text
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            out["body_json"] = json.loads(text)
        except json.JSONDecodeError:
            try:
                out["body_json"] = json.loads(repair_fastjson(text))
                out["body_json_repaired"] = True  # fastjson wrote bare integer keys
            except json.JSONDecodeError:
                pass
    return out


def describe_frame(data: bytes, request_code: int | None = None) -> dict[str, Any]:
    """The JSON sidecar of one frame: command fields, names, flags and body views.

    ``request_code`` is the code of the request a response answers (matched by opaque on the same
    connection by the caller); it names the request and selects the body decoder.
    """
    cmd = parse_command(data)
    body = cmd.pop("body")
    flag = cmd["flag"]
    out: dict[str, Any] = {
        "serialize_type": cmd["serialize_type"],
        "code": cmd["code"],
        "code_name": code_name(cmd["code"], flag),
        "language": cmd["language"],
        "version": cmd["version"],
        "opaque": cmd["opaque"],
        "flag": flag,
        "is_response": bool(flag & RPC_TYPE_RESPONSE),
        "is_oneway": bool(flag & RPC_ONEWAY),
        "remark": cmd["remark"],
        "ext_fields": cmd["ext_fields"],
        "length": cmd["length"],
        "header_length": cmd["header_length"],
    }
    if "header_keys" in cmd:
        out["header_keys"] = cmd["header_keys"]
        out["serialize_type_current_rpc"] = cmd["serialize_type_current_rpc"]
    if out["is_response"] and request_code is not None:
        out["request_code"] = request_code
        out["request_code_name"] = request_code_name(request_code)
    out.update(describe_body(body, code=cmd["code"], flag=flag, request_code=request_code))
    return out
