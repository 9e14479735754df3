"""Summary of a Spark benchmark run: medians per case, ratios to the raw read, JSON and markdown.

The ratio of a Spark case is its MB/s over the raw read's MB/s *in the same page-cache state*
(cold to cold, warm to warm), from the same run on the same files. The CPU columns split each
Spark case's CPU per message between the JVM and the Python workers (:mod:`bench.spark.cases`).
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
                **_cpu(group),
            }
        )
    return out


def _cpu(group: list[dict[str, Any]]) -> dict[str, float | None]:
    """Medians of CPU microseconds per message in the JVM and the Python workers, and of the
    cores kept busy (CPU seconds over wall seconds); None when not measured."""
    timed = [r for r in group if r.get("jvm_cpu_s") is not None and r["rows"]]
    if not timed:
        return {"jvm_cpu_us_per_row": None, "python_cpu_us_per_row": None, "cores_busy": None}
    return {
        "jvm_cpu_us_per_row": statistics.median(r["jvm_cpu_s"] / r["rows"] * 1e6 for r in timed),
        "python_cpu_us_per_row": statistics.median(r["python_cpu_s"] / r["rows"] * 1e6 for r in timed),
        "cores_busy": statistics.median((r["jvm_cpu_s"] + r["python_cpu_s"]) / r["seconds"] for r in timed),
    }


def _num(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def markdown(meta: dict[str, Any], summary: list[dict[str, Any]], network: list[str] | None = None) -> str:
    """A table of the summary, with what was measured on what; ``network``: the network-mode
    table's lines (:func:`bench.spark.network.markdown`), placed after the file-mode table."""
    lines = [
        f"# Spark reader benchmark, {meta['date']}",
        "",
        f"Store: {meta['messages']:,} messages of {meta['body_bytes']} B bodies, "
        f"{meta['data_bytes'] / 2**20:,.0f} MiB of commit log in {meta['segments']} segments, "
        f"{meta['topics']} topics x {meta['queues']} queues. Spark {meta['spark']} `local[{meta['cores']}]` "
        f"on {meta['cpus']} CPUs; {meta['rounds']} round(s), medians (min-max of MB/s). "
        f"Page cache: {meta['cache_note']} Machine load (1-min average) at start and end: "
        f"{meta['load_avg_1min'][0]} and {meta['load_avg_1min'][1]}.",
        "",
        "| case | includeBody | cache | rows/s | MB/s (min-max) | vs raw read "
        "| CPU µs/msg JVM + Python | cores busy |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for s in summary:
        body = "-" if s["include_body"] is None else str(s["include_body"]).lower()
        rows = "-" if s["case"] == "raw read" else f"{s['rows_per_s']:,.0f}"
        ratio = "-" if s["ratio_to_raw"] is None or s["case"] == "raw read" else f"{s['ratio_to_raw']:.2f}"
        span = f"{s['mb_per_s']:,.1f} ({s['mb_per_s_min']:,.1f}-{s['mb_per_s_max']:,.1f})"
        cpu = "-"
        if s["jvm_cpu_us_per_row"] is not None:
            cpu = f"{s['jvm_cpu_us_per_row']:.1f} + {s['python_cpu_us_per_row']:.1f}"
        busy = _num(s["cores_busy"], 2)
        lines.append(
            f"| {LABELS[s['case']]} | {body} | {s['cache']} | {rows} | {span} | {ratio} | {cpu} | {busy} |"
        )
    goal = {(s["case"], s["include_body"]): s["ratio_to_raw"] for s in summary if s["cache"] == "cold"}
    if goal:
        parts = [
            f"{label} {goal[key]:.2f}"
            for key, label in ((("count", False), "count() without bodies"), (("count", True), "count()"),
                               (("scan", True), "full-row read"))
            if goal.get(key) is not None
        ]  # fmt: skip
        lines += ["", f"Cold, as a ratio of the cold raw read (goal 0.5): {', '.join(parts)}."]
    if network:
        lines += ["", *network]
    lines += [
        "",
        "CPU µs/msg: CPU time of the Spark JVM (driver and executor in `local` mode) and of its Python",
        "workers per message, from `/proc`. Cores busy: that CPU time over wall time; below the cores",
        "asked for, the machine did not give them (shared) or the job could not use them.",
        f"Build of the store: {meta['build_s']:.1f} s (not measured against anything).",
        "",
    ]
    return "\n".join(lines)
