"""The JSON header (serialize type 0), as fastjson writes and reads it.

Java writes the bean properties in alphabetical order and leaves out null ``remark`` and
``extFields``; ``language`` and ``serializeTypeCurrentRPC`` are enum names. We write the same
shape, so a command decoded from Java bytes re-encodes to the same bytes (``extFields`` keeps the
order it arrived in). Decoding is as lenient as fastjson: unknown keys are ignored, missing keys
take Java's defaults.
"""

from __future__ import annotations

from typing import Any

import orjson

from codec.codes import LanguageCode, SerializeType
from codec.command import RemotingCommand
from codec.errors import FrameError

_LANGUAGE_BY_NAME = {member.name: int(member) for member in LanguageCode}
_NAME_BY_LANGUAGE = {int(member): member.name for member in LanguageCode}
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def encode_header(cmd: RemotingCommand) -> bytes:
    """Encode the header of ``cmd`` as fastjson would."""
    obj: dict[str, Any] = {"code": cmd.code}
    if cmd.ext_fields is not None:
        obj["extFields"] = cmd.ext_fields
    obj["flag"] = cmd.flag
    obj["language"] = _NAME_BY_LANGUAGE.get(cmd.language, "OTHER")
    obj["opaque"] = cmd.opaque
    if cmd.remark is not None:
        obj["remark"] = cmd.remark
    obj["serializeTypeCurrentRPC"] = "JSON"
    obj["version"] = cmd.version
    return orjson.dumps(obj)


def decode_header(data: bytes | memoryview, body: bytes) -> RemotingCommand:
    """Decode a JSON header; raises :class:`FrameError` when it is not a JSON command object."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise FrameError(f"invalid JSON header: {err}") from err
    if not isinstance(obj, dict):
        raise FrameError("JSON header is not an object")
    ext = obj.get("extFields")
    if ext is not None:
        if not isinstance(ext, dict):
            raise FrameError("extFields is not an object")
        # Java always sends string values; only copy the map when something needs converting.
        for value in ext.values():
            if type(value) is not str:
                ext = {str(k): _ext_value(v) for k, v in ext.items() if v is not None}
                break
    remark = obj.get("remark")
    return RemotingCommand(
        _int(obj, "code"),
        language=_language(obj.get("language")),
        version=_int(obj, "version"),
        opaque=_int(obj, "opaque"),
        flag=_int(obj, "flag"),
        remark=None if remark is None else str(remark),
        ext_fields=ext,
        body=body,
        serialize_type=SerializeType.JSON,
    )


def _int(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key, 0)
    if type(value) is int and _INT32_MIN <= value <= _INT32_MAX:
        return value
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise FrameError(f"header field {key} is not an integer: {value!r}")
    try:
        number = int(value)
    except ValueError as err:
        raise FrameError(f"header field {key} is not an integer: {value!r}") from err
    if not _INT32_MIN <= number <= _INT32_MAX:
        raise FrameError(f"header field {key} out of int32 range: {number}")
    return number


def _language(value: object) -> int:
    if value == "JAVA":
        return 0
    if value is None:
        return LanguageCode.JAVA
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    # Unknown names (a newer client) are kept as OTHER rather than refused, as fastjson would
    # fail only on the enum and RocketMQ then logs and closes; being lenient costs nothing here.
    return _LANGUAGE_BY_NAME.get(str(value), LanguageCode.OTHER)


def _ext_value(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise FrameError(f"extFields value is not a string: {value!r}")
