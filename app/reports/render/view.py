"""The report shaped for templates: every text formatted, every chart drawn, every link absolute.

One :class:`ReportView` feeds the page (``templates/report.html``), the PDF
(``templates/report/document.html``) and the e-mail (``templates/report/mail.*``),
through the shared body ``templates/report/_body.html``, which needs no filters.
Times are shown in the view's time zone (UTC unless a subscription names another).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from app.explain import explain
from app.reports.content.build import ReportOut, TrendOut
from app.reports.content.summary import duration_words
from app.reports.render.charts import Line, legend, line_chart
from app.reports.render.table import COLUMNS, NUMERIC, TableCell, fmt_ms, table


@dataclass(frozen=True, slots=True)
class TargetCharts:
    name: str
    sentence: str  # the mode comparison ("" when there is none)
    availability_svg: str
    p95_svg: str
    legend_html: str


@dataclass(frozen=True, slots=True)
class IncidentView:
    when: str
    duration: str
    kind: str
    what: str  # target/mode
    detail: str  # codes and failed runs, or p95 against its baseline
    link: str


@dataclass(frozen=True, slots=True)
class EventView:
    when: str
    kind: str
    text: str
    link: str


@dataclass(frozen=True, slots=True)
class ErrorView:
    code: str
    error_class: str
    count: int
    where: str
    meaning: str = ""


@dataclass(frozen=True, slots=True)
class SloView:
    name: str
    where: str
    total: bool
    objective: str
    period: str
    month: str
    bad: str
    budget: str
    burn: str
    cls: str  # "worse" when missed


def _pct3(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f} %"


def _slos(r: ReportOut) -> tuple[list[SloView], list[str]]:
    rows = []
    meanings: dict[str, str] = {}
    for s in r.slos:
        meanings[s.slo] = f"{s.slo}: {s.meaning}"
        rows.append(
            SloView(
                name=s.slo, where=f"{s.target}/{s.mode}" if s.target else "all its modes",
                total=not s.target, objective=f"{s.objective:g} %",
                period=_pct3(s.attainment_period) + ("" if s.met_period is None else
                                                     " met" if s.met_period else " missed"),
                month=_pct3(s.attainment_month), bad=f"{s.bad_period} of {s.total_period}",
                budget="—" if s.budget_left_pct is None
                else f"{s.budget_left_pct:.0f} % of {s.window_days} d",
                burn="—" if s.burn_period is None else f"{s.burn_period:.2f}x",
                cls="worse" if s.met_period is False else "",
            )
        )  # fmt: skip
    return rows, list(meanings.values())


@dataclass(slots=True)
class ReportView:
    r: ReportOut
    title: str
    period_text: str
    tz: str
    base_url: str
    columns: list[tuple[str, bool]]
    cells: list[list[TableCell]]
    charts: list[TargetCharts] = field(default_factory=list)
    incidents: list[IncidentView] = field(default_factory=list)
    errors: list[ErrorView] = field(default_factory=list)
    slos: list[SloView] = field(default_factory=list)
    events: list[EventView] = field(default_factory=list)
    slo_meanings: list[str] = field(default_factory=list)
    generated_text: str = ""
    link: str = ""

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path


def fmt_time(t: datetime, tz: ZoneInfo, *, with_zone: bool = True) -> str:
    local = t.astimezone(tz)
    text = local.strftime("%a %d %b %Y %H:%M")
    return f"{text} {local.tzname()}" if with_zone else text


def _trend_lines(trend: list[TrendOut], weeks: list[datetime], attr: str) -> list[Line]:
    out = []
    for t in trend:
        by_week = {w.week: getattr(w, attr) for w in t.weeks}
        out.append(Line(t.mode, t.kind, [by_week.get(w) for w in weeks]))
    return out


def _charts(r: ReportOut) -> list[TargetCharts]:
    sentences = {c.target: c.sentence for c in r.comparisons}
    per_target: dict[str, list[TrendOut]] = {}
    for t in r.trend:
        per_target.setdefault(t.target, []).append(t)
    weeks = r.trend_weeks
    partial = not r.complete and r.kind == "week"
    out = []
    for name, trends in per_target.items():
        avail = _trend_lines(trends, weeks, "availability_pct")
        p95 = _trend_lines(trends, weeks, "logon_p95_ms")
        out.append(
            TargetCharts(
                name=name,
                sentence=sentences.get(name, ""),
                availability_svg=line_chart(
                    f"{name}: availability per week", weeks, avail, unit="%",
                    partial_last=partial, floor_at=0.0, ceiling=100.0,
                ),
                p95_svg=line_chart(
                    f"{name}: logon p95 per week", weeks, p95, unit="ms", partial_last=partial,
                    floor_at=0.0,
                ),
                legend_html=legend(avail),
            )
        )  # fmt: skip
    return out


def _incidents(r: ReportOut, tz: ZoneInfo, base: str) -> list[IncidentView]:
    out = []
    for i in r.incidents:
        if i.kind == "outage":
            codes = ", ".join(
                f"{c} x{n}" for c, n in sorted(i.codes.items(), key=lambda kv: -kv[1])
            )
            detail = f"{i.failed} failed runs in a row" + (f": {codes}" if codes else "")
            duration = duration_words(i.duration_s) if i.duration_s else "one run"
        else:
            detail = f"logon p95 {fmt_ms(i.p95_ms)} ms against a usual {fmt_ms(i.baseline_ms)} ms"
            duration = duration_words(i.duration_s)
        out.append(
            IncidentView(
                when=fmt_time(i.start, tz), duration=duration, kind=i.kind,
                what=f"{i.target}/{i.mode}", detail=detail, link=base.rstrip("/") + i.link,
            )
        )  # fmt: skip
    return out


def _meaning(code: str) -> str:
    e = explain(code)
    return f"{e.meaning}; likely: {e.cause}" if e else ""


def make_view(
    r: ReportOut,
    *,
    base_url: str = "",
    tz: str = "UTC",
) -> ReportView:
    zone = ZoneInfo(tz)
    slos, slo_meanings = _slos(r)
    noun = "week" if r.kind == "week" else "month"
    label = f"Weekly report {r.week}" if r.kind == "week" else f"Monthly report {r.week}"
    span = (
        f"one whole {noun}"
        if r.complete
        else f"this {noun} so far, compared with the whole {noun} before"
    )
    period = f"{fmt_time(r.start, zone)} to {fmt_time(r.end, zone)} ({span})"
    return ReportView(
        r=r,
        title=label + ("" if r.complete else " (so far)"),
        period_text=period,
        tz=tz,
        base_url=base_url,
        columns=[(c, c in NUMERIC) for c in COLUMNS],
        cells=table(r),
        charts=_charts(r),
        incidents=_incidents(r, zone, base_url),
        errors=[
            ErrorView(
                e.code,
                e.error_class,
                e.count,
                ", ".join(f"{m.target}/{m.mode} ({m.count})" for m in e.modes),
                _meaning(e.code),
            )
            for e in r.errors
        ],
        slos=slos,
        slo_meanings=slo_meanings,
        events=[
            EventView(
                when=fmt_time(e.at, zone)
                + (f" to {fmt_time(e.ends_at, zone, with_zone=False)}" if e.ends_at else ""),
                kind=e.kind,
                text=e.text,
                link=base_url.rstrip("/") + e.link,
            )
            for e in r.events
        ],
        generated_text=fmt_time(r.generated_at, zone),
        link=base_url.rstrip("/") + r.link,
    )
