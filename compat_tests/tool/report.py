"""The report writers: the terminal table (feature rows, client columns, reasons below), JSON,
JUnit XML (one testsuite per target; failed rows are failures, unsupported and not-run rows are
skipped with their reason) and a standalone HTML page; and the difference report of two targets."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from xml.etree import ElementTree as ET

from compat_tests.tool.model import CLIENTS, Outcome, Status, TargetReport

MARK: dict[Status, str] = {
    "passed": "passed",
    "failed": "FAILED",
    "unsupported": "unsupported",
    "not run": "not run",
}
COLOUR: dict[Status, str] = {"passed": "#cfc", "failed": "#fbb", "unsupported": "#ffd", "not run": "#eee"}


@dataclass(frozen=True)
class Difference:
    """One scenario whose status differs between the two targets."""

    scenario_id: str
    first: Outcome
    second: Outcome


def differences(first: TargetReport, second: TargetReport) -> list[Difference]:
    other = {o.scenario.id: o for o in second.outcomes}
    found = []
    for outcome in first.outcomes:
        theirs = other.get(outcome.scenario.id)
        if theirs is not None and theirs.status != outcome.status:
            found.append(Difference(outcome.scenario.id, outcome, theirs))
    return found


def _columns(report: TargetReport) -> list[str]:
    present = {o.scenario.client for o in report.outcomes}
    return [c for c in CLIENTS if c in present]


def _features(report: TargetReport) -> list[str]:
    return list(dict.fromkeys(o.scenario.feature for o in report.outcomes))


def table(report: TargetReport) -> str:
    """The terminal table of one target and the reasons of every row that did not pass."""
    columns, cells = _columns(report), {(o.scenario.feature, o.scenario.client): o for o in report.outcomes}
    notes: list[str] = []
    rows = [["feature", *columns]]
    for feature in _features(report):
        row = [feature]
        for client in columns:
            outcome = cells.get((feature, client))
            if outcome is None:
                row.append("-")
                continue
            text = MARK[outcome.status]
            if outcome.reason:
                notes.append(f"[{len(notes) + 1}] {outcome.scenario.id} {outcome.status}: {outcome.reason}")
                text += f" [{len(notes)}]"
            row.append(text)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    counts = ", ".join(f"{n} {status}" for status, n in report.counts().items() if n)
    head = f"target {report.target.label}: {counts} in {report.seconds:.0f} s"
    return "\n".join([head, *lines, *notes])


def difference_text(first: TargetReport, second: TargetReport, diffs: list[Difference]) -> str:
    if not diffs:
        return f"no differences between {first.target.label} and {second.target.label}"
    lines = [f"{len(diffs)} difference(s) between {first.target.label} (A) and {second.target.label} (B):"]
    lines.extend(
        f"  {d.scenario_id}: A {d.first.status}{_why(d.first)}; B {d.second.status}{_why(d.second)}"
        for d in diffs
    )
    return "\n".join(lines)


def _why(outcome: Outcome) -> str:
    return f" ({outcome.reason})" if outcome.reason else ""


def _outcome_json(outcome: Outcome) -> dict[str, object]:
    s = outcome.scenario
    return {
        "id": s.id, "key": s.key, "feature": s.feature, "client": s.client, "tags": sorted(s.tags),
        "status": outcome.status, "reason": outcome.reason, "seconds": round(outcome.seconds, 2),
    }  # fmt: skip


def to_json(reports: list[TargetReport], diffs: list[Difference] | None = None) -> str:
    doc = {
        "targets": [
            {
                "namesrv": r.target.namesrv,
                "grpc": r.target.grpc,
                "started": r.started,
                "seconds": round(r.seconds, 2),
                "counts": r.counts(),
                "results": [_outcome_json(o) for o in r.outcomes],
            }
            for r in reports
        ],
        "differences": [
            {"id": d.scenario_id, "first": _outcome_json(d.first), "second": _outcome_json(d.second)}
            for d in diffs or []
        ],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def to_junit(reports: list[TargetReport]) -> str:
    root = ET.Element("testsuites", name="rmq-compat")
    for report in reports:
        counts = report.counts()
        suite = ET.SubElement(
            root,
            "testsuite",
            name=report.target.label,
            tests=str(len(report.outcomes)),
            failures=str(counts["failed"]),
            skipped=str(counts["unsupported"] + counts["not run"]),
            time=f"{report.seconds:.2f}",
        )
        for outcome in report.outcomes:
            case = ET.SubElement(
                suite, "testcase", classname=outcome.scenario.feature, name=outcome.scenario.id,
                time=f"{outcome.seconds:.2f}",
            )  # fmt: skip
            if outcome.status == "failed":
                ET.SubElement(case, "failure", message=outcome.reason)
            elif outcome.status != "passed":
                ET.SubElement(case, "skipped", message=f"{outcome.status}: {outcome.reason}")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def to_html(reports: list[TargetReport], diffs: list[Difference] | None = None) -> str:
    parts = ["<!doctype html><meta charset='utf-8'><title>rmq-compat report</title>",
             "<style>td,th{border:1px solid #999;padding:3px 6px;font:13px sans-serif;vertical-align:top}"
             "table{border-collapse:collapse;margin-bottom:1em}</style>"]  # fmt: skip
    if diffs:
        parts.append(f"<h2>{len(diffs)} difference(s)</h2><ul>")
        for d in diffs:
            text = f"{d.scenario_id}: {d.first.status}{_why(d.first)} / {d.second.status}{_why(d.second)}"
            parts.append(f"<li>{html.escape(text)}</li>")
        parts.append("</ul>")
    for report in reports:
        columns = _columns(report)
        cells = {(o.scenario.feature, o.scenario.client): o for o in report.outcomes}
        parts.append(f"<h2>{html.escape(report.target.label)}</h2><table><tr><th>feature</th>")
        parts.extend(f"<th>{html.escape(c)}</th>" for c in columns)
        parts.append("</tr>")
        for feature in _features(report):
            parts.append(f"<tr><th>{html.escape(feature)}</th>")
            for client in columns:
                o = cells.get((feature, client))
                if o is None:
                    parts.append("<td></td>")
                    continue
                reason = f"<br><small>{html.escape(o.reason)}</small>" if o.reason else ""
                parts.append(f"<td style='background:{COLOUR[o.status]}'>{o.status}{reason}</td>")
            parts.append("</tr>")
        parts.append("</table>")
    return "".join(parts) + "\n"
