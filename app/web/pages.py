"""The read-only pages: Overview, Target, Compare, Spikes, Samples.

Pages are server-rendered shells: tables are filled here, charts are drawn in the
browser from the same ``/api/v1`` endpoints anyone can call. Every choice (range,
target, modes, phase, filters) is a URL parameter.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal
from urllib.parse import quote, urlencode

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response

from app.web import samples_view
from app.web.api import pick_modes
from app.web.comparing import compare_view
from app.web.deps import ConnDep, TemplatesDep
from app.web.incidents_view import incidents
from app.web.lookups import TargetInfo, load_target, load_targets
from app.web.overview import build_rows, sparkline_svg
from app.web.palette import mode_style
from app.web.readers import overview_stats
from app.web.samples_view import STATUS_CHOICES, SampleFilter
from app.web.timerange import parse_range

router = APIRouter(include_in_schema=False)
REFRESH_S = 30


@router.get("/", response_class=HTMLResponse)
def overview(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    refresh: Annotated[
        int, Query(ge=2, le=3600, description="seconds between refreshes")
    ] = REFRESH_S,
) -> Response:
    now = datetime.now(UTC)
    targets = load_targets(conn)
    rows = build_rows(targets, overview_stats(conn, targets, now), now)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.state] = counts.get(r.state, 0) + 1
    return templates.TemplateResponse(
        request,
        "overview.html",
        {
            "title": "Overview",
            "active": "Overview",
            "rows": rows,
            "counts": counts,
            "now": now,
            "refresh_s": refresh,
            "spark": sparkline_svg,
        },
    )


def _target_or_404(conn: ConnDep, name: str) -> TargetInfo:
    target = load_target(conn, name)
    if target is None:
        raise HTTPException(404, f"no target named {name!r}")
    return target


def _base_params(request: Request) -> dict[str, str]:
    return dict(request.query_params)


@router.get("/target/{name}", response_class=HTMLResponse)
def target_page(
    request: Request,
    name: str,
    conn: ConnDep,
    templates: TemplatesDep,
    range_: Annotated[str | None, Query(alias="range")] = None,
    from_: Annotated[str | None, Query(alias="from")] = None,
    to: str | None = None,
    modes: str | None = None,
) -> Response:
    target = _target_or_404(conn, name)
    window = parse_range(range_, from_, to)
    chosen = pick_modes(target, modes)
    mode_param = ",".join(chosen) if modes else None
    api = f"/api/v1/targets/{quote(target.name)}"
    extra = {"modes": mode_param} if mode_param else {}
    return templates.TemplateResponse(
        request,
        "target.html",
        {
            "title": target.name,
            "active": "",
            "charts": True,
            "target": target,
            "tr": window,
            "base": _base_params(request),
            "chosen": chosen,
            "styles": {m.name: mode_style(m.kind) for m in target.modes},
            "api": api,
            "extra": urlencode(extra),
            "phases": ("logon", "ping", "query", "logoff"),
        },
    )


@router.get("/compare", response_class=HTMLResponse)
def compare_page(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    target: str | None = None,
    phase: Literal["logon", "ping", "query", "logoff", "total"] = "logon",
    range_: Annotated[str | None, Query(alias="range")] = None,
    from_: Annotated[str | None, Query(alias="from")] = None,
    to: str | None = None,
    modes: str | None = None,
) -> Response:
    window = parse_range(range_, from_, to)
    targets = load_targets(conn)
    chosen_target = _target_or_404(conn, target) if target else (targets[0] if targets else None)
    view = None
    chosen: list[str] = []
    if chosen_target is not None:
        chosen = pick_modes(chosen_target, modes)
        view = compare_view(conn, chosen_target, window.start, window.end, phase, chosen)
    base = _base_params(request)
    if chosen_target is not None:
        base["target"] = chosen_target.name
    query = {"target": chosen_target.name if chosen_target else "", "phase": phase}
    if modes:
        query["modes"] = ",".join(chosen)
    return templates.TemplateResponse(
        request,
        "compare.html",
        {
            "title": "Compare modes",
            "active": "Compare",
            "charts": True,
            "targets": targets,
            "target": chosen_target,
            "tr": window,
            "base": base,
            "phase": phase,
            "view": view,
            # the charts' first answer, embedded (the same JSON /api/v1/compare returns);
            # "</" is escaped so the JSON cannot close the script element
            "view_json": view.model_dump_json().replace("</", "<\\/") if view else "",
            "api_query": urlencode(query),
        },
    )


@router.get("/spikes", response_class=HTMLResponse)
def spikes_page(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    target: str | None = None,
    phase: Literal["logon", "ping", "query", "logoff", "total"] = "logon",
    factor: Annotated[float, Query(gt=1.0, le=100.0)] = 2.0,
    range_: Annotated[str | None, Query(alias="range")] = None,
    from_: Annotated[str | None, Query(alias="from")] = None,
    to: str | None = None,
) -> Response:
    window = parse_range(range_, from_, to, default="7d")
    all_targets = load_targets(conn)
    chosen = [_target_or_404(conn, target)] if target else all_targets
    view = incidents(
        conn, chosen, window.start, window.end, phase=phase, factor=factor, with_samples=False
    )
    return templates.TemplateResponse(
        request,
        "spikes.html",
        {
            "title": "Spikes and outages",
            "active": "Spikes",
            "targets": all_targets,
            "target": target,
            "phase": phase,
            "factor": factor,
            "tr": window,
            "base": _base_params(request),
            "view": view,
        },
    )


@router.get("/samples", response_class=HTMLResponse)
def samples_page(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    target: str | None = None,
    mode: str | None = None,
    status: Literal["", "ok", "error", "timeout", "skipped", "failed"] = "",
    code: Annotated[str, Query(max_length=40)] = "",
    range_: Annotated[str | None, Query(alias="range")] = None,
    from_: Annotated[str | None, Query(alias="from")] = None,
    to: str | None = None,
    after: Annotated[str | None, Query(max_length=200)] = None,
    order: Literal["newest", "oldest"] = "newest",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    window = parse_range(range_, from_, to, default="1h")
    f = SampleFilter(target or None, mode or None, status or None, code.strip() or None)
    result = samples_view.page(
        conn, f, window.start, window.end, after=after, limit=limit, newest_first=order == "newest"
    )
    base = {k: v for k, v in _base_params(request).items() if k != "after" and v}
    csv_params = {k: v for k, v in base.items() if k not in ("order", "limit")}
    targets = load_targets(conn)
    return templates.TemplateResponse(
        request,
        "samples.html",
        {
            "title": "Samples",
            "active": "Samples",
            "targets": targets,
            "modes": sorted({m.name for t in targets for m in t.modes}),
            "f": f,
            "status": status,
            "order": order,
            "tr": window,
            "base": base,
            "result": result,
            "csv_query": urlencode(csv_params),
            "statuses": STATUS_CHOICES,
        },
    )
