"""Prometheus ``/metrics`` in the text exposition format 0.0.4 (no client library).

Every family is declared in :mod:`app.metrics.registry` (docs/web.md lists them) and
filled by :mod:`app.metrics.collect`:

- per probe series (``target``, ``mode``, ``probe``, ``site``): ``connwatch_samples_total``
  by ``outcome`` and the cumulative histograms ``connwatch_logon_duration_seconds`` and
  ``connwatch_ping_duration_seconds``, counted by the store from the samples written
  (the sum of the weekly rollups): identical from every web process and across restarts,
  only growing, so ``rate()`` and ``histogram_quantile()`` read them right;
- per mode (``target``, ``mode``), now, as the overview sees it: ``connwatch_mode_info``,
  ``connwatch_mode_state``, ``connwatch_up``, ``connwatch_last_sample_timestamp_seconds``
  and the current ``connwatch_{logon,ping}_{p50,p95}_seconds``;
- per agent: ``connwatch_agent_*`` from its heartbeat;
- alerts (app/alerts/queries.py): ``ALERTS``, ``ALERTS_FOR_STATE`` as Prometheus exports
  its own, ``connwatch_notifications``.

Probe-side errors (class PROBE) are their own outcome (``probe_error``), never ``error``,
and never make ``connwatch_up`` 0. Disabled targets, modes and series are not exported.
The output passes ``promtool check metrics`` (tests/web/test_metrics_promtool.py).
Each web process reuses its last exposition for ``CONNWATCH_METRICS_CACHE_S`` (1 s) and
renders one at a time (app/web/views/reuse/recent.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import PlainTextResponse
from sqlalchemy import Connection

from app.alerts.queries import prometheus_text as alerts_text
from app.metrics.collect import (
    ModeView,
    SeriesRef,
    agent_figures,
    mode_figures,
    series_figures,
)
from app.metrics.registry import TEXT_FORMAT, Exposition
from app.store.read.agents import agent_status
from app.web.access.guards import require_metrics
from app.web.deps import ConnDep
from app.web.views.lookups import TargetInfo, load_targets
from app.web.views.overview import OverviewRow, build_rows
from app.web.views.readers import recent_overview_stats

router = APIRouter(dependencies=[Depends(require_metrics)])
CONTENT_TYPE = TEXT_FORMAT


def exported_series(targets: list[TargetInfo]) -> list[SeriesRef]:
    """Every enabled series of an enabled mode of an enabled target."""
    return [
        SeriesRef(s.id, t.name, m.name, s.probe, s.site)
        for t in targets
        if t.enabled
        for m in t.modes
        if m.enabled
        for s in m.series
        if s.enabled
    ]


def mode_views(targets: list[TargetInfo], rows: list[OverviewRow]) -> list[ModeView]:
    db = {t.name: t.kind for t in targets}
    return [
        ModeView(
            r.target, r.mode, r.mode_kind, db.get(r.target, ""), r.probe, r.state,
            r.stats.last_at, r.stats.logon_p50, r.stats.logon_p95, r.stats.ping_p50,
            r.stats.ping_p95,
        )
        for r in rows
        if r.state != "disabled"
    ]  # fmt: skip


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    tags=["metrics"],
    summary="Prometheus text exposition: cumulative counters and histograms per series, "
    "the overview's state per mode, agents, alerts",
)
def prometheus(request: Request, conn: ConnDep) -> PlainTextResponse:
    state = request.app.state
    text: str = state.metrics_text.get(
        "", state.settings.metrics_cache_s, lambda: render(state, conn)
    )
    return PlainTextResponse(text, media_type=CONTENT_TYPE)


def render(state: Any, conn: Connection) -> str:
    """The whole exposition, read from the store now (the overview's figures may be up
    to ``CONNWATCH_OVERVIEW_CACHE_S`` old, as on the overview)."""
    now = datetime.now(UTC)
    targets = load_targets(conn)
    rows = build_rows(targets, recent_overview_stats(state, conn, targets, now), now)
    out = Exposition()
    series_figures(out, conn, exported_series(targets))
    mode_figures(out, mode_views(targets, rows))
    agent_figures(out, agent_status(conn, now=now))
    return out.text() + alerts_text(conn)
