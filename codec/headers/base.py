"""Typed custom headers and their one conversion to and from ``extFields``.

Java flattens a header object into ``extFields`` with its field names as keys and every value as
a string (``RemotingCommand.makeCustomHeaderToNet``) and rebuilds it on the other side. Here a
header is a slotted dataclass whose fields name their wire key with :func:`wire`; the table that
converts them is built once per class. Conversion rules (``RemotingCommand.decodeCommandCustomHeader``):

* ``str`` as is; ``int`` decimal; ``bool`` ``"true"``/``"false"`` (decoding: case-insensitive
  ``true``, anything else is false, as ``Boolean.parseBoolean``); ``float`` Java decimal.
* Only non-``None`` values are written.
* A field marked required (``@CFNotNull`` in Java) that is missing raises :class:`HeaderError`;
  a malformed number raises it too, and so does one outside the range of the Java field's type:
  ``Integer.parseInt`` for ``int``/``Integer`` fields (declared ``wire(..., int32=True)``),
  ``Long.parseLong`` for the others. The Java broker answers such a request ``SYSTEM_ERROR``
  (``NettyRemotingAbstract.processRequestCommand`` turns the ``NumberFormatException`` into one);
  here the dispatcher does the same from the :class:`HeaderError`, with a rate-limited log line.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

from codec.errors import HeaderError

_MISSING = dataclasses.MISSING


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1  # java.lang.Integer.MIN_VALUE / MAX_VALUE
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # java.lang.Long.MIN_VALUE / MAX_VALUE
_MAX_DIGITS = 20  # a sign and 19 digits hold every long; longer text is refused before int()


def wire(key: str, *, required: bool = True, default: Any = None, int32: bool = False) -> Any:
    """Declare a header field: its ``extFields`` key, whether Java requires it, its default, and
    for an ``int`` field whether Java declares it ``int``/``Integer`` (else ``long``/``Long``)."""
    return dataclasses.field(default=default, metadata={"key": key, "required": required, "int32": int32})


def _parse_digits(value: str) -> int:
    # Stricter than int(): Java's parse methods take no spaces, underscores or non-ASCII digits.
    if value.isdigit() and value.isascii() and len(value) <= _MAX_DIGITS:
        return int(value)  # the usual case, unsigned (several per send header)
    digits = value[1:] if value[:1] in ("-", "+") else value
    if not (digits.isascii() and digits.isdigit()) or len(value) > _MAX_DIGITS:
        raise ValueError(value)
    return int(value)


def _parse_int(value: str) -> int:
    """``Long.parseLong``: a decimal within the 64-bit range."""
    number = _parse_digits(value)
    if not INT64_MIN <= number <= INT64_MAX:
        raise ValueError(value)
    return number


def _parse_int32(value: str) -> int:
    """``Integer.parseInt``: a decimal within the 32-bit range."""
    number = _parse_digits(value)
    if not INT32_MIN <= number <= INT32_MAX:
        raise ValueError(value)
    return number


def _parse_bool(value: str) -> bool:
    return value.lower() == "true"


def _format_bool(value: bool) -> str:
    return "true" if value else "false"


def _format_float(value: float) -> str:
    # Java's Double.toString for the values headers carry (rates, tps) reads the same as repr.
    return repr(float(value))


_PARSERS: dict[type, Callable[[str], Any]] = {str: str, int: _parse_int, bool: _parse_bool, float: float}
_FORMATTERS: dict[type, Callable[[Any], str]] = {
    str: str,
    int: str,
    bool: _format_bool,
    float: _format_float,
}


class _Field(typing.NamedTuple):
    attr: str
    key: str
    kind: type
    required: bool
    int32: bool


def _base_type(annotation: Any) -> type:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = args[0] if args else annotation
    if base not in _PARSERS:
        raise TypeError(f"unsupported header field type {annotation!r}")
    return typing.cast(type, base)


Decoder = Callable[[Mapping[str, str]], Any]


def _compile_decoder(cls: type[CustomHeader], table: tuple[_Field, ...]) -> Decoder:
    """Generate ``decode(ext)`` for one header class: straight-line code, no per-field lookups.

    Per-request cost matters here (a send header is decoded for every message): the generated
    function is several times faster than a generic loop over the field table.
    """
    lines = ["def decode(ext):", "    get = ext.get", "    kw = {}"]
    for i, (attr, key, kind, required, int32) in enumerate(table):
        lines.append(f"    v = get({key!r})")
        if required:
            lines.append(f"    if v is None: raise HeaderError(_missing({key!r}))")
            indent = "    "
        else:
            lines.append("    if v is not None:")
            indent = "        "
        if kind is str:
            lines.append(f"{indent}kw[{attr!r}] = v")
        else:
            lines.append(f"{indent}try: kw[{attr!r}] = p{i}(v)")
            kind_name = kind.__name__
            if kind is int:
                kind_name = "32-bit int" if int32 else "64-bit int"
            malformed = f"_malformed({key!r}, {kind_name!r}, v)"
            lines.append(f"{indent}except ValueError: raise HeaderError({malformed}) from None")
    lines.append("    return cls(**kw)")
    namespace: dict[str, Any] = {
        "cls": cls,
        "HeaderError": HeaderError,
        "_missing": lambda key: f"{cls.__name__}: missing required field {key!r}",
        "_malformed": lambda key, kind, v: f"{cls.__name__}: field {key!r} is not a {kind}: {v!r}",
    }
    namespace.update({f"p{i}": _parse_int32 if f.int32 else _PARSERS[f.kind] for i, f in enumerate(table)})
    exec("\n".join(lines), namespace)  # code built from our own class definitions only
    return typing.cast(Decoder, namespace["decode"])


class CustomHeader:
    """Base of every typed header. Subclasses are ``@dataclass(slots=True)`` classes."""

    __slots__ = ()
    _fields_table: ClassVar[tuple[_Field, ...] | None] = None
    _decoder: ClassVar[Decoder | None] = None

    @classmethod
    def _table(cls) -> tuple[_Field, ...]:
        table = cls.__dict__.get("_fields_table")
        if table is None:
            hints = typing.get_type_hints(cls)
            table = tuple(
                _Field(
                    f.name,
                    f.metadata["key"],
                    _base_type(hints[f.name]),
                    f.metadata["required"],
                    f.metadata.get("int32", False),
                )
                for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                if "key" in f.metadata
            )
            cls._fields_table = table
        return table

    @classmethod
    def from_ext_fields(cls, ext_fields: Mapping[str, str] | None) -> Self:
        """Build the header from a command's ``extFields``; raises :class:`HeaderError`."""
        decoder = cls.__dict__.get("_decoder")
        if decoder is None:
            decoder = _compile_decoder(cls, cls._table())
            cls._decoder = decoder
        return typing.cast(Self, decoder(ext_fields or {}))

    def to_ext_fields(self) -> dict[str, str]:
        """The header as the string map that travels in ``extFields`` (``None`` values left out)."""
        out: dict[str, str] = {}
        for attr, key, kind, _required, _int32 in self._table():
            value = getattr(self, attr)
            if value is not None:
                out[key] = value if kind is str else _FORMATTERS[kind](value)
        return out


@dataclasses.dataclass(slots=True)
class EmptyHeader(CustomHeader):
    """A header class without fields of its own (e.g. ``HeartbeatRequestHeader``)."""

    broker_name: str | None = wire("bname", required=False)
