"""Weekly summary per target and mode, with the change from the week before.

Weeks run Monday 00:00 to Monday 00:00 UTC. Each row comes from the weekly rollups
of the mode's series (merged when a mode has several series, e.g. several sites),
so its p95 is the true p95 of the week's samples (within 1.96 %), not an average of
daily p95s. ``prev_*`` are the same figures for
the week before (computed even when that week lies before ``start``);
``change_*_pct`` are relative changes in percent; ``change_availability_pts`` is
the change in percentage points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.layout import check_phase, no_jit
from app.store.merge import merged_sql
from app.store.resolution import ceil_to, check_range, floor_to
from app.store.timeseries import NS_PER_MS, ms

WEEK = timedelta(days=7)


@dataclass(slots=True)  # not frozen: a year of weeks for 100 modes is 5300 rows to build
class WeekRow:
    target_id: int
    target: str
    mode_id: int
    mode: str
    kind: str
    week: datetime  # Monday 00:00 UTC
    n: int
    n_ok: int
    n_failed: int  # error + timeout
    availability: float | None  # percent
    count: int
    mean_ms: float | None
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    prev_p50_ms: float | None
    prev_p95_ms: float | None
    prev_availability: float | None
    change_p50_pct: float | None
    change_p95_pct: float | None
    change_availability_pts: float | None
    n_skipped: int = 0  # runs the agent could not start in time (not in availability)


def _pct(now: float | None, before: float | None) -> float | None:
    if now is None or before is None or before == 0:
        return None
    return (now / before - 1.0) * 100.0


def weekly(
    conn: Connection,
    start: datetime,
    end: datetime,
    *,
    phase: str = "total",
    target_ids: Sequence[int] | None = None,
    probe: str | None = None,
) -> list[WeekRow]:
    """One row per (mode, week) overlapping ``[start, end)``, ordered by target, mode, week.

    ``probe`` (e.g. ``"connping"``): only that probe kind's series of each mode, so a
    mode that also runs sessionping is never pooled with it; a mode without such a
    series has no rows.
    """
    check_phase(phase)
    check_range(start, end)
    no_jit(conn)
    a, b = floor_to(start, WEEK), ceil_to(end, WEEK)
    src = (
        "select s.mode_id, r.bucket as wk, r.n, r.n_ok, "
        f"r.n_error, r.n_timeout, r.n_skipped, r.{phase}_n, r.{phase}_min, r.{phase}_max, "
        f"r.{phase}_sum, r.{phase}_p50, r.{phase}_p95, r.{phase}_p99, r.{phase}_hi, r.{phase}_hc "
        "from rollup_1w r join series s on s.id = r.series_id join modes m on m.id = s.mode_id "
        "where r.bucket >= :a and r.bucket < :b "
        "and (cast(:tids as integer[]) is null or m.target_id = any(cast(:tids as integer[]))) "
        "and (cast(:probe as text) is null or s.probe = cast(:probe as text))"
    )
    merged = merged_sql(
        src, ["mode_id", "wk"], raw=False, phases=(phase,), errors=False, hist=False, single=True
    )
    rows = conn.execute(
        text(
            "select t.id, t.name, m.id, m.name, m.kind, x.wk, x.n, x.n_ok, "
            f"x.n_error + x.n_timeout, x.n_skipped, coalesce(x.{phase}_n, 0), x.{phase}_sum, "
            f"x.{phase}_p50, x.{phase}_p95, x.{phase}_p99, x.{phase}_max "
            f"from ({merged}) x join modes m on m.id = x.mode_id "
            "join targets t on t.id = m.target_id order by t.name, m.name, x.wk"
        ),
        {
            "a": a - WEEK,
            "b": b,
            "tids": list(target_ids) if target_ids is not None else None,
            "probe": probe,
        },
    ).all()
    prev: dict[tuple[int, datetime], tuple[float | None, float | None, float | None]] = {}
    out: list[WeekRow] = []
    for r in rows:
        ran = r[6] - r[9]
        avail = 100.0 * r[7] / ran if ran > 0 else None
        p50, p95 = ms(r[12]), ms(r[13])
        prev[(r[2], r[5])] = (p50, p95, avail)
        if r[5] < a:
            continue
        pp50, pp95, pavail = prev.get((r[2], r[5] - WEEK), (None, None, None))
        out.append(
            WeekRow(
                r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], avail, r[10],
                (r[11] / r[10] / NS_PER_MS) if r[10] and r[11] is not None else None,
                p50, p95, ms(r[14]), ms(r[15]), pp50, pp95, pavail,
                _pct(p50, pp50), _pct(p95, pp95),
                (avail - pavail) if avail is not None and pavail is not None else None,
                r[9],
            )
        )  # fmt: skip
    return out
