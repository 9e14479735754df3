"""Where the whole records of a live commit log end: the offsets of the streaming reader.

A streaming offset is a global commit-log offset per store directory, always a record boundary
(a record start, a blank marker or a segment start). :func:`valid_end` walks forward from such an
offset across segments, validating every record in bulk exactly as a batch read does, and
returns the end of the last whole record. A record the broker is still writing is not whole yet
(our store writes its TOTALSIZE last; a Java broker's half-copied record fails the length or
CRC checks), so a micro-batch never ends inside one and the next trigger picks it up.

Segments come and go while a broker runs: a full segment ends with a blank marker and the walk
continues at the next file once it exists; a segment deleted by the broker's cleanup before we
read it is skipped with one log line (its records are gone).
"""

from __future__ import annotations

import logging

import numpy as np

from spark import columns as col
from spark.layout import Segment, list_segments, open_map
from spark.records import STOP_BLANK, STOP_FILE_END, walk

logger = logging.getLogger(__name__)

WALK_CHUNK = 65536  # records validated per numpy pass


def first_offset(store: str) -> int:
    """Offset of the first byte still present (the first segment's start), 0 for an empty log."""
    segments = list_segments(store)
    return segments[0].start if segments else 0


def _segment_at(segments: list[Segment], offset: int) -> int | None:
    for i, seg in enumerate(segments):
        if seg.start <= offset < seg.end:
            return i
    return None


def valid_end(store: str, offset: int, check_crc: bool = True) -> int:
    """The end of the last whole record at or after ``offset`` (a record boundary) in ``store``."""
    segments = list_segments(store)
    if not segments:
        return offset
    if offset < segments[0].start:
        logger.warning(
            "rocketmq: %s: commit log before offset %d was deleted; skipped %d bytes",
            store, segments[0].start, segments[0].start - offset,
        )  # fmt: skip
        offset = segments[0].start
    while True:
        index = _segment_at(segments, offset)
        if index is None:
            return offset  # at the end of the last segment: the next one does not exist yet
        seg = segments[index]
        end, why = _walk_segment(seg, offset - seg.start, check_crc)
        if why in (STOP_BLANK, STOP_FILE_END) and index + 1 < len(segments):
            offset = segments[index + 1].start
            continue
        return seg.start + end


def _walk_segment(seg: Segment, pos: int, check_crc: bool) -> tuple[int, str]:
    mm = open_map(seg.path)
    if mm is None:
        return pos, STOP_FILE_END
    starts_buf, end, why = walk(mm, pos, len(mm))
    if not len(starts_buf):
        return end, why
    data = np.frombuffer(mm, dtype=np.uint8)
    starts = np.frombuffer(starts_buf, dtype=np.int64)
    for first in range(0, len(starts), WALK_CHUNK):
        chunk = starts[first : first + WALK_CHUNK]
        count = col.validate(data, seg.start, col.Heads(data, chunk), check_crc)[0]
        if count < len(chunk):
            return int(chunk[count]), "invalid"
    return end, why
