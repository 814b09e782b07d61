"""What the Agents page and the overview say about an agent's load, shaped from its stats.

The agent writes its overload figures into ``agents.stats.overload`` (docs/agent.md,
"Overload"); this module turns them into the words and rows a person reads: when the
agent became overloaded, by how much (runs due over runs it can start on time), what
share of every series' instants it runs, and that the skipped ones are the monitor's
trouble, not the database's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.store.read.agents import OverloadedAgent
from app.web.views.lookups import TargetInfo


@dataclass(frozen=True, slots=True)
class OverloadView:
    factor: float | None  # runs due / runs it can start on time
    share_pct: int  # of every series' instants, run
    demand_per_s: float
    capacity_per_s: float | None
    since: datetime | None
    workers_overloaded: int | None

    @property
    def sentence(self) -> str:
        """One line for a person (no time: pages show ``since`` in the viewer's zone)."""
        by = f" by {self.factor:.1f}x" if self.factor else ""
        cap = f", about {self.capacity_per_s:,.0f} runs/s possible" if self.capacity_per_s else ""
        return (
            f"overloaded{by}: {self.demand_per_s:,.0f} runs/s due{cap}; it runs "
            f"{self.share_pct} % of every series' instants and records the rest as skipped "
            "(OVERLOAD), so gaps are the agent's, not the database's"
        )

    def short(self, agent: str) -> str:
        """The overview's note beside a mode probed by this agent."""
        by = f" ({self.factor:.1f}x)" if self.factor else ""
        return (
            f"agent {agent} overloaded{by}: it runs {self.share_pct} % of the instants; "
            "gaps and skips are the monitor's, not the database's"
        )


def overload_view(stats: dict[str, Any] | None) -> OverloadView | None:
    """The agent's overload, or None when it keeps up."""
    o = (stats or {}).get("overload") or {}
    if not o.get("active"):
        return None
    since = o.get("since")
    return OverloadView(
        factor=o.get("factor"),
        share_pct=round(100 * float(o.get("share") or 0.0)),
        demand_per_s=float(o.get("demand_per_s") or 0.0),
        capacity_per_s=o.get("capacity_per_s"),
        since=datetime.fromtimestamp(since, UTC) if isinstance(since, int | float) else None,
        workers_overloaded=o.get("workers_overloaded"),
    )


@dataclass(frozen=True, slots=True)
class WorkerRow:
    worker: int
    pid: int | None
    alive: bool
    series: int | None
    runs: int | None
    skipped: int | None
    lag_p99_ms: float | None
    cpu_percent: float | None
    busy_pct: int | None
    share_pct: int | None
    overloaded: bool
    restarts: int


def worker_rows(stats: dict[str, Any] | None) -> list[WorkerRow]:
    """One row per worker process of the agent (empty for an agent of an older version)."""
    out = []
    for w in (stats or {}).get("workers") or []:
        if not isinstance(w, dict):
            continue
        o = w.get("overload") or {}
        busy, share = o.get("busy"), o.get("share")
        out.append(
            WorkerRow(
                worker=int(w.get("worker") or 0),
                pid=w.get("pid"),
                alive=bool(w.get("alive", True)),
                series=w.get("series"),
                runs=w.get("runs"),
                skipped=w.get("skipped"),
                lag_p99_ms=w.get("lag_p99_ms"),
                cpu_percent=w.get("cpu_percent"),
                busy_pct=round(100 * busy) if isinstance(busy, int | float) else None,
                share_pct=round(100 * share) if isinstance(share, int | float) else None,
                overloaded=bool(o.get("active")),
                restarts=int(w.get("restarts") or 0),
            )
        )
    return out


def overloaded_modes(
    targets: list[TargetInfo], overloaded: dict[int, OverloadedAgent]
) -> dict[tuple[str, str], str]:
    """(target, mode) -> the overview's note, for modes whose series an overloaded agent
    runs now (:func:`app.store.read.agents.overloaded_series`)."""
    out: dict[tuple[str, str], str] = {}
    if not overloaded:
        return out
    for t in targets:
        for m in t.modes:
            hit = next((overloaded[s.id] for s in m.series if s.id in overloaded), None)
            view = overload_view({"overload": hit.overload}) if hit is not None else None
            if hit is not None and view is not None:
                out[(t.name, m.name)] = view.short(hit.name)
    return out
