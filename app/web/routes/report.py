"""The weekly report for managers: per target x mode, availability, logon/ping p95, week over week.

One ISO week (Monday 00:00 to Monday 00:00 UTC) at a time: by default the last complete
one, ``week=2026-W46`` for another, ``week=current`` for this week so far. Each mode is
read from the series of ONE probe kind, the overview's (connping where the mode runs
it, else the first of sessionping, commit, poolacquire), never a mix of probes: the
report reads the store's ``weekly(probe=...)`` (the weekly rollups of that probe kind's
series: true weekly percentiles within 1.96 %), and ``availability()`` for the error
codes. A mode whose probe runs at several sites, and the current week so far, are read
with ``summary()`` per series (the worst site's latencies; raw samples for a partial
week of up to 2 days).

- availability = ok / (samples that ran): errors and timeouts count as unavailable;
  skipped runs (the agent could not start them in time) are left out; floored to
  0.01 % so only a week without failures shows 100.00;
- a mode with several sites: counts add up, latencies are the worst site's (as on the
  overview);
- week over week: this week's figure against the whole previous week (also for a
  partial week); p95 change in percent (an increase is slower, worse), availability
  change in percentage points (a decrease is worse).

The page's table and the CSV are the same cells (:func:`table`).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel
from sqlalchemy.engine import Connection

from app.store.read.availability import availability
from app.store.read.timeseries import Point, summary
from app.store.read.weekly import weekly
from app.web.deps import ConnDep, TemplatesDep
from app.web.params import target_or_404
from app.web.timerange import RangeError
from app.web.views.lookups import ModeInfo, TargetInfo, load_targets
from app.web.views.overview import overview_probe

WEEK = timedelta(days=7)
WEEK_RE = re.compile(r"^(\d{4})-W(\d{1,2})$")
OLDEST_YEAR = 2000
TOP_ERRORS = 10

DEFINITIONS: dict[str, str] = {
    "week": "ISO week, Monday 00:00 to Monday 00:00 UTC",
    "probe": "each mode is read from one probe kind: connping where it runs it (else the "
    "first of sessionping, commit, poolacquire), never a mix",
    "availability": "ok samples / samples that ran, in percent, floored to 0.01: errors and "
    "timeouts count as unavailable; skipped runs (the agent could not start them in time) "
    "are not counted at all",
    "latency": "logon and ping p50/p95 of the ok samples of the week, in ms, from merged "
    "histograms (within 1.96 %); a mode with several sites shows its worst site",
    "week_over_week": "against the whole previous week: p95 change in percent (an increase "
    "is slower: worse), availability change in percentage points (a decrease is worse)",
}


@dataclass(frozen=True, slots=True)
class Week:
    year: int
    number: int
    start: datetime
    end: datetime  # the next Monday, or now for the current week
    complete: bool

    @property
    def label(self) -> str:
        return f"{self.year}-W{self.number:02d}"


def _monday(d: date) -> datetime:
    m = d - timedelta(days=d.isoweekday() - 1)
    return datetime(m.year, m.month, m.day, tzinfo=UTC)


def _week_at(start: datetime, now: datetime) -> Week:
    y, w, _ = start.date().isocalendar()
    end = start + WEEK
    return Week(y, w, start, min(end, now), end <= now)


def parse_week(value: str | None, now: datetime) -> Week:
    """``None``/``""``: the last complete ISO week; ``current``: this week so far; ``YYYY-Www``."""
    this_monday = _monday(now.astimezone(UTC).date())
    text = (value or "").strip()
    if not text:
        return _week_at(this_monday - WEEK, now)
    if text == "current":
        return _week_at(this_monday, now)
    m = WEEK_RE.match(text)
    if not m:
        raise RangeError(f"week: {value!r} is not an ISO week such as 2026-W46 (or 'current')")
    year, number = int(m.group(1)), int(m.group(2))
    try:
        first = date.fromisocalendar(year, number, 1)
    except ValueError:
        raise RangeError(f"week: {year} has no ISO week {number}") from None
    if year < OLDEST_YEAR:
        raise RangeError(f"week: {value!r} is before {OLDEST_YEAR}")
    start = _monday(first)
    if start > now:
        raise RangeError(f"week: {text} has not started yet")
    return _week_at(start, now)


class ModeCount(BaseModel):
    target: str
    mode: str
    count: int


class ErrorRow(BaseModel):
    code: str
    error_class: str
    count: int
    modes: list[ModeCount]


class ReportRow(BaseModel):
    target: str
    mode: str
    kind: str
    probe: str
    samples: int
    ok: int
    failed: int  # error + timeout: unavailable
    skipped: int  # not counted in availability
    availability_pct: float | None
    prev_availability_pct: float | None
    change_availability_pts: float | None
    logon_p50_ms: float | None
    logon_p95_ms: float | None
    prev_logon_p95_ms: float | None
    change_logon_p95_pct: float | None
    ping_p95_ms: float | None
    prev_ping_p95_ms: float | None
    change_ping_p95_pct: float | None


class ReportOut(BaseModel):
    week: str
    start: datetime
    end: datetime
    complete: bool
    previous_week: str
    next_week: str | None
    slower_pct: float
    drop_pts: float
    definitions: dict[str, str]
    summary: list[str]
    rows: list[ReportRow]
    no_samples: list[str]  # "target/mode" with no samples in either week
    errors: list[ErrorRow]  # most frequent first, at most 10


@dataclass(frozen=True, slots=True)
class _Stats:
    n: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    logon_p50: float | None = None
    logon_p95: float | None = None
    ping_p95: float | None = None

    @property
    def availability(self) -> float | None:
        ran = self.n - self.skipped
        return 100.0 * self.ok / ran if ran > 0 else None


def _worst(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return max(got) if got else None


def _week_stats(
    conn: Connection, owner: dict[int, int], start: datetime, end: datetime
) -> dict[int, _Stats]:
    """Per mode id: counts over its series and the worst series' latencies (any range).

    For a week still in progress and for modes with several series of their probe
    (several sites): the store's ``summary()`` per series.
    """
    ids = list(owner)
    if not ids:
        return {}
    logon = summary(conn, ids, start, end, phase="logon").points
    ping = {p.series_id: p for p in summary(conn, ids, start, end, phase="ping").points}
    per_mode: dict[int, list[tuple[Point, Point | None]]] = {}
    for p in logon:
        per_mode.setdefault(owner[p.series_id], []).append((p, ping.get(p.series_id)))
    out: dict[int, _Stats] = {}
    for mid, pairs in per_mode.items():
        out[mid] = _Stats(
            n=sum(p.n for p, _ in pairs),
            ok=sum(p.n_ok for p, _ in pairs),
            failed=sum(p.n_error + p.n_timeout for p, _ in pairs),
            skipped=sum(p.n_skipped for p, _ in pairs),
            logon_p50=_worst([p.p50_ms for p, _ in pairs]),
            logon_p95=_worst([p.p95_ms for p, _ in pairs]),
            ping_p95=_worst([q.p95_ms if q else None for _, q in pairs]),
        )
    return out


def _weekly_stats(
    conn: Connection, probes: dict[int, tuple[int, str]], week_start: datetime
) -> tuple[dict[int, _Stats], dict[int, _Stats]]:
    """Per mode id (mode id -> (target id, probe)): stats of the week starting at
    ``week_start`` and of the week before, from the store's weekly rollups (``weekly()``
    with the mode's probe kind: one row per mode and whole week, true weekly p95)."""
    cur: dict[int, _Stats] = {}
    prev: dict[int, _Stats] = {}
    for probe in sorted({p for _, p in probes.values()}):
        mids = {mid for mid, (_, p) in probes.items() if p == probe}
        tids = sorted({tid for mid, (tid, _) in probes.items() if mid in mids})
        a, b = week_start - WEEK, week_start + WEEK
        logon = weekly(conn, a, b, phase="logon", target_ids=tids, probe=probe)
        ping = weekly(conn, a, b, phase="ping", target_ids=tids, probe=probe)
        ping_p95 = {(r.mode_id, r.week): r.p95_ms for r in ping}
        for r in logon:
            if r.mode_id not in mids:
                continue
            stats = _Stats(
                n=r.n,
                ok=r.n_ok,
                failed=r.n_failed,
                skipped=r.n_skipped,
                logon_p50=r.p50_ms,
                logon_p95=r.p95_ms,
                ping_p95=ping_p95.get((r.mode_id, r.week)),
            )
            (cur if r.week == week_start else prev)[r.mode_id] = stats
    return cur, prev


def _pct(now: float | None, before: float | None) -> float | None:
    if now is None or before is None or before == 0:
        return None
    return (now / before - 1.0) * 100.0


def _floor2(v: float | None) -> float | None:
    return None if v is None else math.floor(v * 100.0 + 1e-9) / 100.0


def _label(t: str, m: str) -> str:
    return f"{t}/{m}"


def _summary(rows: list[ReportRow], slower: float, drop: float) -> list[str]:
    out: list[str] = []
    compared = [r for r in rows if r.change_logon_p95_pct is not None]
    if compared:
        worse = sorted(
            (r for r in compared if r.change_logon_p95_pct is not None
             and r.change_logon_p95_pct > slower),
            key=lambda r: -(r.change_logon_p95_pct or 0.0),
        )  # fmt: skip
        better = [
            r for r in compared
            if r.change_logon_p95_pct is not None and r.change_logon_p95_pct < -slower
        ]  # fmt: skip
        lst = ", ".join(
            f"{_label(r.target, r.mode)} (+{r.change_logon_p95_pct:.0f} %)" for r in worse
        )
        head = f"{len(worse)} of {len(compared)} modes"
        if worse:
            out.append(
                f"{head} got slower by more than {slower:g} % week over week (logon p95): {lst}."
            )
        else:
            out.append(f"None of the {len(compared)} modes got slower by more than {slower:g} % "
                       "week over week (logon p95).")  # fmt: skip
        if better:
            out.append(
                f"{len(better)} got faster by more than {slower:g} %: "
                + ", ".join(
                    f"{_label(r.target, r.mode)} ({r.change_logon_p95_pct:.0f} %)" for r in better
                )
                + "."
            )
    else:
        out.append("No mode has logon p95 figures for both weeks: no week-over-week comparison.")
    ran = sum(r.samples - r.skipped for r in rows)
    ok = sum(r.ok for r in rows)
    if ran:
        failed = sum(r.failed for r in rows)
        total = _floor2(100.0 * ok / ran)
        out.append(
            f"Availability over all modes: {total:.2f} % ({failed} failed of {ran} runs"
            + (f"; {sum(r.skipped for r in rows)} skipped runs not counted" if any(
                r.skipped for r in rows) else "")
            + ")."
        )  # fmt: skip
    dropped = [
        r for r in rows
        if r.change_availability_pts is not None and r.change_availability_pts <= -drop
    ]  # fmt: skip
    if dropped:
        out.append(
            f"{len(dropped)} {'mode' if len(dropped) == 1 else 'modes'} lost {drop:g} "
            "percentage points of availability or more: "
            + ", ".join(
                f"{_label(r.target, r.mode)} ({r.change_availability_pts:+.2f} pts)"
                for r in dropped
            )
            + "."
        )
    return out


def _errors(
    conn: Connection,
    owner: dict[int, int],
    labels: dict[int, tuple[str, str]],
    week: Week,
) -> list[ErrorRow]:
    if not owner:
        return []
    res = availability(conn, list(owner), week.start, week.end)
    by_code: dict[str, tuple[str, dict[int, int]]] = {}
    for s in res.series:
        for e in s.errors:
            _, modes = by_code.setdefault(e.code, (e.error_class, {}))
            mid = owner[s.series_id]
            modes[mid] = modes.get(mid, 0) + e.count
    rows = [
        ErrorRow(
            code=code,
            error_class=cls,
            count=sum(modes.values()),
            modes=[
                ModeCount(target=labels[mid][0], mode=labels[mid][1], count=c)
                for mid, c in sorted(modes.items(), key=lambda kv: (-kv[1], labels[kv[0]]))
            ],
        )
        for code, (cls, modes) in by_code.items()
    ]
    rows.sort(key=lambda r: (-r.count, r.code))
    return rows[:TOP_ERRORS]


def build_report(
    conn: Connection,
    targets: list[TargetInfo],
    week: Week,
    *,
    slower: float = 10.0,
    drop: float = 0.1,
) -> ReportOut:
    owner: dict[int, int] = {}
    modes: dict[int, tuple[TargetInfo, ModeInfo, str]] = {}
    for t in targets:
        for m in t.modes:
            probe = overview_probe(m)
            if probe is None:
                continue
            modes[m.id] = (t, m, probe)
            owner.update({s.id: m.id for s in m.series_for(probe)})
    # Whole weeks of single-series modes come from the weekly rollups; a mode whose probe
    # runs at several sites keeps its worst site's latencies (per-series summaries), and
    # the current week so far is read up to now (raw samples when under 2 days).
    per_mode: dict[int, list[int]] = {}
    for sid, mid in owner.items():
        per_mode.setdefault(mid, []).append(sid)
    single = {mid: (modes[mid][0].id, modes[mid][2]) for mid, s in per_mode.items() if len(s) == 1}
    multi = {sid: mid for sid, mid in owner.items() if mid not in single}
    cur, prev = _weekly_stats(conn, single, week.start)
    if not week.complete:
        cur = _week_stats(conn, owner, week.start, week.end)
    else:
        cur.update(_week_stats(conn, multi, week.start, week.end))
    prev.update(_week_stats(conn, multi, week.start - WEEK, week.start))
    rows: list[ReportRow] = []
    missing: list[str] = []
    for mid, (t, m, probe) in modes.items():
        c, p = cur.get(mid), prev.get(mid)
        if c is None and p is None:
            missing.append(_label(t.name, m.name))
            continue
        c = c or _Stats()
        a, pa = _floor2(c.availability), _floor2(p.availability if p else None)
        rows.append(
            ReportRow(
                target=t.name,
                mode=m.name,
                kind=m.kind,
                probe=probe,
                samples=c.n,
                ok=c.ok,
                failed=c.failed,
                skipped=c.skipped,
                availability_pct=a,
                prev_availability_pct=pa,
                change_availability_pts=(
                    c.availability - p.availability
                    if p and c.availability is not None and p.availability is not None
                    else None
                ),
                logon_p50_ms=c.logon_p50,
                logon_p95_ms=c.logon_p95,
                prev_logon_p95_ms=p.logon_p95 if p else None,
                change_logon_p95_pct=_pct(c.logon_p95, p.logon_p95 if p else None),
                ping_p95_ms=c.ping_p95,
                prev_ping_p95_ms=p.ping_p95 if p else None,
                change_ping_p95_pct=_pct(c.ping_p95, p.ping_p95 if p else None),
            )
        )
    rows.sort(key=lambda r: (r.target, r.mode))
    labels = {mid: (t.name, m.name) for mid, (t, m, _) in modes.items()}
    return ReportOut(
        week=week.label,
        start=week.start,
        end=week.end,
        complete=week.complete,
        previous_week=_week_at(week.start - WEEK, week.end).label,
        next_week=_week_at(week.start + WEEK, week.end).label if week.complete else None,
        slower_pct=slower,
        drop_pts=drop,
        definitions=DEFINITIONS,
        summary=_summary(rows, slower, drop),
        rows=rows,
        no_samples=sorted(missing),
        errors=_errors(conn, owner, labels, week),
    )


# ---- the table shared by the page and the CSV ----

COLUMNS: tuple[str, ...] = (
    "Target",
    "Mode",
    "Probe",
    "Samples",
    "Failed",
    "Skipped",
    "Availability %",
    "Availability WoW",
    "Logon p50 ms",
    "Logon p95 ms",
    "Logon p95 WoW",
    "Ping p95 ms",
    "Ping p95 WoW",
)


NUMERIC = frozenset(
    {
        "Samples",
        "Failed",
        "Skipped",
        "Availability %",
        "Logon p50 ms",
        "Logon p95 ms",
        "Ping p95 ms",
    }
)


@dataclass(frozen=True, slots=True)
class TableCell:
    text: str
    cls: str = ""  # "num", "worse", "better", "same", "na"


def fmt_ms(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:.3f}" if v < 1 else f"{v:.2f}" if v < 10 else f"{v:.1f}"


def latency_change(pct: float | None, slower: float) -> TableCell:
    """A p95 change in words: an increase is slower (worse). Arrow + words, not only colour."""
    if pct is None:
        return TableCell("— no previous week", "na")
    if abs(pct) < 0.05:
        return TableCell("= unchanged", "same")
    if pct > 0:
        flag = pct > slower
        return TableCell(f"▲ +{pct:.1f} % slower" + (" (worse)" if flag else ""),
                         "worse" if flag else "same")  # fmt: skip
    flag = pct < -slower
    return TableCell(f"▼ {pct:.1f} % faster" + (" (better)" if flag else ""),
                     "better" if flag else "same")  # fmt: skip


def availability_change(pts: float | None, drop: float) -> TableCell:
    """An availability change in percentage points: a decrease is worse."""
    if pts is None:
        return TableCell("— no previous week", "na")
    if abs(pts) < 0.005:
        return TableCell("= unchanged", "same")
    if pts < 0:
        flag = pts <= -drop
        return TableCell(f"▼ {pts:.2f} pts lower" + (" (worse)" if flag else ""),
                         "worse" if flag else "same")  # fmt: skip
    return TableCell(f"▲ +{pts:.2f} pts higher (better)", "better")


def table(report: ReportOut) -> list[list[TableCell]]:
    """The report's rows as the cells the page shows and the CSV holds (same text)."""
    out: list[list[TableCell]] = []
    for r in report.rows:
        out.append(
            [
                TableCell(r.target),
                TableCell(r.mode),
                TableCell(r.probe),
                TableCell(str(r.samples), "num"),
                TableCell(str(r.failed), "num"),
                TableCell(str(r.skipped), "num"),
                TableCell(
                    "—" if r.availability_pct is None else f"{r.availability_pct:.2f}", "num"
                ),
                availability_change(r.change_availability_pts, report.drop_pts),
                TableCell(fmt_ms(r.logon_p50_ms), "num"),
                TableCell(fmt_ms(r.logon_p95_ms), "num"),
                latency_change(r.change_logon_p95_pct, report.slower_pct),
                TableCell(fmt_ms(r.ping_p95_ms), "num"),
                latency_change(r.change_ping_p95_pct, report.slower_pct),
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


# ---- routes ----

router = APIRouter()
WeekQ = Annotated[
    str | None,
    Query(
        max_length=20,
        description="ISO week YYYY-Www, or 'current' (default: the last complete week)",
    ),
]
SlowerQ = Annotated[float, Query(gt=0, le=1000, description="p95 increase (percent) called worse")]
DropQ = Annotated[
    float, Query(gt=0, le=100, description="availability drop (percentage points) called worse")
]
TargetFilterQ = Annotated[
    str | None, Query(max_length=63, description="one target (default or empty: all)")
]


def _report(
    conn: Connection, week: str | None, slower: float, drop: float, target: str | None
) -> ReportOut:
    w = parse_week(week, datetime.now(UTC))
    targets = [target_or_404(conn, target)] if target else load_targets(conn)
    return build_report(conn, targets, w, slower=slower, drop=drop)


@router.get(
    "/api/v1/report",
    tags=["api"],
    summary="The weekly report: availability, logon/ping p95 and week-over-week change per mode",
)
def report_api(
    conn: ConnDep,
    week: WeekQ = None,
    slower: SlowerQ = 10.0,
    drop: DropQ = 0.1,
    target: TargetFilterQ = None,
) -> ReportOut:
    return _report(conn, week, slower, drop, target)


@router.get(
    "/api/v1/report.csv",
    tags=["api"],
    summary="The weekly report's table as CSV (the same cells as the page)",
    response_class=Response,
)
def report_csv(
    conn: ConnDep,
    week: WeekQ = None,
    slower: SlowerQ = 10.0,
    drop: DropQ = 0.1,
    target: TargetFilterQ = None,
) -> Response:
    rep = _report(conn, week, slower, drop, target)
    name = f"connwatch-report-{rep.week}{'' if rep.complete else '-so-far'}.csv"
    return Response(
        to_csv(rep),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@router.get("/report", response_class=HTMLResponse, include_in_schema=False)
def report_page(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    week: WeekQ = None,
    slower: SlowerQ = 10.0,
    drop: DropQ = 0.1,
    target: TargetFilterQ = None,
) -> Response:
    rep = _report(conn, week, slower, drop, target)
    params = {k: v for k, v in request.query_params.items() if v}
    return templates.TemplateResponse(
        request,
        "report.html",
        {
            "title": f"Weekly report {rep.week}",
            "active": "Report",
            "r": rep,
            "columns": [(c, c in NUMERIC) for c in COLUMNS],
            "cells": table(rep),
            "params": params,
            "generated": datetime.now(UTC),
            "targets": load_targets(conn),
            "target": target or "",
        },
    )
