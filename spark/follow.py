"""Where the whole records of a live commit log end: the offsets of the streaming reader.

A streaming offset is a global commit-log offset per store directory, always a record boundary
(a record start, a blank marker or a segment start). :func:`valid_end` walks forward from such an
offset across segments, validating every record in bulk exactly as a batch read does, and
returns the end of the last whole record. A record the broker is still writing is not whole yet,
so a micro-batch never ends inside one and the next trigger picks it up:

* our store copies a record with its TOTALSIZE last (:mod:`store.commit_log`): until then the
  walk stops at a TOTALSIZE of 0;
* a Java broker copies the encoded record front to back into the zero-filled, preallocated file
  (``CommitLog.DefaultAppendMessageCallback.doAppend`` puts the whole buffer): TOTALSIZE, magic,
  offsets and lengths may be in place while the last bytes are still zeros. The last record before
  the zeros is therefore checked further (:func:`tail_is_whole`).

Segments come and go while a broker runs: a full segment ends with a blank marker and the walk
continues at the next file once it exists; a segment deleted by the broker's cleanup before we
read it is skipped with one log line (its records are gone).
"""

from __future__ import annotations

import logging
import mmap

import numpy as np

from codec.errors import MessageFormatError
from codec.message import body_crc_of, decode_record
from spark import columns as col
from spark.layout import Segment, list_segments, open_map
from spark.records import STOP_BLANK, STOP_FILE_END, STOP_ZERO, walk

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
    last = int(starts[-1])
    if why in (STOP_ZERO, STOP_FILE_END) and not tail_is_whole(mm, last):
        return last, "tail"
    return end, why


def tail_is_whole(mm: mmap.mmap, pos: int) -> bool:
    """Whether the last record before the zeros at the end of the data is whole, not half-copied.

    Its header already passed the length and offset checks, so a copy cut short can only have left
    zeros in its body, topic or properties. It is whole when BODYCRC matches the body (whatever
    ``checkCRC`` says: one record) and neither the topic nor the properties end in a zero byte:
    topic names never hold NUL, and ``MessageDecoder.messageProperties2String`` ends every
    property with U+0002.
    """
    try:
        with memoryview(mm) as view:
            record = decode_record(view, pos)
    except MessageFormatError:
        return False
    if body_crc_of(record.body) != record.body_crc:
        return False
    return not record.topic.endswith("\x00") and not (record.properties or "").endswith("\x00")
