"""Hour-of-day x weekday heatmap of one timing's p50/p95 for one mode (a tab of the Target page).

From the store's ``heatmap()``: the merged 1-hour rollups of the mode's series of one
probe kind (every site), bucketed by weekday and hour in the time zone ``tz`` (an IANA
name; UTC by default; the page asks for the viewer's zone and names it on the axis).
Percentiles within 1.96 %. Window default: the last 30 days.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel

from app.store.read.heatmap import check_tz, heatmap
from app.web.access.guards import require_viewer
from app.web.deps import ConnDep, TemplatesDep
from app.web.params import ProbeQ, TargetName, Window30d, target_or_404
from app.web.routes.pages import probes_of
from app.web.timerange import RangeError, TimeRange
from app.web.views.lookups import ModeInfo, TargetInfo

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
HeatPhase = Literal["logon", "ping", "query", "logoff", "total"]
ModeQ = Annotated[
    str | None, Query(max_length=63, description="mode name (default: the target's first)")
]
TzQ = Annotated[
    str, Query(min_length=1, max_length=64, description="IANA time zone of the hours (UTC)")
]


class HeatmapOut(BaseModel):
    target: str
    mode: str
    probe: str
    phase: str
    tz: str
    start: datetime
    end: datetime
    weekdays: list[str]  # rows: Mon..Sun
    hours: list[int]  # columns: 0..23 in tz
    p50: list[list[float | None]]  # [weekday][hour] ms; None: no ok sample
    p95: list[list[float | None]]
    n: list[list[int]]  # samples (any status)
    failed: list[list[int]]  # error + timeout


def _check_tz(tz: str) -> None:
    """An unknown time zone is a 422 naming ``tz`` (a RangeError), for the API and the page."""
    try:
        check_tz(tz)
    except ValueError as exc:
        raise RangeError(f"tz: {exc}") from None


def pick_mode(target: TargetInfo, name: str | None) -> ModeInfo:
    if not target.modes:
        raise HTTPException(404, f"target {target.name!r} has no modes")
    if not name:
        return target.modes[0]
    mode = target.mode(name)
    if mode is None:
        raise HTTPException(
            422,
            f"mode: target {target.name!r} has no mode {name!r} "
            f"(it has {', '.join(m.name for m in target.modes)})",
        )
    return mode


def heatmap_view(
    conn: ConnDep,
    target: TargetInfo,
    mode: ModeInfo,
    window: TimeRange,
    *,
    phase: str,
    probe: str,
    tz: str,
) -> HeatmapOut:
    _check_tz(tz)
    ids = [s.id for s in mode.series_for(probe)]
    p50: list[list[float | None]] = [[None] * 24 for _ in WEEKDAYS]
    p95: list[list[float | None]] = [[None] * 24 for _ in WEEKDAYS]
    n = [[0] * 24 for _ in WEEKDAYS]
    failed = [[0] * 24 for _ in WEEKDAYS]
    start, end = window.start, window.end
    if ids:
        res = heatmap(conn, ids, window.start, window.end, phase=phase, tz=tz)
        start, end = res.start, res.end
        for c in res.cells:
            d, h = c.weekday - 1, c.hour
            p50[d][h], p95[d][h], n[d][h], failed[d][h] = c.p50_ms, c.p95_ms, c.n, c.n_failed
    return HeatmapOut(
        target=target.name,
        mode=mode.name,
        probe=probe,
        phase=phase,
        tz=tz,
        start=start,
        end=end,
        weekdays=list(WEEKDAYS),
        hours=list(range(24)),
        p50=p50,
        p95=p95,
        n=n,
        failed=failed,
    )


router = APIRouter(dependencies=[Depends(require_viewer)])


@router.get(
    "/api/v1/targets/{name}/heatmap",
    tags=["api"],
    summary="p50/p95 per weekday and hour of day for one mode (default: last 30 days, UTC)",
)
def heatmap_api(
    conn: ConnDep,
    name: TargetName,
    window: Window30d,
    mode: ModeQ = None,
    phase: HeatPhase = "logon",
    probe: ProbeQ = "connping",
    tz: TzQ = "UTC",
) -> HeatmapOut:
    target = target_or_404(conn, name)
    m = pick_mode(target, mode)
    return heatmap_view(conn, target, m, window, phase=phase, probe=probe, tz=tz)


@router.get("/target/{name}/heatmap", response_class=HTMLResponse, include_in_schema=False)
def heatmap_page(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    name: TargetName,
    window: Window30d,
    mode: ModeQ = None,
    phase: HeatPhase = "logon",
    probe: ProbeQ = "connping",
    stat: Literal["p95", "p50"] = "p95",
    tz: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    target = target_or_404(conn, name)
    m = pick_mode(target, mode)
    if tz:
        _check_tz(tz)
    api_q = {"mode": m.name, "phase": phase, "probe": probe, **({"tz": tz} if tz else {})}
    return templates.TemplateResponse(
        request,
        "heatmap.html",
        {
            "title": f"{target.name} · heatmap",
            "active": "",
            "charts": True,
            "target": target,
            "mode": m,
            "tr": window,
            "base": dict(request.query_params),
            "phase": phase,
            "probe": probe,
            "probes": probes_of(target),
            "stat": stat,
            "tz": tz or "",
            "api": f"/api/v1/targets/{quote(target.name)}/heatmap?{urlencode(api_q)}",
        },
    )
