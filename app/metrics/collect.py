"""The collectors: what fills each family of :mod:`app.metrics.registry`.

- :func:`series_figures`: per probe series, cumulative and counted by the store
  (:func:`app.store.read.totals.totals`, the sum of its weekly rollups): the same
  numbers from every web process and across restarts, growing as samples are written.
- :func:`mode_figures`: per mode, now, as the overview sees it (the web computes the
  overview's rows and hands them over as :class:`ModeView`).
- :func:`agent_figures`: per agent and per worker process, from its heartbeat.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from app.metrics.registry import (
    AGENT_FAMILIES,
    WORKER_FAMILIES,
    Exposition,
    ns_to_seconds,
    to_base,
)
from app.store.read.agents import AgentStatus
from app.store.read.totals import bound_label, export_bounds_ns, totals

# outcome label -> rollup count column; they add up to ``n``
OUTCOMES: tuple[tuple[str, str], ...] = (
    ("ok", "n_ok"),
    ("error", "n_error"),
    ("timeout", "n_timeout"),
    ("skipped", "n_skipped"),
    ("probe_error", "n_probe"),
)
HISTOGRAMS: tuple[tuple[str, str], ...] = (
    ("logon", "connwatch_logon_duration_seconds"),
    ("ping", "connwatch_ping_duration_seconds"),
)
STATES: tuple[str, ...] = ("ok", "degraded", "down", "probe-error", "stale", "unknown")
_BOUNDS = [bound_label(ns) for ns in export_bounds_ns()]


@dataclass(frozen=True, slots=True)
class SeriesRef:
    series_id: int
    target: str
    mode: str
    probe: str
    site: str

    @property
    def label_values(self) -> tuple[str, str, str, str]:
        return (self.target, self.mode, self.probe, self.site)


@dataclass(frozen=True, slots=True)
class ModeView:
    """One mode as the overview shows it now (times in milliseconds)."""

    target: str
    mode: str
    kind: str
    db: str
    probe: str | None
    state: str
    last_at: datetime | None = None
    logon_p50_ms: float | None = None
    logon_p95_ms: float | None = None
    ping_p50_ms: float | None = None
    ping_p95_ms: float | None = None


def series_figures(out: Exposition, conn: Connection, series: Sequence[SeriesRef]) -> None:
    """``connwatch_samples_total`` and the duration histograms of every series."""
    found = totals(conn, [s.series_id for s in series], [p for p, _ in HISTOGRAMS])
    for s in series:
        t = found.get(s.series_id)
        if t is None:
            continue
        for outcome, column in OUTCOMES:
            out.add("connwatch_samples_total", (*s.label_values, outcome), t.counts[column])
        for phase, family in HISTOGRAMS:
            pt = t.phases[phase]
            if pt.count:
                out.histogram(
                    family,
                    s.label_values,
                    _BOUNDS,
                    pt.cumulative,
                    pt.count,
                    ns_to_seconds(pt.sum_ns),
                )


def mode_figures(out: Exposition, modes: Sequence[ModeView]) -> None:
    """The per-mode gauges: info, state, up, newest sample, current percentiles."""
    for m in modes:
        key = (m.target, m.mode)
        out.add("connwatch_mode_info", (*key, m.kind, m.db, m.probe or ""), 1)
        for state in STATES:
            out.add("connwatch_mode_state", (*key, state), 1 if m.state == state else 0)
        if m.state in ("ok", "degraded"):
            out.add("connwatch_up", key, 1)
        elif m.state in ("down", "stale"):
            out.add("connwatch_up", key, 0)
        if m.last_at is not None:
            out.add("connwatch_last_sample_timestamp_seconds", key, m.last_at.timestamp())
        for family, ms in (
            ("connwatch_logon_p50_seconds", m.logon_p50_ms),
            ("connwatch_logon_p95_seconds", m.logon_p95_ms),
            ("connwatch_ping_p50_seconds", m.ping_p50_ms),
            ("connwatch_ping_p95_seconds", m.ping_p95_ms),
        ):
            if ms is not None:
                out.add(family, key, to_base(ms, 1000))


def _stat(st: AgentStatus | dict[str, Any], path: str) -> float | None:
    head, _, rest = path.partition(".")
    value: Any = st.get(head) if isinstance(st, dict) else getattr(st, head)
    for part in rest.split(".") if rest else ():
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None


def agent_figures(out: Exposition, statuses: Sequence[AgentStatus]) -> None:
    """``connwatch_agent_*`` per agent; a figure an agent did not report is left out."""
    for name, _, _, path, divisor in AGENT_FAMILIES:
        for st in statuses:
            v = _stat(st, path)
            if v is not None:
                out.add(f"connwatch_agent_{name}", (st.name, st.site), to_base(v, divisor))
    for name, _, _, path, divisor in WORKER_FAMILIES:  # alive agents' worker processes
        for st in statuses:
            if not st.alive:
                continue
            for w in st.stats.get("workers") or []:
                if isinstance(w, dict) and (v := _stat(w, path)) is not None:
                    worker = str(w.get("worker", 0))
                    out.add(
                        f"connwatch_agent_{name}",
                        (st.name, st.site, worker),
                        to_base(v, divisor),
                    )
