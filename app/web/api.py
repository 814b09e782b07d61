"""The JSON API under ``/api/v1``: every chart on every page is drawn from one of these.

Parameters are validated strictly (unknown phases, probes, modes, ranges -> 422 with
a message naming the parameter; unknown targets -> 404). Responses never hold a
password: the models in :mod:`app.web.schemas` have no field for one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Path, Query
from fastapi.responses import StreamingResponse

from app.store import probe_requests
from app.store.agents import agent_status
from app.web import breakdown, samples_view
from app.web.comparing import CompareOut, DailyOut, compare_view, daily_view
from app.web.deps import ConnDep, EngineDep
from app.web.incidents_view import IncidentsOut, incidents
from app.web.lookups import TargetInfo, load_target, load_targets
from app.web.overview import build_rows
from app.web.palette import mode_style
from app.web.readers import overview_stats, target_timeseries
from app.web.samples_view import SampleFilter, SamplesOut
from app.web.schemas import (
    AgentOut,
    BreakdownOut,
    ModeOut,
    OverviewOut,
    OverviewRowOut,
    ProbeRequestOut,
    SeriesOut,
    TargetOut,
    TimeseriesOut,
)
from app.web.sweeps import SweepOut, latest_sweeps
from app.web.timerange import parse_range

router = APIRouter(prefix="/api/v1", tags=["api"])

Phase = Literal["total", "logon", "ping", "query", "logoff", "commit", "acquire"]
Probe = Literal["connping", "sessionping", "poolacquire", "commit", "sweep"]
TargetName = Annotated[str, Path(min_length=1, max_length=63, description="target name")]
RangeQ = Annotated[
    str | None,
    Query(alias="range", description="1h, 6h, 24h, 7d, 30d, 90d or 1y (default 24h)"),
]
FromQ = Annotated[str | None, Query(alias="from", description="custom window start, ISO 8601")]
ToQ = Annotated[str | None, Query(alias="to", description="custom window end, ISO 8601")]
ModesQ = Annotated[
    str | None, Query(max_length=500, description="comma-separated mode names (default: all)")
]


def target_or_404(conn: ConnDep, name: str) -> TargetInfo:
    target = load_target(conn, name)
    if target is None:
        raise HTTPException(404, f"no target named {name!r}")
    return target


def pick_modes(target: TargetInfo, modes: str | None) -> list[str]:
    if not modes:
        return [m.name for m in target.modes]
    names = [m.strip() for m in modes.split(",") if m.strip()]
    unknown = [n for n in names if target.mode(n) is None]
    if unknown:
        raise HTTPException(
            422,
            f"modes: target {target.name!r} has no mode {', '.join(map(repr, unknown))} "
            f"(it has {', '.join(m.name for m in target.modes) or 'none'})",
        )
    return names


def _password_kind(t: TargetInfo) -> str:
    if t.password_ref:
        return "reference"
    return "encrypted" if t.has_password else "none"


def target_out(t: TargetInfo) -> TargetOut:
    return TargetOut(
        name=t.name,
        kind=t.kind,
        dsn=t.dsn,
        username=t.username,
        description=t.description,
        enabled=t.enabled,
        password=_password_kind(t),
        labels=t.labels,
        modes=[
            ModeOut(
                name=m.name,
                kind=m.kind,
                transport=m.transport,
                enabled=m.enabled,
                color=mode_style(m.kind)["color"],
                series=[
                    SeriesOut(
                        id=s.id,
                        probe=s.probe,
                        site=s.site,
                        interval_ms=s.interval_ms,
                        timeout_ms=s.timeout_ms,
                        enabled=s.enabled,
                    )
                    for s in m.series
                ],
            )
            for m in t.modes
        ],
    )


@router.get("/targets", summary="Every target with its modes and series (no secrets)")
def api_targets(conn: ConnDep) -> list[TargetOut]:
    return [target_out(t) for t in load_targets(conn)]


@router.get("/targets/{name}", summary="One target with its modes and series (no secrets)")
def api_target(conn: ConnDep, name: TargetName) -> TargetOut:
    return target_out(target_or_404(conn, name))


@router.get("/overview", summary="Every target x mode: state, current latencies, sparkline")
def api_overview(conn: ConnDep) -> OverviewOut:
    now = datetime.now(UTC)
    targets = load_targets(conn)
    rows = build_rows(targets, overview_stats(conn, targets, now), now)
    return OverviewOut(
        at=now,
        rows=[
            OverviewRowOut(
                target=r.target,
                mode=r.mode,
                mode_kind=r.mode_kind,
                state=r.state,
                reason=r.reason,
                logon_p50_ms=r.stats.logon_p50,
                logon_p95_ms=r.stats.logon_p95,
                ping_p50_ms=r.stats.ping_p50,
                ping_p95_ms=r.stats.ping_p95,
                error_rate_15m=r.error_rate,
                samples_15m=r.stats.n_15m,
                last_sample_at=r.stats.last_at,
                spark_logon_p50_ms=r.stats.spark,
            )
            for r in rows
        ],
    )


@router.get(
    "/targets/{name}/timeseries",
    summary="p5/p50/p95/p99 per bucket and mode, with error counts; resolution follows the range",
)
def api_timeseries(
    conn: ConnDep,
    name: TargetName,
    phase: Phase = "logon",
    probe: Probe = "connping",
    modes: ModesQ = None,
    range_: RangeQ = None,
    from_: FromQ = None,
    to: ToQ = None,
    points: Annotated[
        int | None,
        Query(ge=10, le=5000, description="at most this many buckets (default: by range)"),
    ] = None,
) -> TimeseriesOut:
    target = target_or_404(conn, name)
    window = parse_range(range_, from_, to)
    return target_timeseries(
        conn, target, pick_modes(target, modes), window, phase=phase, probe=probe, points=points
    )


@router.get(
    "/targets/{name}/breakdown",
    summary="p50/p95 of one timing per mode and instance (last 2 days of the window) or site",
)
def api_breakdown(
    conn: ConnDep,
    name: TargetName,
    by: Literal["instance", "site"] = "instance",
    phase: Phase = "logon",
    probe: Probe = "connping",
    modes: ModesQ = None,
    range_: RangeQ = None,
    from_: FromQ = None,
    to: ToQ = None,
) -> BreakdownOut:
    target = target_or_404(conn, name)
    window = parse_range(range_, from_, to)
    chosen = [m for m in target.modes if m.name in pick_modes(target, modes)]
    start = window.start
    if by == "site":
        rows = breakdown.by_site(conn, chosen, window.start, window.end, phase, probe)
    else:
        rows, start = breakdown.by_instance(conn, chosen, window.start, window.end, phase, probe)
    return BreakdownOut(
        target=target.name, phase=phase, by=by, start=start, end=window.end, modes=rows
    )


TargetQ = Annotated[str, Query(min_length=1, max_length=63, description="target name")]


@router.get(
    "/compare",
    summary="Per mode: distribution, percentiles, ratio of medians vs dedicated with its CI",
)
def api_compare(
    conn: ConnDep,
    target: TargetQ,
    phase: Phase = "logon",
    modes: ModesQ = None,
    range_: RangeQ = None,
    from_: FromQ = None,
    to: ToQ = None,
) -> CompareOut:
    t = target_or_404(conn, target)
    window = parse_range(range_, from_, to)
    return compare_view(conn, t, window.start, window.end, phase, pick_modes(t, modes))


@router.get("/compare/daily", summary="p50 per UTC day and mode (at least the last 7 days)")
def api_compare_daily(
    conn: ConnDep,
    target: TargetQ,
    phase: Phase = "logon",
    modes: ModesQ = None,
    range_: RangeQ = None,
    from_: FromQ = None,
    to: ToQ = None,
) -> DailyOut:
    t = target_or_404(conn, target)
    window = parse_range(range_, from_, to)
    return daily_view(conn, t, window.start, window.end, phase, pick_modes(t, modes))


@router.get("/compare/sweep", summary="The latest sweep run per mode: logon p50/p90 per level")
def api_compare_sweep(
    conn: ConnDep,
    target: TargetQ,
    modes: ModesQ = None,
    range_: RangeQ = None,
    from_: FromQ = None,
    to: ToQ = None,
) -> SweepOut:
    t = target_or_404(conn, target)
    window = parse_range(range_, from_, to)
    return latest_sweeps(conn, t, window.start, window.end, pick_modes(t, modes))


@router.get("/incidents", summary="Spikes (p95 over the weekly baseline) and outages (error runs)")
def api_incidents(
    conn: ConnDep,
    target: Annotated[
        str | None, Query(max_length=63, description="one target (default all)")
    ] = None,
    phase: Phase = "logon",
    factor: Annotated[float, Query(gt=1.0, le=100.0, description="spike threshold")] = 2.0,
    samples: Annotated[bool, Query(description="include the raw samples around each")] = False,
    range_: RangeQ = None,
    from_: FromQ = None,
    to: ToQ = None,
) -> IncidentsOut:
    window = parse_range(range_, from_, to, default="7d")
    targets = [target_or_404(conn, target)] if target else load_targets(conn)
    return incidents(
        conn, targets, window.start, window.end, phase=phase, factor=factor, with_samples=samples
    )


StatusQ = Annotated[
    Literal["ok", "error", "timeout", "skipped", "failed"] | None,
    Query(description="failed = error or timeout"),
]
CodeQ = Annotated[str | None, Query(max_length=40, description="error code, e.g. ORA-12541")]
ModeQ = Annotated[str | None, Query(max_length=63, description="mode name (needs target)")]


@router.get("/samples", summary="Raw samples, filtered, one keyset page at a time")
def api_samples(
    conn: ConnDep,
    target: Annotated[str | None, Query(max_length=63)] = None,
    mode: ModeQ = None,
    status: StatusQ = None,
    code: CodeQ = None,
    range_: RangeQ = None,
    from_: FromQ = None,
    to: ToQ = None,
    after: Annotated[
        str | None, Query(max_length=200, description="next from the last page")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    order: Literal["newest", "oldest"] = "newest",
) -> SamplesOut:
    window = parse_range(range_, from_, to)
    f = SampleFilter(target, mode, status, code)
    return samples_view.page(
        conn, f, window.start, window.end, after=after, limit=limit, newest_first=order == "newest"
    )


@router.get(
    "/samples.csv",
    summary="Raw samples as CSV (streamed, oldest first)",
    response_class=StreamingResponse,
)
def api_samples_csv(
    engine: EngineDep,
    conn: ConnDep,
    target: Annotated[str | None, Query(max_length=63)] = None,
    mode: ModeQ = None,
    status: StatusQ = None,
    code: CodeQ = None,
    range_: RangeQ = None,
    from_: FromQ = None,
    to: ToQ = None,
) -> StreamingResponse:
    window = parse_range(range_, from_, to)
    f = SampleFilter(target, mode, status, code)
    stream = samples_view.csv_stream(engine, conn, f, window.start, window.end)
    name = f"connwatch-samples-{window.start:%Y%m%dT%H%M}-{window.end:%Y%m%dT%H%M}.csv"
    return StreamingResponse(
        stream,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@router.get("/agents", summary="Every agent: heartbeat and self-monitoring counters")
def api_agents(conn: ConnDep) -> list[AgentOut]:
    return [
        AgentOut(
            name=a.name,
            site=a.site,
            version=a.version,
            hostname=a.hostname,
            pid=a.pid,
            started_at=a.started_at,
            heartbeat_at=a.heartbeat_at,
            heartbeat_age_s=a.age_s,
            alive=a.alive,
            stats=a.stats,
        )
        for a in agent_status(conn)
    ]


@router.get("/probe-requests/{request_id}", summary="A 'test now' request and its result")
def api_probe_request(
    conn: ConnDep, request_id: Annotated[int, Path(ge=1, le=2**62)]
) -> ProbeRequestOut:
    r = probe_requests.get(conn, request_id)
    if r is None:
        raise HTTPException(404, f"no probe request {request_id}")
    return ProbeRequestOut(
        id=r.id,
        status=r.status,
        probe=r.probe,
        requested_at=r.requested_at,
        finished_at=r.finished_at,
        agent=r.claimed_by,
        result=r.result,
        error=r.error,
    )
