"""Breakdown of one timing by instance or by site, per mode, over a window.

- by site: each site is its own series, so this is the store's series query with one
  bucket for the whole window (:func:`app.store.read.timeseries.timeseries`).
- by instance: the instance is a column of raw samples only, and the store has no
  query grouping by it; this module reads it with one small aggregate over raw
  samples, bounded to the last :data:`INSTANCE_MAX_SPAN` of the window (raw samples
  are kept 35 days; percentiles over weeks of raw rows would be slow). The response
  says which window it covered. Failed samples are counted per instance too (``failed``:
  a sample names the instance it was on, or the one its mode is pinned to), so an
  instance that went down shows as that instance's errors. Probe-side errors (class
  PROBE, connwatch's own trouble) are no instance's failure and are left out.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.layout import check_phase, failed_sql, probe_side_sql
from app.store.read.timeseries import summary
from app.web.schemas import BreakdownMode
from app.web.views.lookups import ModeInfo

INSTANCE_MAX_SPAN = timedelta(days=2)


def by_site(
    conn: Connection, modes: list[ModeInfo], start: datetime, end: datetime, phase: str, probe: str
) -> list[BreakdownMode]:
    owner = {s.id: (m, s.site) for m in modes for s in m.series_for(probe)}
    res = summary(conn, list(owner), start, end, phase=phase)  # one point per series
    best = {p.series_id: (p.count, p.p50_ms, p.p95_ms) for p in res.points}
    return _assemble(modes, {(owner[sid][0].id, owner[sid][1]): v for sid, v in best.items()})


def by_instance(
    conn: Connection, modes: list[ModeInfo], start: datetime, end: datetime, phase: str, probe: str
) -> tuple[list[BreakdownMode], datetime]:
    check_phase(phase)
    start = max(start, end - INSTANCE_MAX_SPAN)
    owner = {s.id: m for m in modes for s in m.series_for(probe)}
    ok = f"status = 'ok' and {phase}_ns is not null"
    rows = conn.execute(
        text(
            f"select series_id, coalesce(instance, '(unknown)') as inst, "
            f"count(*) filter (where {ok})::int as n, "
            f"count(*) filter (where {failed_sql()})::int as failed, "
            f"percentile_disc(array[0.5, 0.95]) within group (order by {phase}_ns) "
            f"filter (where {ok}) as q "
            "from connwatch_samples(cast(:ids as integer[]), :a, :b) "
            f"where status <> 'skipped' and not {probe_side_sql()} group by 1, 2 order by 2"
        ),
        {"ids": list(owner), "a": start, "b": end},
    ).all()
    values: dict[tuple[int, str], tuple[int, float | None, float | None]] = {}
    failed: dict[tuple[int, str], int] = defaultdict(int)
    for r in rows:
        q = r.q or [None, None]
        key = (owner[r.series_id].id, r.inst)
        failed[key] += r.failed
        prev = values.get(key)
        if prev is None or r.n > prev[0]:
            values[key] = (
                r.n,
                q[0] / 1e6 if q[0] is not None else None,
                q[1] / 1e6 if q[1] is not None else None,
            )
    return _assemble(modes, values, failed), start


def _assemble(
    modes: list[ModeInfo],
    values: dict[tuple[int, str], tuple[int, float | None, float | None]],
    failed: dict[tuple[int, str], int] | None = None,
) -> list[BreakdownMode]:
    """Per mode, its groups in order; ``failed`` (by instance) counts the failed samples
    of each group, so an instance whose samples all failed still has its group."""
    per_mode: dict[int, list[tuple[str, int, float | None, float | None]]] = defaultdict(list)
    for (mid, group), (n, p50, p95) in values.items():
        per_mode[mid].append((group, n, p50, p95))
    out = []
    for m in modes:
        items = sorted(per_mode.get(m.id, []))
        out.append(
            BreakdownMode(
                name=m.name,
                color=m.style["color"],
                groups=[g for g, _, _, _ in items],
                n=[n for _, n, _, _ in items],
                p50=[p for _, _, p, _ in items],
                p95=[p for _, _, _, p in items],
                failed=[(failed or {}).get((m.id, g), 0) for g, _, _, _ in items],
            )
        )
    return out
