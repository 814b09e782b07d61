"""What the server saw, shaped for pages: the server-side charts under the latency
charts, the "what the server saw" panel of a window (Spikes page, incident links, the
server page), and the server's cost per logon beside the client's on the compare page.

Numbers come from the serverstats probe (:mod:`app.probes.serverstats`, meanings in
docs/probes.md) through :mod:`app.store.read.serverstats`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import quote, urlencode

from pydantic import BaseModel, Field
from sqlalchemy.engine import Connection

from app.explain import explain
from app.store.read.serverstats import (
    CHART_METRICS,
    MetricSummary,
    server_logon_cost,
    server_series,
    server_window,
)
from app.web.palette import INSTANCE_COLORS
from app.web.views.lookups import TargetInfo

# name -> (label, unit, group); the charts' rows in this order
METRIC_INFO: dict[str, tuple[str, str, str]] = {
    "logons_per_s": ("Logons per second", "/s", "Logons"),
    "cm_ms_per_logon": ("Server time per logon", "ms", "Logons"),
    "pool_waits_per_s": ("DRCP pool waits per second", "/s", "DRCP pool"),
    "pool_busy_pct": ("DRCP pool busy, % of its maximum", "%", "DRCP pool"),
    "dispatcher_busy_pct": ("Dispatchers busy", "%", "Shared servers"),
    "common_wait_ms": ("Wait for a shared server", "ms", "Shared servers"),
    "processes_pct": ("Processes, % of the limit", "%", "Limits"),
    "sessions_pct": ("Sessions, % of the limit", "%", "Limits"),
    "pool_requests_per_s": ("DRCP requests per second", "/s", "DRCP pool"),
    "pool_hit_pct": ("DRCP hits, of requests", "%", "DRCP pool"),
    "pool_timeouts_per_s": ("DRCP requests timed out per second", "/s", "DRCP pool"),
    "authpool_waiters": ("Waiting for an authentication server", "", "DRCP pool"),
    "dispatcher_wait_ms": ("Wait in the dispatcher queue, per item", "ms", "Shared servers"),
    "logons_current": ("Sessions now (logons current)", "", "Logons"),
    "processes": ("Processes", "", "Limits"),
    "processes_max": ("Processes, most since startup", "", "Limits"),
    "processes_limit": ("Processes limit", "", "Limits"),
    "sessions": ("Sessions", "", "Limits"),
    "sessions_limit": ("Sessions limit", "", "Limits"),
    "shared_servers_highwater": ("Shared servers, most at once", "", "Shared servers"),
    "shared_servers_max": ("Shared servers allowed (max_shared_servers)", "", "Shared servers"),
    "circuits": ("Virtual circuits now", "", "Shared servers"),
}
NO_SERIES = (
    "No serverstats series on this target: add the probe `serverstats` to one of its "
    "modes (grants in docs/probes.md) to see what the server saw."
)


def serverstats_ids(target: TargetInfo) -> list[int]:
    return [s.id for m in target.modes for s in m.series_for("serverstats")]


def _interval(target: TargetInfo) -> timedelta:
    ms = [s.interval_ms for m in target.modes for s in m.series_for("serverstats")]
    return timedelta(milliseconds=max(ms or [60_000]))


# -- the charts ------------------------------------------------------------------------


class MetricOut(BaseModel):
    name: str
    label: str
    unit: str
    group: str


class MetricPoints(BaseModel):
    t: list[datetime] = Field(description="bucket starts")
    mean: list[float]
    max: list[float]


class InstanceChartOut(BaseModel):
    inst_id: int
    instance: str | None
    color: str
    resets: list[datetime] = Field(description="buckets in which the instance restarted")
    series: dict[str, MetricPoints]


class ServerChartOut(BaseModel):
    target: str
    window_start: datetime
    window_end: datetime
    start: datetime
    end: datetime
    resolution: str = Field(description="raw (one reading per run) or 1h (hourly rows)")
    step_s: float
    metrics: list[MetricOut]
    instances: list[InstanceChartOut]
    note: str | None = None


def server_chart(
    conn: Connection, target: TargetInfo, start: datetime, end: datetime, points: int
) -> ServerChartOut:
    ids = serverstats_ids(target)
    res = server_series(conn, ids, start, end, max_points=points, min_step=_interval(target))
    return ServerChartOut(
        target=target.name,
        window_start=start,
        window_end=end,
        start=res.start,
        end=res.end,
        resolution=res.source,
        step_s=res.step.total_seconds(),
        metrics=[
            MetricOut(
                name=n, label=METRIC_INFO[n][0], unit=METRIC_INFO[n][1], group=METRIC_INFO[n][2]
            )
            for n in CHART_METRICS
        ],
        instances=[
            InstanceChartOut(
                inst_id=inst.inst_id,
                instance=inst.instance,
                color=INSTANCE_COLORS[k % len(INSTANCE_COLORS)],
                resets=inst.resets,
                series={
                    name: MetricPoints(
                        t=[p.bucket for p in pts],
                        mean=[p.mean for p in pts],
                        max=[p.max for p in pts],
                    )
                    for name, pts in inst.metrics.items()
                },
            )
            for k, inst in enumerate(res.instances)
        ],
        note=None if ids else NO_SERIES,
    )


# -- the panel -------------------------------------------------------------------------


class PanelRow(BaseModel):
    name: str
    label: str
    unit: str
    mean: float | None
    max: float | None
    before: float | None = Field(description="mean over the same length of time just before")
    notable: bool
    primary: bool = Field(description="one of the charted figures, or notable: shown first")


class PanelInstance(BaseModel):
    instance: str | None
    readings: int
    resets: int
    findings: list[str]
    rows: list[PanelRow]


class Unreadable(BaseModel):
    view: str
    code: str
    meaning: str


class ServerPanelOut(BaseModel):
    target: str
    start: datetime
    end: datetime
    has_series: bool
    instances: list[PanelInstance]
    unavailable: list[Unreadable]
    classes: dict[str, dict[str, float]]
    findings: list[str] = Field(description="the notable ones, all instances, in words")
    url: str = Field(description="the server page for this window")
    note: str | None = None


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "n/a"
    text = (
        f"{v:.0f}" if abs(v) >= 100 or unit == "%" else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    )
    return f"{text} {unit}".strip() if unit not in ("%", "/s") else f"{text}{unit}"


def _notable(name: str, m: MetricSummary) -> str | None:
    """A sentence when this number stands out in the window, else None."""
    top, mean, before = m.max or 0.0, m.mean or 0.0, m.before_mean
    was = f" (before: {_fmt(before, METRIC_INFO[name][1])})" if before is not None else ""
    rules: dict[str, tuple[bool, str]] = {
        "pool_waits_per_s": (top > 0, f"DRCP pool waits, up to {_fmt(top, '/s')}"),
        "pool_busy_pct": (top >= 90, f"DRCP pool {_fmt(top, '%')} busy"),
        "pool_timeouts_per_s": (top > 0, f"DRCP requests timing out, up to {_fmt(top, '/s')}"),
        "authpool_waiters": (top > 0, f"logons waiting for an authentication server ({top:.0f})"),
        "dispatcher_busy_pct": (top >= 50, f"dispatchers {_fmt(top, '%')} busy"),
        "common_wait_ms": (top >= 10, f"calls waited {_fmt(top, 'ms')} for a shared server"),
        "dispatcher_wait_ms": (top >= 10, f"dispatcher queue wait {_fmt(top, 'ms')} per item"),
        "processes_pct": (top >= 90, f"processes at {_fmt(top, '%')} of the limit"),
        "sessions_pct": (top >= 90, f"sessions at {_fmt(top, '%')} of the limit"),
        "logons_per_s": (
            before is not None and mean > 1 and mean >= 2 * before,
            f"logons {_fmt(mean, '/s')}",
        ),
        "cm_ms_per_logon": (
            before is not None and before > 0 and mean >= 1.5 * before,
            f"server time per logon {_fmt(mean, 'ms')}",
        ),
    }
    hit, text = rules.get(name, (False, ""))
    return text + (was if name not in ("processes_pct", "sessions_pct") else "") if hit else None


def server_page_url(target: str, start: datetime, end: datetime) -> str:
    q = urlencode({"from": start.isoformat(), "to": end.isoformat()})
    return f"/target/{quote(target)}/server?{q}"


def server_panel(
    conn: Connection, target: TargetInfo, start: datetime, end: datetime
) -> ServerPanelOut:
    ids = serverstats_ids(target)
    win = server_window(conn, ids, start, end)
    out = ServerPanelOut(
        target=target.name,
        start=start,
        end=end,
        has_series=bool(ids),
        instances=[],
        unavailable=[
            Unreadable(view=v, code=c, meaning=_unreadable(c))
            for v, c in sorted(win.unavailable.items())
        ],
        classes=win.classes,
        findings=[],
        url=server_page_url(target.name, start, end),
        note=None if ids else NO_SERIES,
    )
    several = len(win.instances) > 1
    for inst in win.instances:
        rows: list[PanelRow] = []
        found: list[str] = []
        for name, (label, unit, _) in METRIC_INFO.items():
            m = inst.metrics.get(name)
            if m is None:
                continue
            sentence = _notable(name, m)
            if sentence:
                found.append(sentence)
            rows.append(
                PanelRow(
                    name=name,
                    label=label,
                    unit=unit,
                    mean=m.mean,
                    max=m.max,
                    before=m.before_mean,
                    notable=sentence is not None,
                    primary=sentence is not None or name in CHART_METRICS,
                )
            )
        if inst.resets:
            found.insert(0, "the instance restarted (counters reset)")
        out.instances.append(
            PanelInstance(
                instance=inst.instance,
                readings=inst.readings,
                resets=inst.resets,
                findings=found,
                rows=rows,
            )
        )
        prefix = f"{inst.instance}: " if several and inst.instance else ""
        out.findings.extend(prefix + f for f in found)
    if ids and not win.instances:
        out.note = (
            "No server readings in this window (the serverstats probe did not run or failed)."
        )
    return out


def _unreadable(code: str) -> str:
    if code == "NO-ROWS":
        return (
            "no rows: in a CDB the DRCP views answer only in CDB$ROOT unless "
            "ENABLE_PER_PDB_DRCP is set (docs/probes.md)"
        )
    found = explain(code)
    return found.meaning if found is not None else code


# -- the compare page: server cost per logon ------------------------------------------------


class LogonCostOut(BaseModel):
    mode: str
    n: int = Field(description="logons with the server's time read (connping server_time)")
    client_p50_ms: float | None
    server_p50_ms: float | None
    rest_ms: float | None = Field(description="client minus server: network and client work")


def logon_costs(
    conn: Connection, target: TargetInfo, modes: list[str], start: datetime, end: datetime
) -> list[LogonCostOut]:
    """Per mode: the median server time per logon next to the median client logon of the
    same connping samples (raw samples of the window)."""
    owner = {
        s.id: m.name for m in target.modes if m.name in modes for s in m.series_for("connping")
    }
    costs = server_logon_cost(conn, list(owner), start, end)
    out: list[LogonCostOut] = []
    for m in target.modes:
        mine = [c for sid, c in costs.items() if owner.get(sid) == m.name]
        if m.name not in modes or not mine:
            continue
        best = max(mine, key=lambda c: c.n)
        rest = (
            best.client_p50_ms - best.server_p50_ms
            if best.client_p50_ms is not None and best.server_p50_ms is not None
            else None
        )
        out.append(
            LogonCostOut(
                mode=m.name,
                n=sum(c.n for c in mine),
                client_p50_ms=best.client_p50_ms,
                server_p50_ms=best.server_p50_ms,
                rest_ms=rest,
            )
        )
    return out


# -- incidents: one panel per spike or outage of a target with server readings -------------

MAX_INCIDENT_PANELS = 40


def incident_key(target: str, start: datetime) -> str:
    return f"{target}|{start.isoformat()}"


def incident_panels(
    conn: Connection,
    targets: list[TargetInfo],
    incidents: list[tuple[str, datetime, datetime, datetime]],
) -> dict[str, ServerPanelOut]:
    """The panel of each incident ``(target, start, window from, window to)`` whose target
    reads server figures (at most :data:`MAX_INCIDENT_PANELS`), keyed by
    :func:`incident_key`."""
    by_name = {t.name: t for t in targets if serverstats_ids(t)}
    out: dict[str, ServerPanelOut] = {}
    for name, start, a, b in incidents:
        target = by_name.get(name)
        if target is None or len(out) >= MAX_INCIDENT_PANELS:
            continue
        out[incident_key(name, start)] = server_panel(conn, target, a, b)
    return out
