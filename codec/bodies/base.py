"""JSON bodies as typed dataclasses, with one generic conversion.

Each body is a ``@dataclass(slots=True)`` subclass of :class:`JsonBody`; a field's JSON key is
its Java property name, given with :func:`jfield` (or, by default, the camelCase of the Python
name). Supported field types: ``str``, ``int``, ``bool``, ``float``, ``X | None``, ``list[X]``,
``dict[str, X]``, ``dict[int, X]`` (keys written quoted, read from quoted or bare integers),
``Any`` (kept as parsed) and nested ``JsonBody`` types. Reading is as lenient as fastjson:
unknown keys are ignored, missing keys keep the field's default, ``null`` means the default;
a value of the wrong shape raises :class:`BodyError`. ``None`` fields are left out on writing.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Self

from codec import fastjson
from codec.errors import BodyError


def jfield(key: str | None = None, *, default: Any = None, factory: Callable[[], Any] | None = None) -> Any:
    """Declare a body field with its JSON key (default: camelCase of the attribute name)."""
    meta = {"key": key} if key else {}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


Reader = Callable[[Any], Any]
Writer = Callable[[Any], Any]


def _converters(tp: Any) -> tuple[Reader, Writer]:
    """Build (read, write) functions for a field type."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        read, write = _converters(inner[0])
        return (lambda v: None if v is None else read(v)), (lambda v: None if v is None else write(v))
    if tp is Any:
        return (lambda v: v), (lambda v: v)
    if isinstance(tp, type) and issubclass(tp, JsonBody):
        return tp.from_obj, (lambda v: v.to_obj())
    if origin in (list, set, frozenset):
        read_item, write_item = _converters(args[0])

        def read_list(v: Any) -> list[Any]:
            if not isinstance(v, list):
                raise BodyError(f"expected a JSON array, got {type(v).__name__}")
            return [read_item(x) for x in v]

        return read_list, (lambda v: [write_item(x) for x in v])
    if origin is dict:
        key_type, value_type = args
        read_value, write_value = _converters(value_type)
        read_key: Callable[[str], Any] = _read_int if key_type is int else str

        def read_dict(v: Any) -> dict[Any, Any]:
            if not isinstance(v, dict):
                raise BodyError(f"expected a JSON object, got {type(v).__name__}")
            return {read_key(k): read_value(x) for k, x in v.items()}

        return read_dict, (lambda v: {str(k): write_value(x) for k, x in v.items()})
    if tp is bool:
        return _read_bool, (lambda v: v)
    if tp is int:
        return _read_int, (lambda v: v)
    if tp is float:
        return _read_float, (lambda v: v)
    if tp is str:
        return _read_str, (lambda v: v)
    raise TypeError(f"unsupported body field type {tp!r}")


def _read_int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int | str):
        raise BodyError(f"expected an integer, got {v!r}")
    try:
        return int(v)
    except ValueError as err:
        raise BodyError(f"expected an integer, got {v!r}") from err


def _read_float(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise BodyError(f"expected a number, got {v!r}")
    try:
        return float(v)
    except ValueError as err:
        raise BodyError(f"expected a number, got {v!r}") from err


def _read_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        return v.lower() == "true"
    if isinstance(v, int):
        return v != 0
    raise BodyError(f"expected a boolean, got {v!r}")


def _read_str(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, int | float) and not isinstance(v, bool):
        return str(v)
    raise BodyError(f"expected a string, got {v!r}")


class _Spec(typing.NamedTuple):
    attr: str
    key: str
    read: Reader
    write: Writer


class JsonBody:
    """Base of the JSON bodies; see the module docstring."""

    __slots__ = ()
    _specs: ClassVar[tuple[_Spec, ...] | None] = None

    @classmethod
    def _table(cls) -> tuple[_Spec, ...]:
        specs = cls.__dict__.get("_specs")
        if specs is None:
            hints = typing.get_type_hints(cls)
            specs = tuple(
                _Spec(f.name, f.metadata.get("key") or _camel(f.name), *_converters(hints[f.name]))
                for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            )
            cls._specs = specs
        return specs

    @classmethod
    def from_obj(cls, obj: Any) -> Self:
        """Build from a parsed JSON object; raises :class:`BodyError`."""
        if not isinstance(obj, dict):
            raise BodyError(f"{cls.__name__}: expected a JSON object, got {type(obj).__name__}")
        values: dict[str, Any] = {}
        for attr, key, read, _write in cls._table():
            raw = obj.get(key)
            if raw is not None:
                try:
                    values[attr] = read(raw)
                except BodyError as err:
                    raise BodyError(f"{cls.__name__}.{key}: {err}") from err
        return cls(**values)

    def to_obj(self) -> dict[str, Any]:
        """A JSON-ready dict (``None`` fields left out)."""
        out: dict[str, Any] = {}
        for attr, key, _read, write in self._table():
            value = getattr(self, attr)
            if value is not None:
                out[key] = write(value)
        return out

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str) -> Self:
        """Parse a body (standard JSON or fastjson's default form); raises :class:`BodyError`."""
        return cls.from_obj(fastjson.loads(data))

    def encode(self) -> bytes:
        return fastjson.dumps(self.to_obj())
