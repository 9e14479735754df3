"""Summary of a side-by-side run: medians per case and target, ratios, a markdown table, a chart.

Ratios are always *ours / reference* (and, with a ``before`` target, *ours / before* apart): above 1
is better for msgs/s, below 1 is better for CPU per message, latency, start-up time and memory.
Ranges (min-max over rounds) are kept beside medians, since throughput on a shared machine moves
with the neighbours while CPU per message barely does. A case with a window measured on a loaded
machine (calibration.py) says so on its row, and the file says so at its top.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from bench.side_by_side.calibration import LOADED
from bench.side_by_side.cases import CASES, GRPC_CASES

THROUGHPUT_METRICS = (
    "msgs_per_s",
    "server_cpu_us_per_msg",
    "p50_ms",
    "p99_ms",
    "p999_ms",
    "other_cores",
    "avg_rt_ms",
    "failed",
    "load_1m_start",
    "others_load_start",
    "load_before_case",
    "settle_waited_s",
)
# The noise readings: no ratio of these.
NOISE_METRICS = ("other_cores", "load_1m_start", "others_load_start", "load_before_case", "settle_waited_s")
MEMORY_METRICS = ("rss_mib", "anon_mib", "file_mib")
SERVER_METRICS = {
    "startup": ("ready_s", "first_send_s"),
    "memory": MEMORY_METRICS,
    "grpc_startup": ("ready_s", "first_send_s", "first_grpc_send_s"),
    "grpc_memory": MEMORY_METRICS,
}
SERVER_LABELS = {  # (case, metric): (row label, digits)
    ("startup", "ready_s"): ("start-up to ready (s)", 3),
    ("startup", "first_send_s"): ("start-up to first stored send (s)", 3),
    ("memory", "rss_mib"): ("idle RSS, all server processes (MiB)", 1),
    ("memory", "anon_mib"): ("  of which anonymous (MiB)", 1),
    ("memory", "file_mib"): ("  of which mapped files (MiB)", 1),
    ("grpc_startup", "ready_s"): ("with the gRPC endpoint (reference: Proxy, local mode): ready (s)", 3),
    ("grpc_startup", "first_send_s"): ("  to first stored send (s)", 3),
    ("grpc_startup", "first_grpc_send_s"): ("  to first stored gRPC send (s)", 3),
    ("grpc_memory", "rss_mib"): ("  idle RSS, all server processes (MiB)", 1),
    ("grpc_memory", "anon_mib"): ("    of which anonymous (MiB)", 1),
    ("grpc_memory", "file_mib"): ("    of which mapped files (MiB)", 1),
}
TARGETS = ("ours", "reference")
ALL_TARGETS = ("before", "ours", "reference")  # before: ours at an older revision (--before)
GRPC_HEADERS = {"before": "before", "ours": "ours", "reference": "Proxy"}
# Each official program's row beside the row of our driver meant to measure the same thing.
OFFICIAL_TWINS = {
    "official_sync1": "sync1",
    "official_sync16": "sync16",
    "official_async": "async",
    "official_batch": "batch",
}
# How the official programs' rows differ from our driver's, read from their sources (5.3.3).
OFFICIAL_DIFFERENCES = (
    "request headers in RocketMQ's binary serialization (the programs set "
    "`rocketmq.serialize.type=ROCKETMQ`); our driver's client sends JSON headers",
    "the rate of a line is over the last 9 s of one-second snapshots, after a warm-up of "
    "`--warmup` lines beyond the 10 s before the first line; our driver: `--duration` s after "
    "`--warmup` s",
    "Producer -y true is one thread whose sends queue in the client's async executor (2 threads "
    "here) while under 10,000 wait; a send still queued after 3 s fails without being sent "
    "(`DEFAULT ASYNC send call timeout`), so a broker slower than ~3,300 sends/s sees the rate "
    "collapse; our `async` row bounds 1,024 sends in flight from 4 threads",
    "no RT percentiles (the programs print average and max RT only)",
    "the same otherwise: bodies of `--size` bytes (their default 128 B: the `official_defaults16` "
    "row), no keys, tags or properties, compression off, no trace, sendLatencyFaultEnable off, "
    "a topic of 8 queues (their default BenchmarkTest has 1,024, created at start by both brokers)",
)


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``{case: {target: {metric: {median, min, max, n}}, "ratio": {metric: ours/ref medians},
    "ratio_before": {metric: ours/before medians}, "loaded": {target: rounds marked loaded}}}``
    (the last two only when there are such rows)."""
    out: dict[str, Any] = {}
    loaded: dict[str, dict[str, int]] = {}
    for row in rows:
        if "error" in row:
            continue
        case = row["case"]
        if row.get("loaded"):
            by_case = loaded.setdefault(case, {})
            by_case[row["target"]] = by_case.get(row["target"], 0) + 1
        metrics = SERVER_METRICS.get(case, THROUGHPUT_METRICS)
        per_target = out.setdefault(case, {}).setdefault(row["target"], {})
        for metric in metrics:
            if row.get(metric) is not None:
                per_target.setdefault(metric, []).append(float(row[metric]))
    for case, by_target in out.items():
        for target in ALL_TARGETS:
            if target in by_target:
                by_target[target] = {m: _stats(v) for m, v in by_target[target].items()}
        for key, other in (("ratio", "reference"), ("ratio_before", "before")):
            if "ours" in by_target and other in by_target:
                ours, them = by_target["ours"], by_target[other]
                by_target[key] = {
                    m: ours[m]["median"] / them[m]["median"]
                    for m in ours
                    if m in them and them[m]["median"] and m not in NOISE_METRICS
                }
        if case in loaded:
            by_target["loaded"] = loaded[case]
    return out


def _fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _cell(summary: dict[str, Any], case: str, target: str, metric: str, digits: int = 0) -> str:
    s = summary.get(case, {}).get(target, {}).get(metric)
    if s is None:
        return "-"
    if s["n"] > 1 and s["min"] != s["max"]:
        return f"{_fmt(s['median'], digits)} ({_fmt(s['min'], digits)}–{_fmt(s['max'], digits)})"
    return _fmt(s["median"], digits)


def _ratio(summary: dict[str, Any], case: str, metric: str, key: str = "ratio") -> str:
    r = summary.get(case, {}).get(key, {}).get(metric)
    return "-" if r is None else f"{r:.2f}×"


def _loaded_mark(summary: dict[str, Any], case: str) -> str:
    """`` **LOADED: ...** (target: rounds)`` when a window of ``case`` was measured on a loaded
    machine, else nothing."""
    loaded = summary.get(case, {}).get("loaded")
    if not loaded:
        return ""
    rounds = ", ".join(f"{target} {n}" for target, n in sorted(loaded.items()))
    return f" **{LOADED}** (rounds: {rounds})"


def loaded_banner(summary: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    """The warning the markdown opens with when any window was measured on a loaded machine."""
    cases = [case for case in summary if summary[case].get("loaded")]
    if not cases:
        return []
    t = meta.get("thresholds", {})
    return [
        f"**{LOADED}.** Windows of {', '.join(cases)} were measured while other processes loaded the "
        f"machine (the 1-minute load before the case still {t.get('max_load', '?')} or more when the "
        f"wait for a quiet machine timed out after {t.get('settle_timeout_s', '?')} s, or over "
        f"{t.get('max_other_cores', '?')} of a core used by other processes in the window): those rows "
        "are marked; measure again on a quiet machine before quoting them.",
        "",
    ]


def render_table(summary: dict[str, Any], meta: dict[str, Any]) -> str:
    m = meta["machine"]
    lines = [
        *loaded_banner(summary, meta),
        f"## Side by side, {meta['date']}",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Linux {m['kernel']}, "
        f"{m['java']}, Python {m['python']}; load average {' '.join(m['loadavg_at_start'])} at start, "
        f"{' '.join(m.get('loadavg_at_end', ['?']))} at end. Ours: {meta['ours']}. "
        f"Reference: {meta['reference']}. Driver: {meta['client']}. "
        f"Medians over rounds (min–max); ratio = ours / reference. Runtime {meta.get('runtime_s', 0):.0f} s.",
        "",
        "| case | ours msgs/s | reference msgs/s | ratio | ours server CPU µs/msg | reference µs/msg "
        "| CPU ratio | ours p99 ms | reference p99 ms | p99 ratio | other load (cores) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, spec in CASES.items():
        if name not in summary:
            continue
        noise = [summary[name].get(t, {}).get("other_cores", {}).get("median") for t in TARGETS]
        lines.append(
            f"| {spec.title}{_loaded_mark(summary, name)} | {_cell(summary, name, 'ours', 'msgs_per_s')} "
            f"| {_cell(summary, name, 'reference', 'msgs_per_s')} | {_ratio(summary, name, 'msgs_per_s')} "
            f"| {_cell(summary, name, 'ours', 'server_cpu_us_per_msg', 1)} "
            f"| {_cell(summary, name, 'reference', 'server_cpu_us_per_msg', 1)} "
            f"| {_ratio(summary, name, 'server_cpu_us_per_msg')} "
            f"| {_cell(summary, name, 'ours', 'p99_ms', 2)} "
            f"| {_cell(summary, name, 'reference', 'p99_ms', 2)} "
            f"| {_ratio(summary, name, 'p99_ms')} | {' / '.join(_fmt(n, 2) for n in noise)} |"
        )
    lines += _official_lines(summary)
    lines += _grpc_lines(summary, meta)
    if set(summary) & set(SERVER_METRICS):
        lines += ["", "| server | ours | reference | ratio |", "|---|---|---|---|"]
        for (case, metric), (label, digits) in SERVER_LABELS.items():
            if case in summary:
                lines.append(
                    f"| {label} | {_cell(summary, case, 'ours', metric, digits)} "
                    f"| {_cell(summary, case, 'reference', metric, digits)} "
                    f"| {_ratio(summary, case, metric)} |"
                )
    lines += [
        "",
        "other load: cores kept busy by processes other than the servers and the driver during the "
        "measured phase (ours / reference); the machine has "
        f"{m['cores']} cores.",
        "",
    ]
    return "\n".join(lines)


def _grpc_lines(summary: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    """The gRPC cases again, each target in a column (before, when measured; ours; the Proxy), with
    p50 and the calibration readings of each target's windows."""
    names = [n for n in GRPC_CASES if n in summary]
    if not names:
        return []
    targets = [t for t in ALL_TARGETS if any(t in summary[n] for n in names)]
    heads = [GRPC_HEADERS[t] for t in targets]
    cols = [
        *(f"{h} msgs/s" for h in heads),
        *(f"{h} CPU µs/msg" for h in heads),
        *(["CPU ours / before"] if "before" in targets else []),
        *(["CPU ours / Proxy"] if {"ours", "reference"} <= set(targets) else []),
        *(f"{h} p50 ms" for h in heads),
        "others' load before (" + " / ".join(heads) + ")",
        "other cores (" + " / ".join(heads) + ")",
        "load before the case, waited s (" + " / ".join(heads) + ")",
    ]
    lines = [
        "",
        "### gRPC against the Proxy",
        "",
        "Official Java client 5.0.8, 1 KiB; server CPU from /proc over exactly each window (ours: its "
        "one process; the Proxy: its JVM, broker inside, and the NameServer JVM)"
        + (f"; before: ours at {meta['before']}" if "before" in meta else "")
        + ". The last three columns are the noise readings (medians): the others' 1-minute load at "
        "the window's start, the cores other processes used in it, and the machine's 1-minute load "
        "when the wait for a quiet machine before the case ended, with the seconds waited.",
        "",
        "| case | " + " | ".join(cols) + " |",
        "|---" * (len(cols) + 1) + "|",
    ]
    for name in names:
        cells = [_cell(summary, name, t, "msgs_per_s") for t in targets]
        cells += [_cell(summary, name, t, "server_cpu_us_per_msg", 1) for t in targets]
        if "before" in targets:
            cells.append(_ratio(summary, name, "server_cpu_us_per_msg", "ratio_before"))
        if {"ours", "reference"} <= set(targets):
            cells.append(_ratio(summary, name, "server_cpu_us_per_msg"))
        cells += [_cell(summary, name, t, "p50_ms", 2) for t in targets]
        for metric in ("others_load_start", "other_cores"):
            medians = [summary[name].get(t, {}).get(metric, {}).get("median") for t in targets]
            cells.append(" / ".join(_fmt(v, 2) for v in medians))
        settles = []
        for t in targets:
            load = summary[name].get(t, {}).get("load_before_case", {}).get("median")
            waited = summary[name].get(t, {}).get("settle_waited_s", {}).get("median")
            settles.append("-" if load is None else f"{load:.2f}, {_fmt(waited)} s")
        cells.append(" / ".join(settles))
        lines.append(f"| {CASES[name].title}{_loaded_mark(summary, name)} | " + " | ".join(cells) + " |")
    return lines


def _official_lines(summary: dict[str, Any]) -> list[str]:
    """For official rows: the failed sends and average RT, each official row over its twin row of
    our driver on the same target, and how the two differ."""
    names = [n for n in CASES if n.startswith("official_") and n in summary]
    if not names:
        return []
    lines = [
        "",
        "| official program | ours avg RT ms | reference avg RT ms | ours failed sends | reference failed "
        "| our driver's row | official / driver, ours | official / driver, reference |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        twin = OFFICIAL_TWINS.get(name)
        per_target = []
        for target in TARGETS:
            official = summary[name].get(target, {}).get("msgs_per_s", {}).get("median")
            driver = summary.get(twin or "", {}).get(target, {}).get("msgs_per_s", {}).get("median")
            per_target.append(f"{official / driver:.2f}×" if official is not None and driver else "-")
        lines.append(
            f"| {CASES[name].title} | {_cell(summary, name, 'ours', 'avg_rt_ms', 2)} "
            f"| {_cell(summary, name, 'reference', 'avg_rt_ms', 2)} "
            f"| {_cell(summary, name, 'ours', 'failed')} | {_cell(summary, name, 'reference', 'failed')} "
            f"| {CASES[twin].title if twin else '-'} | {' | '.join(per_target)} |"
        )
    lines += ["", "The official rows differ from our driver's in:"]
    lines += [f"- {item}" for item in OFFICIAL_DIFFERENCES]
    return lines


def render_chart(summary: dict[str, Any], meta: dict[str, Any], path: Path) -> None:
    """Two panels of ours/reference ratios per case: msgs/s and server CPU per message (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in CASES if "ratio" in summary.get(n, {})]
    titles = [CASES[n].title for n in names]
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.55 * len(names) + 2.2), sharey=True)
    panels = (
        ("msgs_per_s", "msgs/s, ours / reference (> 1: ours faster)"),
        ("server_cpu_us_per_msg", "server CPU per message, ours / reference (< 1: ours cheaper)"),
    )
    for ax, (metric, label) in zip(axes, panels, strict=True):
        values = [summary[n]["ratio"].get(metric, float("nan")) for n in names]
        good = [(v >= 1) if metric == "msgs_per_s" else (v <= 1) for v in values]
        ax.barh(titles, values, color=["#3a7d44" if g else "#c0504d" for g in good])
        ax.axvline(1.0, color="black", linewidth=1)
        ax.set_xscale("log")
        ax.set_xlabel(label)
        for y, v in enumerate(values):
            ax.text(v, y, f" {v:.2f}×", va="center", fontsize=8)
        ax.invert_yaxis()
    m = meta["machine"]
    fig.suptitle(
        f"rmq-gateway {meta['ours']} vs Apache RocketMQ 5.3.3, {meta['date'][:10]}, "
        f"{m['cores']} cores {m['cpu']}, 1 KiB messages",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
