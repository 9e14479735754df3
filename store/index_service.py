"""The index files of a store, oldest first (``index/IndexService``): which file takes the next
keys, rolling to a new one when the last is full, and key queries across files. The file format and
recovery rules are in :mod:`store.index_file`."""

from __future__ import annotations

import os
from collections.abc import Callable

from store.index_file import IndexFile, index_file_name, index_key_hash


class IndexService:
    """The index files of a store, oldest first (``IndexService``). Single writer."""

    def __init__(
        self,
        directory: str,
        hash_slot_num: int,
        index_num: int,
        clock: Callable[[], int],
        preallocate: bool = True,
    ) -> None:
        self.directory = directory
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.clock = clock
        self.preallocate = preallocate
        self.files: list[IndexFile] = []
        self.on_file_full: Callable[[int], None] | None = None  # gets the full file's end timestamp
        self._last_key = ""  # the last key built and its index_key_hash
        self._last_hash = index_key_hash("")

    def load(self) -> None:
        os.makedirs(self.directory, exist_ok=True)
        for name in sorted(os.listdir(self.directory)):
            if name.isdigit():
                self.files.append(
                    IndexFile.open(os.path.join(self.directory, name), self.hash_slot_num, self.index_num)
                )

    def close(self) -> None:
        for f in self.files:
            f.write_header()
            f.close()
        self.files = []

    @property
    def end_phy_offset(self) -> int:
        return self.files[-1].end_phy_offset if self.files else 0

    def writable_file(self) -> IndexFile:
        last = self.files[-1] if self.files else None
        if last is not None and not last.is_write_full:
            return last
        end_phy = last.end_phy_offset if last else 0
        end_ts = last.end_timestamp if last else 0
        now = self.clock()
        path = os.path.join(self.directory, index_file_name(now))
        while os.path.exists(path):  # two files within one millisecond
            now += 1
            path = os.path.join(self.directory, index_file_name(now))
        f = IndexFile.create(path, self.hash_slot_num, self.index_num, end_phy, end_ts, self.preallocate)
        self.files.append(f)
        if last is not None:
            last.flush()
            if self.on_file_full is not None:
                self.on_file_full(last.end_timestamp)
        return f

    def prepare(self, keys: int) -> None:
        """Make sure an index file with room for ``keys`` more entries exists and its blocks are
        reserved, so a put fails on a full disk before its record is written. Raises
        :class:`StoreIOError`."""
        f = self.writable_file()
        f.reserve_entries(f.index_count + keys)

    def build(self, topic: str, keys: list[str], phy_offset: int, store_timestamp: int) -> None:
        """Index ``keys`` of the record at ``phy_offset`` (``buildIndex``; the caller skips ROLLBACK).

        A record before the newest file's ``endPhyOffset`` is indexed already and is skipped, as in
        Java: recovery re-dispatches records the index may hold."""
        if self.files and phy_offset < self.files[-1].end_phy_offset:
            return
        f = self.writable_file()
        for key in keys:
            full = f"{topic}#{key}"
            # The records of a 5.x batch share the batch's UNIQ_KEY: hash it once, not per record.
            if full != self._last_key:
                self._last_key, self._last_hash = full, index_key_hash(full)
            if not f.put_key(full, phy_offset, store_timestamp, header=False, key_hash=self._last_hash):
                f.write_header()
                f = self.writable_file()
                f.put_key(full, phy_offset, store_timestamp, header=False, key_hash=self._last_hash)
        f.write_header()  # once per record, as Java's header is current after each putKey returns

    def build_batch(self, topic: str, records: list[tuple[list[str], int, int]]) -> None:
        """Index a batch's records, ``(keys, commit-log offset, store time)`` in commit-log order:
        the entries :meth:`build` would write record by record, with one entry block, one write per
        slot touched and one header write per file (:meth:`IndexFile.put_entries`)."""
        end = self.files[-1].end_phy_offset if self.files else 0
        entries: list[tuple[int, int, int]] = []
        for keys, phy_offset, store_timestamp in records:
            if phy_offset < end:  # indexed already (a record after recovery): as build skips it
                continue
            for key in keys:
                full = f"{topic}#{key}"
                if full != self._last_key:
                    self._last_key, self._last_hash = full, index_key_hash(full)
                entries.append((self._last_hash, phy_offset, store_timestamp))
        if not entries:
            return
        f = self.writable_file()
        done = f.put_entries(entries, 0)
        f.write_header()
        while done < len(entries):
            f = self.writable_file()
            done = f.put_entries(entries, done)
            f.write_header()

    def query(self, topic: str, key: str, max_num: int, begin: int, end: int) -> tuple[list[int], int, int]:
        """Offsets of ``key`` newest first, and the last file's end timestamp and end offset
        (``queryOffset``: ``indexLastUpdateTimestamp`` / ``indexLastUpdatePhyoffset``)."""
        out: list[int] = []
        last_ts = last_phy = 0
        full = f"{topic}#{key}"
        for i in range(len(self.files) - 1, -1, -1):
            f = self.files[i]
            if i == len(self.files) - 1:
                last_ts, last_phy = f.end_timestamp, f.end_phy_offset
            if f.is_time_matched(begin, end):
                f.select(out, full, max_num, begin, end)
            if f.begin_timestamp < begin or len(out) >= max_num:
                break
        return out, last_ts, last_phy

    def flush(self) -> None:
        if self.files:
            self.files[-1].flush()

    def delete_expired(self, min_phy_offset: int) -> int:
        """Delete leading files (never the last) whose entries all point below ``min_phy_offset``."""
        count = 0
        while len(self.files) > 1 and self.files[0].end_phy_offset < min_phy_offset:
            self.files.pop(0).destroy()
            count += 1
        return count

    def destroy(self) -> None:
        for f in self.files:
            f.destroy()
        self.files = []
