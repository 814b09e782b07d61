"""The read-only pages: Overview, Target, Compare, Spikes, Samples.

Pages are server-rendered shells: tables are filled here, charts are drawn in the
browser from the same ``/api/v1`` endpoints anyone can call. Every choice (range,
target, modes, phase, filters) is a URL parameter.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup

from app.alerts.annotations import events
from app.store.read.agents import overloaded_series
from app.web.access.guards import require_viewer
from app.web.deps import ConnDep, ReuseDep, TemplatesDep
from app.web.params import (
    PROBES,
    Probe,
    Window,
    Window1h,
    Window7d,
    named,
    pick_modes,
    target_or_404,
)
from app.web.routes.alerting.pages import firing_summary
from app.web.views.agents import overloaded_modes
from app.web.views.incidents import incidents
from app.web.views.lookups import TargetInfo, load_targets
from app.web.views.overview import build_rows, sparkline_svg
from app.web.views.readers import recent_overview_stats
from app.web.views.reuse import reads as reused
from app.web.views.samples import STATUS_CHOICES, SampleFilter
from app.web.views.serverside import (
    incident_panels,
    server_panel,
    serverstats_ids,
)

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_viewer)])
REFRESH_S = 30


@router.get("/", response_class=HTMLResponse)
def overview(
    request: Request,
    conn: ConnDep,
    reuse: ReuseDep,
    templates: TemplatesDep,
    refresh: Annotated[
        int, Query(ge=2, le=3600, description="seconds between refreshes")
    ] = REFRESH_S,
) -> Response:
    now = datetime.now(UTC)
    targets = load_targets(conn)
    rows = build_rows(targets, recent_overview_stats(request.app.state, conn, targets, now), now)
    # modes probed by an agent that cannot keep up now: said beside their state
    overloaded = overloaded_modes(targets, reuse(("overloaded",), lambda: overloaded_series(conn)))
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
            # alerts first (app/web/routes/alerting); reused like the figures below them
            "firing": reuse(("firing",), lambda: firing_summary(conn)),
            "overloaded": overloaded,
        },
    )


def probes_of(target: TargetInfo) -> list[str]:
    """The probe kinds the target's modes run, in the usual order (connping first)."""
    have = {s.probe for m in target.modes for s in m.series}
    return [p for p in PROBES if p in have and p != "sweep"] or ["connping"]


def _base_params(request: Request) -> dict[str, str]:
    return dict(request.query_params)


@router.get("/target/{name}", response_class=HTMLResponse)
def target_page(
    request: Request,
    name: str,
    conn: ConnDep,
    templates: TemplatesDep,
    window: Window,
    modes: str | None = None,
    probe: Probe = "connping",
    layout: Literal["auto", "split", "overlay"] = "auto",
) -> Response:
    target = target_or_404(conn, name)
    chosen = pick_modes(target, modes)
    mode_param = ",".join(chosen) if modes else None
    api = f"/api/v1/targets/{quote(target.name)}"
    extra = {"probe": probe, **({"modes": mode_param} if mode_param else {})}
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
            "styles": {m.name: m.style for m in target.modes},
            "api": api,
            "extra": urlencode(extra),
            "phases": ("logon", "ping", "query", "logoff"),
            "probe": probe,
            "probes": probes_of(target),
            "layout": layout,
            "has_server": bool(serverstats_ids(target)),
        },
    )


@router.get("/compare", response_class=HTMLResponse)
def compare_page(
    request: Request,
    conn: ConnDep,
    reuse: ReuseDep,
    templates: TemplatesDep,
    window: Window,
    target: str | None = None,
    phase: Literal["logon", "ping", "query", "logoff", "total"] = "logon",
    modes: str | None = None,
    probe: Probe = "connping",
) -> Response:
    targets = load_targets(conn)
    chosen_target = named(targets, target) if target else (targets[0] if targets else None)
    view = None
    chosen: list[str] = []
    costs = []
    if chosen_target is not None:
        chosen = pick_modes(chosen_target, modes)
        view = reused.comparison(reuse, conn, chosen_target, window, phase, chosen, probe)
        if chosen_target.kind == "oracle":
            costs = reused.costs(reuse, conn, chosen_target, chosen, window)
    base = _base_params(request)
    if chosen_target is not None:
        base["target"] = chosen_target.name
    query = {
        "target": chosen_target.name if chosen_target else "",
        "phase": phase,
        "probe": probe,
    }
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
            "probe": probe,
            "probes": probes_of(chosen_target) if chosen_target else ["connping"],
            "view": view,
            # the charts' first answer, embedded (the same JSON /api/v1/compare returns);
            # "</" is escaped so the JSON cannot close the script element
            "view_json": view.model_dump_json().replace("</", "<\\/") if view else "",
            "api_query": urlencode(query),
            "costs": costs,
        },
    )


@router.get("/spikes", response_class=HTMLResponse)
def spikes_page(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    window: Window7d,
    target: str | None = None,
    phase: Literal["logon", "ping", "query", "logoff", "total"] = "logon",
    factor: Annotated[float, Query(gt=1.0, le=100.0)] = 2.0,
) -> Response:
    all_targets = load_targets(conn)
    chosen = [target_or_404(conn, target)] if target else all_targets
    view = incidents(
        conn, chosen, window.start, window.end, phase=phase, factor=factor, with_samples=False
    )
    server = incident_panels(
        conn,
        chosen,
        [(o.target, o.start, o.samples_from, o.samples_to) for o in view.outages]
        + [(p.target, p.start, p.samples_from, p.samples_to) for p in view.spikes],
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
            "events": events(conn, window.start, window.end, target=target),
            "server": server,
        },
    )


@router.get("/samples", response_class=HTMLResponse)
def samples_page(
    request: Request,
    conn: ConnDep,
    reuse: ReuseDep,
    templates: TemplatesDep,
    window: Window1h,
    target: str | None = None,
    mode: str | None = None,
    status: Literal["", "ok", "error", "timeout", "skipped", "failed", "probe-error"] = "",
    code: Annotated[str, Query(max_length=40)] = "",
    probe: Literal[
        "", "connping", "sessionping", "commit", "poolacquire", "sweep", "serverstats"
    ] = "",
    after: Annotated[str | None, Query(max_length=200)] = None,
    order: Literal["newest", "oldest"] = "newest",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    f = SampleFilter(
        target or None, mode or None, status or None, code.strip() or None, probe or None
    )
    targets = load_targets(conn)
    rows_template = templates.get_template("_sample_rows.html")
    ask = reused.SamplesAsk(tuple(targets), f, window, after, limit, order == "newest")
    result, rows = reused.samples_shown(
        reuse, conn, ask, lambda found: Markup(rows_template.render(samples=found.samples))
    )
    base = {k: v for k, v in _base_params(request).items() if k != "after" and v}
    csv_params = {k: v for k, v in base.items() if k not in ("order", "limit")}
    chosen = next((t for t in targets if t.name == f.target), None)
    server = (
        reused.panel(reuse, conn, chosen, window)
        if chosen is not None and serverstats_ids(chosen)
        else None
    )
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
            "rows": rows,
            "csv_query": urlencode(csv_params),
            "statuses": STATUS_CHOICES,
            "probes": (*PROBES, "serverstats"),
            "server": server,
        },
    )


@router.get("/target/{name}/server", response_class=HTMLResponse)
def server_page(
    request: Request, name: str, conn: ConnDep, templates: TemplatesDep, window: Window
) -> Response:
    """What the server saw in a window: the panel, then the logon and server charts on
    one time axis (where a spike or an outage links to)."""
    target = target_or_404(conn, name)
    api = f"/api/v1/targets/{quote(target.name)}"
    return templates.TemplateResponse(
        request,
        "server.html",
        {
            "title": f"{target.name}: what the server saw",
            "active": "",
            "charts": True,
            "target": target,
            "tr": window,
            "base": _base_params(request),
            "api": api,
            "panel": server_panel(conn, target, window.start, window.end),
            "has_server": bool(serverstats_ids(target)),
        },
    )
