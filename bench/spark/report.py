"""Summary of a Spark benchmark run: medians per case, ratios to the raw read, JSON and markdown.

The ratio of a Spark case is its MB/s over the raw read's MB/s *in the same page-cache state*
(cold to cold, warm to warm), from the same run on the same files.
"""

from __future__ import annotations

import statistics
from typing import Any

LABELS = {
    "raw read": "raw sequential read (8 MiB readinto)",
    "reader": "reader alone, 1 process, no Spark",
    "count": 'spark.read.format("rocketmq").count()',
    "scan": 'full scan (write.format("noop"))',
}


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (case, includeBody, cache): medians over rounds, and the ratio to raw read."""
    groups: dict[tuple[str, Any, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["case"], row["include_body"], row["cache"]), []).append(row)
    raw = {
        cache: statistics.median(r["mb_per_s"] for r in group)
        for (case, _, cache), group in groups.items()
        if case == "raw read"
    }
    out = []
    for (case, body, cache), group in groups.items():
        mb = statistics.median(r["mb_per_s"] for r in group)
        out.append(
            {
                "case": case,
                "include_body": body,
                "cache": cache,
                "rounds": len(group),
                "seconds": statistics.median(r["seconds"] for r in group),
                "rows_per_s": statistics.median(r["rows_per_s"] for r in group),
                "mb_per_s": mb,
                "mb_per_s_min": min(r["mb_per_s"] for r in group),
                "mb_per_s_max": max(r["mb_per_s"] for r in group),
                "ratio_to_raw": mb / raw[cache] if cache in raw else None,
            }
        )
    return out


def markdown(meta: dict[str, Any], summary: list[dict[str, Any]]) -> str:
    """A table of the summary, with what was measured on what."""
    lines = [
        f"# Spark reader benchmark, {meta['date']}",
        "",
        f"Store: {meta['messages']:,} messages of {meta['body_bytes']} B bodies, "
        f"{meta['data_bytes'] / 2**20:,.0f} MiB of commit log in {meta['segments']} segments, "
        f"{meta['topics']} topics x {meta['queues']} queues. Spark {meta['spark']} `local[{meta['cores']}]` "
        f"on {meta['cpus']} CPUs; {meta['rounds']} round(s), medians (min-max of MB/s). "
        f"Page cache: {meta['cache_note']}",
        "",
        "| case | includeBody | cache | rows/s | MB/s (min-max) | vs raw read |",
        "|---|---|---|---:|---:|---:|",
    ]
    for s in summary:
        body = "-" if s["include_body"] is None else str(s["include_body"]).lower()
        rows = "-" if s["case"] == "raw read" else f"{s['rows_per_s']:,.0f}"
        ratio = "-" if s["ratio_to_raw"] is None or s["case"] == "raw read" else f"{s['ratio_to_raw']:.2f}"
        span = f"{s['mb_per_s']:,.1f} ({s['mb_per_s_min']:,.1f}-{s['mb_per_s_max']:,.1f})"
        lines.append(f"| {LABELS[s['case']]} | {body} | {s['cache']} | {rows} | {span} | {ratio} |")
    lines += ["", f"Build of the store: {meta['build_s']:.1f} s (not measured against anything).", ""]
    return "\n".join(lines)
