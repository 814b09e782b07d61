"""The report's table as cells: the page, the PDF, the e-mail and the CSV show the same text.

A change cell says its direction with an arrow and words, never only with colour:
"▲ +20.0 % slower", "▼ -12.5 % faster", "≈ +3.2 % no clear change", "▼ -3.01 pts lower",
"= unchanged", "— no previous week".
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from app.reports.content.build import ReportOut, VerdictOut

COLUMNS: tuple[str, ...] = (
    "Target",
    "Mode",
    "Probe",
    "Samples",
    "Failed",
    "Skipped",
    "Availability %",
    "Availability change",
    "Logon p50 ms",
    "Logon p95 ms",
    "Logon p95 change",
    "Ping p95 ms",
    "Ping p95 change",
)
NUMERIC = frozenset(
    {"Samples", "Failed", "Skipped", "Availability %", "Logon p50 ms", "Logon p95 ms",
     "Ping p95 ms"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class TableCell:
    text: str
    cls: str = ""  # "num", "worse", "better", "same", "na"
    title: str = ""  # why a change is not called slower/faster (a tooltip on the page)


def fmt_ms(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:.3f}" if v < 1 else f"{v:.2f}" if v < 10 else f"{v:.1f}"


def latency_cell(v: VerdictOut, noun: str = "week") -> TableCell:
    """A p95 change in words: slower (worse), faster (better) or no clear change."""
    if v.change is None:
        return TableCell(f"— no previous {noun}" if v.word == "no previous period" else "—", "na")
    interval = (
        f"95 % interval {v.ci_low:+.1f} % to {v.ci_high:+.1f} %"
        if v.ci_low is not None and v.ci_high is not None
        else ""
    )
    if v.word == "slower":
        return TableCell(f"▲ +{v.change:.1f} % slower", "worse", interval)
    if v.word == "faster":
        return TableCell(f"▼ {v.change:.1f} % faster", "better", interval)
    why = v.reason + (f"; {interval}" if interval else "")
    return TableCell(f"≈ {v.change:+.1f} % no clear change", "same", why)


def availability_cell(v: VerdictOut, noun: str = "week") -> TableCell:
    if v.change is None:
        return TableCell(f"— no previous {noun}" if v.word == "no previous period" else "—", "na")
    if v.word == "lower":
        return TableCell(f"▼ {v.change:.2f} pts lower", "worse")
    if v.word == "higher":
        return TableCell(f"▲ +{v.change:.2f} pts higher", "better")
    return TableCell("= unchanged", "same", v.reason)


def table(report: ReportOut) -> list[list[TableCell]]:
    """The report's rows as the cells every rendering shows (same text)."""
    noun = report.kind
    out: list[list[TableCell]] = []
    for r in report.rows:
        avail = "—" if r.availability_pct is None else f"{r.availability_pct:.2f}"
        out.append(
            [
                TableCell(r.target),
                TableCell(r.mode),
                TableCell(r.probe),
                TableCell(f"{r.samples}", "num"),
                TableCell(f"{r.failed}", "num"),
                TableCell(f"{r.skipped}", "num"),
                TableCell(avail, "num"),
                availability_cell(r.availability_change, noun),
                TableCell(fmt_ms(r.logon_p50_ms), "num"),
                TableCell(fmt_ms(r.logon_p95_ms), "num"),
                latency_cell(r.logon_change, noun),
                TableCell(fmt_ms(r.ping_p95_ms), "num"),
                latency_cell(r.ping_change, noun),
            ]
        )
    return out


def to_csv(report: ReportOut) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(COLUMNS)
    for row in table(report):
        w.writerow([c.text for c in row])
    return buf.getvalue()


def csv_filename(report: ReportOut) -> str:
    return f"connwatch-report-{report.week}{'' if report.complete else '-so-far'}.csv"
