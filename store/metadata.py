"""The broker's metadata JSON files in ``<storePathRootDir>/config/`` (``ConfigManager``).

========================  ==================================================================
file                      content (written by TopicConfigManager, ConsumerOffsetManager, …)
========================  ==================================================================
topics.json               ``{"dataVersion":{…},"topicConfigTable":{topic:{…TopicConfig…}}}``
consumerOffset.json       ``{"offsetTable":{"topic@group":{queueId:offset}}, …}``
subscriptionGroup.json    ``{"subscriptionGroupTable":{group:{…}},"forbiddenTable":{…}, …}``
delayOffset.json          ``{"offsetTable":{level:offset}, "dataVersion":{…}}``
========================  ==================================================================

Reading accepts standard JSON and what fastjson writes by default (unquoted integer keys such as
``{0:12}``, :func:`codec.fastjson.loads`), and falls back to ``<name>.bak`` when the file is
missing, empty, unparsable or refused by the caller's ``validate``, as ``ConfigManager.load``
does, with a WARNING naming the file and why. Writing is pretty-printed like fastjson (a newline
and one tab per level, no space after ``:``, integer keys quoted, which fastjson reads back as
integers) and atomic: the previous content is first copied to ``<name>.bak``, then the new content
goes to a temp file that is fsynced and renamed over ``<name>``, and the directory is fsynced
(:func:`write_atomically`). Each temp file has a unique name (``tempfile.mkstemp`` in the same
directory), so two processes or two gateways in one process persisting the same file at once
never write into each other's temp file; the last rename wins and both leave a whole file. A
crash at any point leaves either the old or the new file, and a ``.bak`` no older than the
previous version.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

from codec.errors import BodyError
from codec.fastjson import loads
from store.errors import StoreCorruptionError
from store.mapped_file import wrap_os_error

TOPICS_JSON = "topics.json"
CONSUMER_OFFSET_JSON = "consumerOffset.json"
SUBSCRIPTION_GROUP_JSON = "subscriptionGroup.json"
DELAY_OFFSET_JSON = "delayOffset.json"
BAK_SUFFIX = ".bak"

logger = logging.getLogger(__name__)


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise wrap_os_error(err, f"read {path}") from err
    text = data.decode("utf-8", errors="strict") if data else ""
    return text if text.strip() else None


def load_json_file(path: str, validate: Callable[[Any], object] | None = None) -> Any | None:
    """The parsed document at ``path`` (or its ``.bak``); ``None`` when neither has content.

    ``validate(doc)`` may raise ``ValueError`` / ``TypeError`` / ``BodyError`` /
    ``StoreCorruptionError`` to refuse a document that parses but is not sound; the ``.bak`` is
    then tried. Falling back is logged at WARNING. Raises :class:`StoreCorruptionError` when
    content exists but neither file is usable.
    """
    errors: list[str] = []
    for candidate in (path, path + BAK_SUFFIX):
        try:
            text = _read_text(candidate)
        except UnicodeDecodeError as err:
            errors.append(f"{candidate}: not UTF-8 ({err})")
            continue
        if text is None:
            if candidate == path:
                errors.append(f"{candidate}: missing or empty")
            continue
        try:
            doc = loads(text)
            if validate is not None:
                validate(doc)
        except (BodyError, StoreCorruptionError, ValueError, TypeError) as err:
            errors.append(f"{candidate}: {err}")
            continue
        if candidate != path:
            logger.warning("%s unusable (%s): loaded %s instead", path, errors[0], candidate)
        return doc
    if len(errors) > 1 or not errors[0].endswith("missing or empty"):
        raise StoreCorruptionError("; ".join(errors))
    return None


def pretty_json(obj: Any) -> str:
    """fastjson's ``toJSONString(obj, true)`` layout (see the module docstring)."""
    parts: list[str] = []
    _pretty(obj, 0, parts)
    return "".join(parts)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    return _quote(str(value))


def _quote(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch < " ":
            out.append(
                {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}.get(ch, f"\\u{ord(ch):04x}")
            )
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _pretty(obj: Any, depth: int, parts: list[str]) -> None:
    if isinstance(obj, Mapping):
        if not obj:
            parts.append("{}")
            return
        parts.append("{")
        for i, (key, value) in enumerate(obj.items()):
            parts.append("," if i else "")
            parts.append("\n" + "\t" * (depth + 1) + _quote(str(key)) + ":")
            _pretty(value, depth + 1, parts)
        parts.append("\n" + "\t" * depth + "}")
    elif isinstance(obj, list | tuple | set | frozenset):
        items = sorted(obj) if isinstance(obj, set | frozenset) else list(obj)
        if not items:
            parts.append("[]")
            return
        parts.append("[")
        for i, value in enumerate(items):
            parts.append("," if i else "")
            parts.append("\n" + "\t" * (depth + 1))
            _pretty(value, depth + 1, parts)
        parts.append("\n" + "\t" * depth + "]")
    else:
        parts.append(_scalar(obj))


def _write_atomically(path: str, data: bytes) -> None:
    directory, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory or ".")
    try:
        try:
            os.fchmod(fd, 0o644)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def persist_json_file(path: str, obj: Any) -> None:
    """Write ``obj`` to ``path`` atomically, keeping the previous content in ``.bak``.

    Raises :class:`StoreIOError` (:class:`DiskFullError` for ENOSPC); the old file is then intact.
    """
    write_atomically(path, pretty_json(obj).encode("utf-8"))


def write_atomically(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, the previous content kept in ``<path>.bak``.

    Used for every small persisted file (the broker's ``config/*.json``, the NameServer's
    ``kvConfig.json``). Raises :class:`StoreIOError` (:class:`DiskFullError` for ENOSPC).
    """
    directory = os.path.dirname(path) or "."
    try:
        os.makedirs(directory, exist_ok=True)
        try:
            with open(path, "rb") as f:
                previous = f.read()
        except FileNotFoundError:
            previous = b""
        if previous.strip() and previous != data:
            _write_atomically(path + BAK_SUFFIX, previous)
        _write_atomically(path, data)
        _fsync_dir(directory)
    except OSError as err:
        raise wrap_os_error(err, f"persist {path}") from err


class ConfigFiles:
    """The ``config/`` directory of a store: load and persist its JSON documents by file name."""

    def __init__(self, config_dir: str) -> None:
        self.config_dir = config_dir

    def path(self, name: str) -> str:
        return os.path.join(self.config_dir, name)

    def load(self, name: str, validate: Callable[[Any], object] | None = None) -> Any | None:
        return load_json_file(self.path(name), validate)

    def persist(self, name: str, obj: Any) -> None:
        persist_json_file(self.path(name), obj)


# -- helpers for the documents' integer-keyed maps ----------------------------------------------


def int_keyed(table: Mapping[str, Any] | None) -> dict[int, int]:
    """``{"0": 12}`` or fastjson's ``{0: 12}`` (both parse to string keys) → ``{0: 12}``."""
    out: dict[int, int] = {}
    for key, value in (table or {}).items():
        try:
            out[int(key)] = int(value)
        except (TypeError, ValueError) as err:
            raise StoreCorruptionError(f"expected integer key and value, got {key!r}: {value!r}") from err
    return out


def consumer_offsets(doc: Any) -> dict[str, dict[int, int]]:
    """``consumerOffset.json``'s ``offsetTable``: ``"topic@group"`` → queue id → offset."""
    table = (doc or {}).get("offsetTable") or {}
    return {key: int_keyed(value) for key, value in table.items()}


def delay_offsets(doc: Any) -> dict[int, int]:
    """``delayOffset.json``'s ``offsetTable``: delay level → next offset of its schedule queue."""
    return int_keyed((doc or {}).get("offsetTable"))


def topic_config_entry(
    topic: str, read_queue_nums: int = 4, write_queue_nums: int = 4, perm: int = 6
) -> dict[str, Any]:
    """One ``topicConfigTable`` value with the Java defaults (``TopicConfig``)."""
    return {
        "attributes": {},
        "order": False,
        "perm": perm,
        "readQueueNums": read_queue_nums,
        "topicFilterType": "SINGLE_TAG",
        "topicName": topic,
        "topicSysFlag": 0,
        "writeQueueNums": write_queue_nums,
    }


def data_version(counter: int, timestamp_ms: int) -> dict[str, int]:
    return {"counter": counter, "stateVersion": 0, "timestamp": timestamp_ms}
