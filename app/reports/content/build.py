"""The whole report for one period and selection: :func:`build_report` -> :class:`ReportOut`.

The API returns it as JSON; the page, the PDF, the CSV and the e-mail are rendered
from it (``app.reports.render``), so every figure is the same everywhere.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from urllib.parse import urlencode

from pydantic import BaseModel, Field
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.reports.content import change as wow
from app.reports.content.comparison import compare_modes
from app.reports.content.events import EventOut, read_events
from app.reports.content.figures import ModeFigures, PeriodData, read_period
from app.reports.content.incidents import read_incidents
from app.reports.content.objectives import SloRow, read_objectives
from app.reports.content.period import WEEK, Period, current_week, last_week
from app.reports.content.scope import ModeScope, Scope, Selection, load_scope
from app.reports.content.summary import DEFINITIONS, summarise
from app.reports.content.trend import WEEKS, ModeTrend, read_trend, trend_weeks
from app.store.read.availability import availability

TOP_ERRORS = 10


class VerdictOut(BaseModel):
    word: str = Field(
        description="slower / faster (p95), lower / higher (availability), 'no clear change', "
        "'no previous period' or 'no data'"
    )
    change: float | None = Field(description="percent (p95) or percentage points (availability)")
    ci_low: float | None = Field(None, description="95 % interval of the change (p95 only)")
    ci_high: float | None = None
    noise: float | None = Field(None, description="week-to-week threshold in percent")
    reason: str = Field("", description="why a change is not called slower/faster")


class ReportRow(BaseModel):
    target: str
    mode: str
    kind: str
    probe: str
    samples: int
    ok: int
    failed: int = Field(description="error + timeout: unavailable")
    skipped: int = Field(description="runs the agent could not start in time: not counted")
    availability_pct: float | None
    prev_availability_pct: float | None
    change_availability_pts: float | None
    availability_change: VerdictOut
    logon_p50_ms: float | None
    logon_p95_ms: float | None
    prev_logon_p95_ms: float | None
    change_logon_p95_pct: float | None
    logon_change: VerdictOut
    ping_p95_ms: float | None
    prev_ping_p95_ms: float | None
    change_ping_p95_pct: float | None
    ping_change: VerdictOut


class ModeCount(BaseModel):
    target: str
    mode: str
    count: int


class ErrorRow(BaseModel):
    code: str
    error_class: str
    count: int
    modes: list[ModeCount]


class TrendWeek(BaseModel):
    week: datetime
    availability_pct: float | None
    logon_p95_ms: float | None


class TrendOut(BaseModel):
    target: str
    mode: str
    kind: str
    weeks: list[TrendWeek]


class IncidentOut(BaseModel):
    kind: str = Field(description="outage or spike")
    target: str
    mode: str
    start: datetime
    end: datetime
    duration_s: float
    failed: int
    codes: dict[str, int]
    p95_ms: float | None
    baseline_ms: float | None
    link: str = Field(description="dashboard path with the raw samples around it")


class ComparisonOut(BaseModel):
    target: str
    baseline: str
    sentence: str


class ReportOut(BaseModel):
    kind: str = Field(description="week or month")
    week: str = Field(description="the period's label: 2026-W47 or 2026-03")
    start: datetime
    end: datetime
    complete: bool
    previous_week: str
    next_week: str | None
    selection: str
    generated_at: datetime
    definitions: dict[str, str]
    summary: list[str]
    rows: list[ReportRow]
    no_samples: list[str] = Field(description="target/mode with no samples in either period")
    errors: list[ErrorRow] = Field(description="most frequent first, at most 10")
    trend: list[TrendOut]
    trend_weeks: list[datetime]
    incidents: list[IncidentOut]
    comparisons: list[ComparisonOut]
    slos: list[SloRow] = Field(description="each SLO in total (target empty) and per mode")
    events: list[EventOut] = Field(
        default_factory=list, description="alert firings, maintenance windows, annotations"
    )
    link: str = Field(description="dashboard path of this report")


def default_period(conn: Connection, scope: Scope, now: datetime) -> Period:
    """The last complete week, or the current week so far when the last week has no
    samples in the scope (a fresh install)."""
    last = last_week(now)
    if (
        scope.series_ids
        and conn.execute(
            text(
                "select exists (select 1 from rollup_1h where series_id = any(:ids) "
                "and bucket >= :a and bucket < :b)"
            ),
            {"ids": scope.series_ids, "a": last.start, "b": last.end},
        ).scalar()
    ):
        return last
    return current_week(now)


def floor2(v: float | None) -> float | None:
    """Percent floored to 0.01, so only a period without failures shows 100.00."""
    return None if v is None else math.floor(v * 100.0 + 1e-9) / 100.0


def _verdict(v: wow.Verdict) -> VerdictOut:
    return VerdictOut(
        word=v.word, change=v.change, ci_low=v.ci_low, ci_high=v.ci_high, noise=v.noise,
        reason=v.reason,
    )  # fmt: skip


def _pct(now: float | None, before: float | None) -> float | None:
    if now is None or before is None or before == 0:
        return None
    return (now / before - 1.0) * 100.0


def _row(
    m: ModeScope, c: ModeFigures, p: ModeFigures, data: PeriodData, trend: ModeTrend | None,
    logon_blocks: wow.ModeBlocks,
) -> ReportRow:  # fmt: skip
    per, prev = data.period, data.previous
    blocks = {
        (name, when): wow.mode_blocks(b, m.series_ids, pp.start, pp.end)
        for name, b in (("logon", data.logon), ("ping", data.ping))
        for when, pp in (("cur", per), ("prev", prev))
        if (name, when) != ("logon", "cur")
    }
    blocks["logon", "cur"] = logon_blocks

    def hist(phase: str) -> list[float | None]:
        if trend is None or per.kind != "week":
            return []
        return trend.p95s_before(per.start, phase)

    pc = p if not p.empty else None
    a, pa = c.counts.availability, pc.counts.availability if pc else None
    logon = wow.latency_verdict(
        c.logon_p95_ms, pc.logon_p95_ms if pc else None, blocks["logon", "cur"],
        blocks["logon", "prev"], hist("logon"), seed=m.mode_id * 2,
    )  # fmt: skip
    ping = wow.latency_verdict(
        c.ping_p95_ms, pc.ping_p95_ms if pc else None, blocks["ping", "cur"],
        blocks["ping", "prev"], hist("ping"), seed=m.mode_id * 2 + 1,
    )  # fmt: skip
    return ReportRow(
        target=m.target,
        mode=m.mode,
        kind=m.kind,
        probe=m.probe,
        samples=c.counts.n,
        ok=c.counts.ok,
        failed=c.counts.failed,
        skipped=c.counts.skipped,
        availability_pct=floor2(a),
        prev_availability_pct=floor2(pa),
        change_availability_pts=a - pa if a is not None and pa is not None else None,
        availability_change=_verdict(wow.availability_verdict(a, pa)),
        logon_p50_ms=c.logon_p50_ms,
        logon_p95_ms=c.logon_p95_ms,
        prev_logon_p95_ms=pc.logon_p95_ms if pc else None,
        change_logon_p95_pct=_pct(c.logon_p95_ms, pc.logon_p95_ms if pc else None),
        logon_change=_verdict(logon),
        ping_p95_ms=c.ping_p95_ms,
        prev_ping_p95_ms=pc.ping_p95_ms if pc else None,
        change_ping_p95_pct=_pct(c.ping_p95_ms, pc.ping_p95_ms if pc else None),
        ping_change=_verdict(ping),
    )


def _errors(conn: Connection, scope: Scope, period: Period) -> list[ErrorRow]:
    owner = scope.owner()
    if not owner:
        return []
    res = availability(conn, list(owner), period.start, period.end)
    by_code: dict[str, tuple[str, dict[ModeScope, int]]] = {}
    for s in res.series:
        for e in s.target_errors:  # probe-side errors (class PROBE) are not the target's
            _, per_mode = by_code.setdefault(e.code, (e.error_class, {}))
            m = owner[s.series_id]
            per_mode[m] = per_mode.get(m, 0) + e.count
    rows = [
        ErrorRow(
            code=code,
            error_class=cls,
            count=sum(per_mode.values()),
            modes=[
                ModeCount(target=m.target, mode=m.mode, count=c)
                for m, c in sorted(per_mode.items(), key=lambda kv: (-kv[1], kv[0].label))
            ],
        )
        for code, (cls, per_mode) in by_code.items()
    ]
    rows.sort(key=lambda r: (-r.count, r.code))
    return rows[:TOP_ERRORS]


def report_link(period: Period, selection: Selection) -> str:
    q = {"week": period.label}
    if selection.patterns:
        q["targets"] = ",".join(selection.patterns)
    if selection.labels:
        q["labels"] = ",".join(f"{k}={v}" for k, v in selection.labels)
    return "/report?" + urlencode(q)


def build_report(
    conn: Connection,
    period: Period | None = None,
    selection: Selection | None = None,
    *,
    now: datetime | None = None,
) -> ReportOut:
    """Everything the report says about ``period`` (default: :func:`default_period`)."""
    now = now or datetime.now(UTC)
    scope = load_scope(conn, selection)
    period = period or default_period(conn, scope, now)
    data = read_period(conn, scope, period)
    trends = read_trend(conn, scope, period)
    logon_now = {
        m.mode_id: wow.mode_blocks(data.logon, m.series_ids, period.start, period.end)
        for m in scope.modes
    }
    rows: list[ReportRow] = []
    missing: list[str] = []
    for m in scope.modes:
        c, p = data.figures(m)
        if c.empty and p.empty:
            missing.append(m.label)
            continue
        rows.append(_row(m, c, p, data, trends.get(m.mode_id), logon_now[m.mode_id]))
    first, _ = trend_weeks(period)
    weeks = [first + i * WEEK for i in range(WEEKS)]
    trend_out = [
        TrendOut(
            target=m.target,
            mode=m.mode,
            kind=m.kind,
            weeks=[
                TrendWeek(
                    week=pt.week, availability_pct=pt.availability, logon_p95_ms=pt.logon_p95_ms
                )
                for pt in trends[m.mode_id].points
                if pt.week >= first
            ],
        )
        for m in scope.modes
        if m.mode_id in trends and any(pt.week >= first for pt in trends[m.mode_id].points)
    ]
    incidents = [
        IncidentOut(
            kind=i.kind, target=i.target, mode=i.mode, start=i.start, end=i.end,
            duration_s=i.duration.total_seconds(), failed=i.failed, codes=i.codes,
            p95_ms=i.p95_ms, baseline_ms=i.baseline_ms, link=i.link,
        )
        for i in read_incidents(conn, scope, period)
    ]  # fmt: skip
    comparisons = [
        cmp for _, ms in scope.targets() if (cmp := compare_modes(ms, logon_now)) is not None
    ]
    slos = read_objectives(conn, scope, period)
    events = read_events(conn, scope, period)
    following = period.following(now)
    return ReportOut(
        kind=period.kind,
        week=period.label,
        start=period.start,
        end=period.end,
        complete=period.complete,
        previous_week=period.previous().label,
        next_week=following.label if following else None,
        selection=scope.selection.describe(),
        generated_at=now,
        definitions=DEFINITIONS,
        summary=summarise(rows, period, incidents, slos, events),
        rows=rows,
        no_samples=sorted(missing),
        errors=_errors(conn, scope, period),
        trend=trend_out,
        trend_weeks=weeks,
        incidents=incidents,
        slos=slos,
        events=events,
        comparisons=[
            ComparisonOut(target=c.target, baseline=c.baseline, sentence=c.sentence)
            for c in comparisons
        ],
        link=report_link(period, scope.selection),
    )
