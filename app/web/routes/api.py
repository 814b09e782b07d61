"""The JSON API under ``/api/v1``: every chart on every page is drawn from one of these.

Parameters are validated strictly (unknown phases, probes, modes, ranges -> 422 with
a message naming the parameter; unknown targets -> 404). Responses never hold a
password: the models in :mod:`app.web.schemas` have no field for one.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from fastapi.responses import StreamingResponse

from app.explain import explain
from app.samples import logon_phase_key
from app.store import probe_requests
from app.store.read.agents import AgentStatus, agent_status
from app.web.access.guards import require_viewer
from app.web.deps import ConnDep, EngineDep, ReuseDep
from app.web.params import (
    MeasureDep,
    PathScope,
    Phase,
    Probe,
    QueryScope,
    TargetName,
    Window,
    Window7d,
    target_or_404,
)
from app.web.schemas import (
    BreakdownOut,
    ModeOut,
    OverviewOut,
    OverviewRowOut,
    ProbeRequestOut,
    SeriesOut,
    TargetOut,
    TimeseriesOut,
)
from app.web.views import breakdown
from app.web.views import samples as samples_view
from app.web.views.comparing import CompareOut, DailyOut, daily_view
from app.web.views.incidents import IncidentsOut, incidents
from app.web.views.lookups import TargetInfo, load_targets
from app.web.views.overview import build_rows
from app.web.views.phases import LogonPhasesOut, target_logon_phases
from app.web.views.readers import points_for, recent_overview_stats
from app.web.views.reuse import reads as reused
from app.web.views.samples import SampleFilter, SamplesOut
from app.web.views.serverside import ServerChartOut, ServerPanelOut, server_chart
from app.web.views.sweeps import SweepOut, latest_sweeps

router = APIRouter(prefix="/api/v1", tags=["api"], dependencies=[Depends(require_viewer)])


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
                color=m.style["color"],
                series=[SeriesOut.model_validate(s, from_attributes=True) for s in m.series],
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
def api_overview(request: Request, conn: ConnDep) -> OverviewOut:
    now = datetime.now(UTC)
    targets = load_targets(conn)
    rows = build_rows(targets, recent_overview_stats(request.app.state, conn, targets, now), now)
    return OverviewOut(
        at=now,
        rows=[
            OverviewRowOut(
                target=r.target,
                mode=r.mode,
                mode_kind=r.mode_kind,
                probe=r.probe,
                state=r.state,
                reason=r.reason,
                logon_p50_ms=r.stats.logon_p50,
                logon_p95_ms=r.stats.logon_p95,
                ping_p50_ms=r.stats.ping_p50,
                ping_p95_ms=r.stats.ping_p95,
                error_rate_15m=r.error_rate,
                last_error_code=r.stats.last_code,
                last_error_meaning=r.meaning,
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
    reuse: ReuseDep,
    scope: PathScope,
    window: Window,
    what: MeasureDep,
    points: Annotated[
        int | None,
        Query(ge=10, le=5000, description="at most this many buckets (default: by range)"),
    ] = None,
) -> TimeseriesOut:
    return reused.timeseries(
        reuse, conn, scope.target, scope.modes, window, phase=what.phase, probe=what.probe,
        points=points,
    )  # fmt: skip


@router.get(
    "/targets/{name}/logon-phases",
    summary="median of each logon round trip per bucket and mode (raw samples, last 2 days)",
)
def api_logon_phases(
    conn: ConnDep, scope: PathScope, window: Window, probe: Probe = "connping"
) -> LogonPhasesOut:
    return target_logon_phases(conn, scope.target, scope.modes, window, probe)


@router.get(
    "/targets/{name}/breakdown",
    summary="p50/p95 of one timing per mode and instance (last 2 days of the window) or site",
)
def api_breakdown(
    conn: ConnDep,
    scope: PathScope,
    window: Window,
    what: MeasureDep,
    by: Literal["instance", "site"] = "instance",
) -> BreakdownOut:
    chosen = [m for m in scope.target.modes if m.name in scope.modes]
    a, b, phase, probe = window.start, window.end, what.phase, what.probe
    if by == "site":
        rows = breakdown.by_site(conn, chosen, a, b, phase, probe)
    else:
        rows, a = breakdown.by_instance(conn, chosen, a, b, phase, probe)
    return BreakdownOut(
        target=scope.target.name,
        phase=phase,
        probe=probe,
        by=by,
        start=a,
        end=b,
        modes=rows,
    )


@router.get(
    "/targets/{name}/server",
    summary="What the server saw (serverstats): per instance and bucket, on the latency axis",
)
def api_server(
    conn: ConnDep,
    scope: PathScope,
    window: Window,
    points: Annotated[
        int | None,
        Query(ge=10, le=5000, description="at most this many buckets (default: by range)"),
    ] = None,
) -> ServerChartOut:
    t, a, b = scope.target, window.start, window.end
    return server_chart(conn, t, a, b, points_for(window.span, points))


@router.get(
    "/targets/{name}/server/window",
    summary="What the server saw in a window: per instance mean and max against the time "
    "before, what stands out, views it could not read",
)
def api_server_window(
    conn: ConnDep, reuse: ReuseDep, scope: PathScope, window: Window
) -> ServerPanelOut:
    return reused.panel(reuse, conn, scope.target, window)


@router.get(
    "/compare",
    summary="Per mode, one probe kind: distribution, percentiles, ratio of medians with its CI",
)
def api_compare(
    conn: ConnDep, reuse: ReuseDep, scope: QueryScope, window: Window, what: MeasureDep
) -> CompareOut:
    return reused.comparison(reuse, conn, scope.target, window, what.phase, scope.modes, what.probe)


@router.get(
    "/compare/daily", summary="p50 per UTC day and mode, one probe kind (at least the last 7 days)"
)
def api_compare_daily(
    conn: ConnDep, scope: QueryScope, window: Window, what: MeasureDep
) -> DailyOut:
    t, a, b = scope.target, window.start, window.end
    return daily_view(conn, t, a, b, what.phase, scope.modes, what.probe)


@router.get("/compare/sweep", summary="The latest sweep run per mode: logon p50/p90 per level")
def api_compare_sweep(conn: ConnDep, scope: QueryScope, window: Window) -> SweepOut:
    return latest_sweeps(conn, scope.target, window.start, window.end, scope.modes)


@router.get("/incidents", summary="Spikes (p95 over the weekly baseline) and outages (error runs)")
def api_incidents(
    conn: ConnDep,
    window: Window7d,
    target: Annotated[
        str | None, Query(max_length=63, description="one target (default all)")
    ] = None,
    phase: Phase = "logon",
    factor: Annotated[float, Query(gt=1.0, le=100.0, description="spike threshold")] = 2.0,
    samples: Annotated[bool, Query(description="include the raw samples around each")] = False,
) -> IncidentsOut:
    targets = [target_or_404(conn, target)] if target else load_targets(conn)
    return incidents(
        conn, targets, window.start, window.end, phase=phase, factor=factor, with_samples=samples
    )


async def sample_filter(
    target: Annotated[str | None, Query(max_length=63)] = None,
    mode: Annotated[
        str | None, Query(max_length=63, description="mode name (needs target)")
    ] = None,
    status: Annotated[
        Literal["ok", "error", "timeout", "skipped", "failed", "probe-error"] | None,
        Query(
            description="failed = the target's errors or timeouts; error = the target's "
            "errors; probe-error = probe-side errors (class PROBE: connwatch's own trouble, "
            "not the target's, never in availability)"
        ),
    ] = None,
    code: Annotated[
        str | None, Query(max_length=40, description="error code, e.g. ORA-12541")
    ] = None,
    probe: Annotated[Probe | None, Query(description="one probe kind (default: all)")] = None,
) -> SampleFilter:
    return SampleFilter(target, mode, status, code, probe)


FilterDep = Annotated[SampleFilter, Depends(sample_filter)]


@router.get("/samples", summary="Raw samples, filtered, one keyset page at a time")
def api_samples(
    conn: ConnDep,
    reuse: ReuseDep,
    f: FilterDep,
    window: Window,
    after: Annotated[
        str | None, Query(max_length=200, description="next from the last page")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    order: Literal["newest", "oldest"] = "newest",
) -> SamplesOut:
    ask = reused.SamplesAsk(tuple(load_targets(conn)), f, window, after, limit, order == "newest")
    return reused.samples(reuse, conn, ask)


@router.get(
    "/samples.csv",
    summary="Raw samples as CSV (streamed, oldest first)",
    response_class=StreamingResponse,
)
def api_samples_csv(
    engine: EngineDep, conn: ConnDep, f: FilterDep, window: Window
) -> StreamingResponse:
    stream = samples_view.csv_stream(engine, conn, f, window.start, window.end)
    name = f"connwatch-samples-{window.start:%Y%m%dT%H%M}-{window.end:%Y%m%dT%H%M}.csv"
    return StreamingResponse(
        stream,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@router.get("/agents", summary="Every agent: heartbeat and self-monitoring counters")
def api_agents(conn: ConnDep) -> list[AgentStatus]:
    return agent_status(conn)


@router.get("/probe-requests/{request_id}", summary="A 'test now' request and its result")
def api_probe_request(
    conn: ConnDep, request_id: Annotated[int, Path(ge=1, le=2**62)]
) -> ProbeRequestOut:
    r = probe_requests.get(conn, request_id)
    if r is None:
        raise HTTPException(404, f"no probe request {request_id}")
    res = r.result or {}
    phases = res.get("logon_phases") or {}
    found = explain(res.get("error_code"))
    return ProbeRequestOut.model_validate(
        {
            **asdict(r),
            "agent": r.claimed_by,
            "error": r.error,
            "logon_round_trips": [
                {"phase": k, "ms": phases[k] / 1e6} for k in sorted(phases, key=logon_phase_key)
            ],
            "explanation": found.line() if found else None,
        }
    )
