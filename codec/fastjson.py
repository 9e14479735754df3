"""JSON as the Java side writes and reads it with fastjson.

Writing: :func:`dumps` gives compact JSON with integer map keys quoted (what the Java NameServer
sends to every client since 4.9.4, and what fastjson parses on every client line).
:func:`dumps_object_keys` writes fastjson's non-standard object-valued keys
(``{{"brokerName":"b","queueId":0,"topic":"t"}:{…}}``) that ``mqadmin`` expects for
``Map<MessageQueue, …>`` fields.

Reading: :func:`loads` accepts standard JSON fast (orjson) and falls back to a lenient parser for
what fastjson writes by default: bare integer (or identifier) keys such as ``{0:"1.2.3.4:10911"}``
and object-valued keys. An object key becomes the compact JSON text of that object (keys
sorted), so the result is always a plain ``dict[str, …]``. Errors raise :class:`BodyError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from codec.errors import BodyError

_DUMP_OPTIONS = orjson.OPT_NON_STR_KEYS


def dumps(obj: Any) -> bytes:
    """Compact JSON; ``int`` keys are written quoted."""
    try:
        return orjson.dumps(obj, option=_DUMP_OPTIONS)
    except TypeError as err:
        raise BodyError(f"value cannot be written as JSON: {err}") from err


def dumps_object_keys(entries: Iterable[tuple[dict[str, Any], Any]]) -> bytes:
    """A JSON object whose keys are themselves objects, fastjson style (see module docstring)."""
    parts = [dumps(key) + b":" + dumps(value) for key, value in entries]
    return b"{" + b",".join(parts) + b"}"


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON written by Java (standard, or fastjson's unquoted and object keys)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as err:
            raise BodyError(f"JSON body is not UTF-8: {err}") from err
    parser = _LenientParser(text)
    value = parser.value()
    parser.skip_ws()
    if parser.pos != len(text):
        raise BodyError(f"trailing data after JSON value at {parser.pos}")
    return value


class _LenientParser:
    """Recursive-descent JSON parser that also takes bare and object-valued keys."""

    __slots__ = ("depth", "pos", "text")

    _MAX_DEPTH = 200

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def fail(self, what: str) -> BodyError:
        return BodyError(f"invalid JSON at {self.pos}: {what}")

    def skip_ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        self.pos = pos

    def value(self) -> Any:
        self.skip_ws()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end")
        ch = self.text[self.pos]
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self.array()
        if ch == '"':
            return self.string()
        return self.scalar()

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > self._MAX_DEPTH:
            raise self.fail("nesting too deep")

    def _leave_at(self, close: str) -> bool:
        """Consume ``close`` and leave the object or array when it comes next."""
        if self.text.startswith(close, self.pos):
            self.pos += 1
            self.depth -= 1
            return True
        return False

    def _more(self, close: str) -> bool:
        """After an item: True past a comma, False past ``close`` (the container is left)."""
        self.skip_ws()
        if self.text.startswith(",", self.pos):
            self.pos += 1
            return True
        if self._leave_at(close):
            return False
        raise self.fail(f"expected ',' or '{close}'")

    def obj(self) -> dict[str, Any]:
        self._enter()
        self.pos += 1
        out: dict[str, Any] = {}
        self.skip_ws()
        if self._leave_at("}"):
            return out
        while True:
            self.skip_ws()
            key = self.key()
            self.skip_ws()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            out[key] = self.value()
            if not self._more("}"):
                return out

    def key(self) -> str:
        if self.pos >= len(self.text):
            raise self.fail("unexpected end in object")
        ch = self.text[self.pos]
        if ch == '"':
            return self.string()
        if ch == "{":
            return orjson.dumps(self.obj(), option=orjson.OPT_SORT_KEYS).decode()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "-_.$+"):
            self.pos += 1
        if start == self.pos:
            raise self.fail("expected a key")
        return self.text[start : self.pos]

    def array(self) -> list[Any]:
        self._enter()
        self.pos += 1
        out: list[Any] = []
        self.skip_ws()
        if self._leave_at("]"):
            return out
        while True:
            out.append(self.value())
            if not self._more("]"):
                return out

    def string(self) -> str:
        # Find the closing quote, then let orjson do the unescaping of this one literal.
        text, pos = self.text, self.pos + 1
        while True:
            end = text.find('"', pos)
            if end < 0:
                raise self.fail("unterminated string")
            backslashes = 0
            i = end - 1
            while text[i] == "\\":
                backslashes += 1
                i -= 1
            if backslashes % 2 == 0:
                break
            pos = end + 1
        literal = text[self.pos : end + 1]
        self.pos = end + 1
        try:
            return str(orjson.loads(literal))
        except orjson.JSONDecodeError as err:
            raise self.fail(f"bad string literal: {err}") from err

    def scalar(self) -> Any:
        start = self.pos
        text = self.text
        while self.pos < len(text) and text[self.pos] not in ",:]} \t\r\n":
            self.pos += 1
        token = text[start : self.pos]
        if token == "true":
            return True
        if token == "false":
            return False
        if token == "null":
            return None
        try:
            return orjson.loads(token)
        except orjson.JSONDecodeError as err:
            raise self.fail(f"bad token {token!r}") from err
