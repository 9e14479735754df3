"""A RocketMQ store directory seen read-only: which files exist, how they are named, how to map them.

Layout (``DefaultMessageStore``; the same for our store and the Java broker's)::

    <storePathRootDir>/
        commitlog/<20-digit start offset>         commit-log segments (``CommitLog``, ``MappedFileQueue``)
        consumequeue/<topic>/<queueId>/<20 digits> consume-queue files of 20-byte units (``ConsumeQueue``)
        config/consumerOffset.json                 committed offsets (``ConsumerOffsetManager``)

A segment file is named by the global commit-log offset of its first byte
(``UtilAll.offset2FileName``) and is preallocated to its full size, so the bytes after the last
record are zeros (or a blank end-of-file marker, see :mod:`spark.records`).

Everything here opens files with ``O_RDONLY`` and maps them ``ACCESS_READ``: reading never takes
the store's ``lock`` file, never creates, truncates or writes anything in a store directory, and
so can run while a broker (ours or Apache RocketMQ's) is writing the same files.
"""

from __future__ import annotations

import glob
import json
import mmap
import os
from dataclasses import dataclass

COMMIT_LOG_DIR = "commitlog"
CONSUME_QUEUE_DIR = "consumequeue"
CONFIG_DIR = "config"
FILE_NAME_DIGITS = 20  # UtilAll.offset2FileName


class StoreReadError(ValueError):
    """A store path that cannot be read; the message is one line meant for the user."""


@dataclass(frozen=True)
class Segment:
    """One commit-log file: its path, the global offset of its first byte and its length in bytes."""

    path: str
    start: int
    size: int

    @property
    def end(self) -> int:
        return self.start + self.size


def is_segment_name(name: str) -> bool:
    return len(name) == FILE_NAME_DIGITS and name.isdigit()


def store_paths(options: dict[str, str]) -> list[str]:
    """The store directories named by ``load(path)`` / ``load([paths])`` (globs expanded), checked.

    Spark passes one path as option ``path`` and several as ``paths`` (a JSON array). Raises
    :class:`StoreReadError` for no path, a path that matches nothing, or a directory that is not
    a store (it has no ``commitlog/``).
    """
    raw: list[str] = []
    if options.get("paths"):
        try:
            parsed = json.loads(options["paths"])
        except ValueError as err:
            raise StoreReadError(f"rocketmq: option paths is not a JSON list: {options['paths']!r}") from err
        raw.extend(str(p) for p in (parsed if isinstance(parsed, list) else [parsed]))
    if options.get("path"):
        raw.append(options["path"])
    if not raw:
        raise StoreReadError("rocketmq: no store directory given: use load(STORE_DIR)")
    paths: list[str] = []
    for pattern in raw:
        if glob.has_magic(pattern):
            matched = sorted(glob.glob(pattern))
            if not matched:
                raise StoreReadError(f"rocketmq: no store directory matches {pattern!r}")
        else:
            matched = [pattern]
        for path in matched:
            check_store(path)
            paths.append(os.path.abspath(path))
    return paths


def check_store(path: str) -> None:
    """Raise :class:`StoreReadError` unless ``path`` is a directory holding ``commitlog/``."""
    if not os.path.exists(path):
        raise StoreReadError(f"rocketmq: store directory {path!r} does not exist")
    if not os.path.isdir(path):
        raise StoreReadError(f"rocketmq: {path!r} is not a directory")
    if not os.path.isdir(os.path.join(path, COMMIT_LOG_DIR)):
        raise StoreReadError(
            f"rocketmq: {path!r} is not a RocketMQ store directory (it has no {COMMIT_LOG_DIR}/)"
        )


def list_segments(store: str) -> list[Segment]:
    """The commit-log segments of ``store`` in offset order; other files in ``commitlog/`` are ignored."""
    directory = os.path.join(store, COMMIT_LOG_DIR)
    try:
        names = os.listdir(directory)
    except FileNotFoundError as err:
        raise StoreReadError(f"rocketmq: {store!r} has no {COMMIT_LOG_DIR}/ directory") from err
    segments = []
    for name in names:
        if not is_segment_name(name):
            continue
        path = os.path.join(directory, name)
        try:
            size = os.path.getsize(path)
        except FileNotFoundError:
            continue  # deleted by the broker's cleanup while we listed
        segments.append(Segment(path, int(name), size))
    segments.sort(key=lambda s: s.start)
    return segments


def open_map(path: str) -> mmap.mmap | None:
    """Map ``path`` read-only; ``None`` for an empty or vanished file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        if os.fstat(fd).st_size == 0:
            return None
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)


def broker_name(store: str) -> str:
    """The value of the ``broker`` column for rows of ``store``: its absolute path."""
    return os.path.abspath(store)
