"""Turn what the recording proxies saw, and the broker's commit log, into ``tests/golden`` files.

Frames: every frame is decoded by :mod:`compat_tests.frame_oracle`; responses are paired with their
requests by (connection, direction, opaque); a few representatives are kept per group and written
as ``frames/<group>/<NNN>-<REQUEST_NAME>-req.bin`` or ``...-resp-<RESPONSE_NAME>.bin`` with a
``.json`` sidecar. Records: chosen commit-log records are written as ``records/<name>.bin`` (or
``.bin.gz`` when large) with a sidecar holding every stored field.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compat_tests.code_names import request_code_name
from compat_tests.frame_oracle import (
    RECORD_RESPONSE_REQUESTS,
    RPC_ONEWAY,
    RPC_TYPE_RESPONSE,
    describe_frame,
    describe_record,
    iter_records,
    parse_command,
)
from compat_tests.proxy import Frame

KEEP_PER_GROUP = 2  # representatives per (request code, req/resp, direction, variant)
MAX_KEPT_FRAME = 256 * 1024  # bigger frames (the 4 MiB send) are covered by records/ only
GZIP_RECORD_OVER = 64 * 1024  # records larger than this are stored gzip-compressed
SEND_CODES = {10, 310, 320}  # SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE
PULL_CODES = {11, 361}  # PULL_MESSAGE, LITE_PULL_MESSAGE
END_TRANSACTION = 37


@dataclass
class Seen:
    """One recorded frame with its decoded sidecar and where it came from."""

    frame: Frame
    meta: dict[str, Any]
    group: str  # output directory under frames/, e.g. "5.3.3-JSON"
    scenario: str | None


def pair_responses(frames: list[Frame]) -> dict[int, int]:
    """Map each response frame's ``seq`` to the code of the request it answers."""
    pending: dict[tuple[str, int, str, int], int] = {}
    paired: dict[int, int] = {}
    for frame in sorted(frames, key=lambda f: f.seq):
        cmd = parse_command(frame.data)
        if cmd["flag"] & RPC_TYPE_RESPONSE:
            asked = "s2c" if frame.direction == "c2s" else "c2s"
            code = pending.pop((frame.label, frame.conn_id, asked, cmd["opaque"]), None)
            if code is not None:
                paired[frame.seq] = code
        elif not cmd["flag"] & RPC_ONEWAY:
            pending[(frame.label, frame.conn_id, frame.direction, cmd["opaque"])] = cmd["code"]
    return paired


def decode_all(
    frames: list[Frame], group_of: Callable[[Frame], str | None], scenario_of: Callable[[Frame], str | None]
) -> list[Seen]:
    """Sidecars for every frame whose ``group_of`` is not None, in arrival order."""
    paired = pair_responses(frames)
    seen: list[Seen] = []
    for frame in sorted(frames, key=lambda f: f.seq):
        group = group_of(frame)
        if group is None:
            continue
        meta = describe_frame(frame.data, paired.get(frame.seq))
        meta["peer"] = frame.label
        meta["direction"] = frame.direction
        meta["conn_id"] = frame.conn_id
        scenario = scenario_of(frame)
        if scenario:
            meta["scenario"] = scenario
        seen.append(Seen(frame, meta, group, scenario))
    return seen


def _variant(meta: dict[str, Any]) -> str:
    """What makes two frames of one code worth keeping both (sysFlag, commit/rollback, response)."""
    ext = meta["ext_fields"] or {}
    if meta["is_response"]:
        return str(meta["code_name"])
    if meta["code"] in SEND_CODES:
        return f"sysFlag={ext.get('e', ext.get('sysFlag', ''))}"
    if meta["code"] in PULL_CODES:
        return f"sysFlag={ext.get('sysFlag', '')}"
    if meta["code"] == END_TRANSACTION:
        return f"commitOrRollback={ext.get('commitOrRollback', '')}"
    return ""


def select(seen: Iterable[Seen]) -> list[Seen]:
    """Up to KEEP_PER_GROUP representatives per group key; pull responses with records first."""
    kept: list[Seen] = []
    counts: dict[tuple[str, ...], int] = {}
    for item in seen:
        meta = item.meta
        if len(item.frame.data) > MAX_KEPT_FRAME:
            continue
        name = meta.get("request_code_name", "UNPAIRED") if meta["is_response"] else meta["code_name"]
        key = (item.group, name, str(meta["is_response"]), item.frame.direction, _variant(meta))
        if counts.get(key, 0) >= KEEP_PER_GROUP:
            continue
        counts[key] = counts.get(key, 0) + 1
        kept.append(item)
    return kept


def write_frames(kept: list[Seen], out: Path) -> dict[str, int]:
    """Write the kept frames under ``out/<group>/``; returns the count per group."""
    numbers: dict[str, int] = {}
    for item in kept:
        meta = item.meta
        n = numbers[item.group] = numbers.get(item.group, 0) + 1
        if meta["is_response"]:
            stem = f"{n:03d}-{meta.get('request_code_name', 'UNPAIRED')}-resp-{meta['code_name']}"
        else:
            stem = f"{n:03d}-{meta['code_name']}-req"
        directory = out / item.group
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{stem}.bin").write_bytes(item.frame.data)
        (directory / f"{stem}.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n")
    return numbers


def pulled_records(seen: Iterable[Seen]) -> dict[int, bytes]:
    """Records carried by successful pull/query responses, by physical offset."""
    out: dict[int, bytes] = {}
    for item in seen:
        meta = item.meta
        if meta["is_response"] and meta["code"] == 0 and meta.get("request_code") in RECORD_RESPONSE_REQUESTS:
            body = item.frame.data[8 + meta["header_length"] :]
            for pos, rec in iter_records(body):
                out[rec.physical_offset] = body[pos : pos + rec.total_size]
    return out


def commit_log_records(data: bytes) -> list[tuple[bytes, dict[str, Any]]]:
    """Every record of a commit-log file with its description."""
    return [
        (data[pos : pos + rec.total_size], describe_record(rec))
        for pos, rec in iter_records(data, commit_log=True)
    ]


def write_record(
    out: Path, name: str, raw: bytes, meta: dict[str, Any], extra: dict[str, Any], pulled: dict[int, bytes]
) -> Path:
    """Write one record golden and its sidecar; returns the data file's path."""
    out.mkdir(parents=True, exist_ok=True)
    side = dict(meta)
    side.update(extra)
    in_pull = pulled.get(meta["physical_offset"])
    side["pull_cross_check"] = (
        "identical to the record in a recorded pull response"
        if in_pull == raw
        else ("DIFFERENT from the pulled record" if in_pull is not None else "not pulled in this recording")
    )
    if len(raw) > GZIP_RECORD_OVER:
        path = out / f"{name}.bin.gz"
        path.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
        side["file_encoding"] = "gzip"
    else:
        path = out / f"{name}.bin"
        path.write_bytes(raw)
    side["file"] = path.name
    (out / f"{name}.json").write_text(json.dumps(side, ensure_ascii=False, indent=1) + "\n")
    return path


def summarize(kept: Iterable[Seen]) -> dict[str, dict[str, int]]:
    """Counts per group and ``REQUEST_NAME req|resp`` for the report and README."""
    table: dict[str, dict[str, int]] = {}
    for item in kept:
        meta = item.meta
        if meta["is_response"]:
            key = f"{meta.get('request_code_name', 'UNPAIRED')} resp"
        else:
            key = f"{request_code_name(meta['code'])} req"
        row = table.setdefault(item.group, {})
        row[key] = row.get(key, 0) + 1
    return table
