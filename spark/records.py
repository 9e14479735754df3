"""Finding record boundaries in a commit-log segment without decoding records.

Format facts (``CommitLog``, ``MessageDecoder``; field table in :mod:`codec.message`): a segment
holds records back to back from position 0. Each starts with TOTALSIZE (int32, the whole record)
and MAGICCODE (0xDAA320A7 v1 / 0xDAA320AB v2), and carries its own global offset in
PHYSICALOFFSET (int64 at +28). A segment that cannot hold the next record ends with an 8-byte
blank marker (TOTALSIZE = bytes left in the file, MAGICCODE 0xCBD43194); after the last record of
a live segment come zeros.

* :func:`walk` hops from record to record using only the 8-byte header (one ``unpack_from`` per
  record) and says why it stopped. Whole-record checks (field lengths, PHYSICALOFFSET, CRC) are
  done afterwards in bulk by :mod:`spark.columns`.
* :func:`resync` finds the first record starting at or after an arbitrary position, which is how a
  1 GiB segment is split into partitions without reading it first: it searches for a magic code
  and accepts a candidate only if its PHYSICALOFFSET equals its own offset and the record decodes
  whole (:func:`codec.message.decode_record`), and the entry after it is a record header, a blank
  marker, zeros or the end of the file.
* :func:`used_end` finds how far non-zero bytes reach, to count the bytes skipped after a torn or
  corrupt record without mistaking a segment's zero-filled tail for lost data; :func:`written_end`
  does it for a whole segment file, skipping its holes (``SEEK_DATA``), so that partitions are
  planned only up to it and no task searches a preallocated tail of zeros for records.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
from array import array

import numpy as np

from codec.errors import MessageFormatError
from codec.message import (
    BLANK_MAGIC_CODE,
    BLANK_MARKER_SIZE,
    MESSAGE_MAGIC_CODE_V1,
    MESSAGE_MAGIC_CODE_V2,
    PHYSICAL_OFFSET_POS,
    decode_record,
    record_size,
)

_SIZE_MAGIC = struct.Struct(">iI")  # TOTALSIZE, MAGICCODE
_LONG = struct.Struct(">q")
MIN_RECORD_SIZE = record_size(0, 0, 0, 0)  # IPv4 hosts, empty body, topic and properties: 91 bytes
_MAGICS = (MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2)
_MAGIC_BYTES = tuple(struct.pack(">I", m) for m in _MAGICS)
_ZERO_PROBE = 4 * 1024 * 1024  # bytes checked per step, from the end, looking for non-zero data
_RESYNC_WINDOW = 64 * 1024  # first bytes searched for a magic code by resync; doubled up to _ZERO_PROBE
_FIRST_PROBE = 64 * 1024  # the first step: a full segment ends in data (a blank marker), found at once

# Why a walk stopped.
STOP_RANGE = "range"  # reached the end of the requested range (not an error)
STOP_BLANK = "blank"  # blank end-of-file marker: the segment is complete
STOP_FILE_END = "file-end"  # fewer than 8 bytes left in the file
STOP_ZERO = "zero"  # zeros: the end of the data written so far
STOP_INVALID = "invalid"  # something that is not a whole record: torn or corrupt


def walk(mm: mmap.mmap | bytes, begin: int, end: int) -> tuple[array[int], int, str]:
    """Record starts in ``[begin, end)`` of a mapped segment, the position reached, and why it stopped.

    A record starting before ``end`` is included even if it extends past ``end`` (it belongs to the
    partition holding its first byte). Only the 8-byte header is read here.
    """
    file_size = len(mm)
    starts: array[int] = array("q")
    append = starts.append
    unpack = _SIZE_MAGIC.unpack_from
    pos = begin
    while pos < end:
        if file_size - pos < BLANK_MARKER_SIZE:
            return starts, pos, STOP_FILE_END
        size, magic = unpack(mm, pos)
        if magic in _MAGICS and MIN_RECORD_SIZE <= size <= file_size - pos:
            append(pos)
            pos += size
            continue
        if magic == BLANK_MAGIC_CODE and size == file_size - pos:
            return starts, pos, STOP_BLANK
        if size == 0 and magic == 0:
            return starts, pos, STOP_ZERO
        return starts, pos, STOP_INVALID
    return starts, pos, STOP_RANGE


def is_whole_record(mm: mmap.mmap, segment_start: int, pos: int) -> int:
    """TOTALSIZE of the record at ``pos`` if it is whole and knows its own offset, else 0."""
    if len(mm) - pos < BLANK_MARKER_SIZE + 28:
        return 0
    size, magic = _SIZE_MAGIC.unpack_from(mm, pos)
    if magic not in _MAGICS or size < MIN_RECORD_SIZE or pos + size > len(mm):
        return 0
    if _LONG.unpack_from(mm, pos + PHYSICAL_OFFSET_POS)[0] != segment_start + pos:
        return 0
    with memoryview(mm) as view:
        try:
            decode_record(view[: pos + size], pos, with_body=False)
        except MessageFormatError:
            return 0
    return int(size)


def _plausible_next(mm: mmap.mmap, pos: int) -> bool:
    """True if ``pos`` holds what may follow a record: a record header, a blank marker, zeros or EOF."""
    if len(mm) - pos < BLANK_MARKER_SIZE:
        return True
    size, magic = _SIZE_MAGIC.unpack_from(mm, pos)
    return magic in _MAGICS or magic == BLANK_MAGIC_CODE or (size == 0 and magic == 0)


def resync(mm: mmap.mmap, segment_start: int, pos: int, limit: int) -> int:
    """The first record start in ``[pos, limit)`` (see module docstring), or ``limit`` if none."""
    search = pos + 4
    stop_all = limit + 4  # a record starting before limit has its magic code before limit + 4
    window = _RESYNC_WINDOW
    while search < stop_all:
        # Windows, not the whole range: a store holds one of the two magic codes, and searching for
        # the absent one to the end of a 128 MiB range cost more than decoding the range.
        stop = min(stop_all, search + window)
        hits = [h for h in (mm.find(m, search, stop) for m in _MAGIC_BYTES) if h >= 0]
        if not hits:
            if stop == stop_all:
                break
            search = stop - (len(_MAGIC_BYTES[0]) - 1)  # a code straddling the window's end
            window = min(2 * window, _ZERO_PROBE)
            continue
        hit = min(hits)
        candidate = hit - 4
        size = is_whole_record(mm, segment_start, candidate)
        if size and _plausible_next(mm, candidate + size):
            return candidate
        search = hit + 1
    return limit


def used_end(mm: mmap.mmap, begin: int, end: int) -> int:
    """The position just after the last non-zero byte in ``[begin, end)`` (``begin`` if all zero)."""
    data = np.frombuffer(mm, dtype=np.uint8)
    pos = min(end, len(data))
    step = _FIRST_PROBE
    while pos > begin:
        lo = max(begin, pos - step)
        chunk = data[lo:pos]
        if chunk.any():
            return lo + int(np.flatnonzero(chunk)[-1]) + 1
        pos = lo
        step = _ZERO_PROBE
    return begin


def data_extents(path: str, size: int) -> list[tuple[int, int]]:
    """The ``[start, stop)`` regions of a file that may hold data: all but its holes (a sparse,
    ``ftruncate``-preallocated segment's unwritten tail), per ``lseek(SEEK_DATA/SEEK_HOLE)``; the
    whole file where the file system cannot tell."""
    whole = [(0, size)]
    if not hasattr(os, "SEEK_DATA"):
        return whole
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return whole
    extents: list[tuple[int, int]] = []
    try:
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as err:
                if err.errno == errno.ENXIO:  # only a hole from pos to the end of the file
                    break
                return whole
            stop = min(size, os.lseek(fd, start, os.SEEK_HOLE))
            if start >= size:
                break
            extents.append((start, stop))
            pos = stop
    except OSError:
        return whole
    finally:
        os.close(fd)
    return extents


def written_end(mm: mmap.mmap, path: str) -> int:
    """The position just after the last non-zero byte of the segment mapped as ``mm`` (0 if none).

    No record starts at or after it (a record's TOTALSIZE is non-zero), so ranges planned up to it
    hold every record of the segment; zeros in holes are never read.
    """
    for start, stop in reversed(data_extents(path, len(mm))):
        end = used_end(mm, start, min(stop, len(mm)))
        if end > start:
            return end
    return 0
