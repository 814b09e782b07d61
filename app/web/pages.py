"""The read-only pages: Overview, Target, Compare, Spikes, Samples.

Pages are server-rendered shells: tables are filled here, charts are drawn in the
browser from the same ``/api/v1`` endpoints anyone can call. Every choice (range,
target, modes, phase, filters) is a URL parameter.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response

from app.web.deps import ConnDep, TemplatesDep
from app.web.lookups import load_target, load_targets
from app.web.overview import build_rows, sparkline_svg
from app.web.readers import overview_stats

router = APIRouter(include_in_schema=False)
REFRESH_S = 30


@router.get("/", response_class=HTMLResponse)
def overview(request: Request, conn: ConnDep, templates: TemplatesDep) -> Response:
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
            "refresh_s": REFRESH_S,
            "spark": sparkline_svg,
        },
    )


def _target_or_404(conn: ConnDep, name: str) -> Any:
    target = load_target(conn, name)
    if target is None:
        raise HTTPException(404, f"no target named {name!r}")
    return target
