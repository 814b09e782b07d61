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

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Connection

from app.store.histogram.sql_merge import merged_sql
from app.store.layout import WEEK, check_phase, driver_connection, no_jit
from app.store.read.timeseries import NS_PER_MS
from app.store.resolution import ceil_to, check_range, floor_to

_PARAM = re.compile(r"(?<![:\w]):(a0|a|b|tids|probe)\b")


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
    n_probe: int = 0  # probe-side errors (ErrorClass.PROBE): not in availability nor n_failed


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
    a, b = floor_to(start, WEEK.width), ceil_to(end, WEEK.width)
    mine = (
        "(cast(:tids as integer[]) is null or m.target_id = any(cast(:tids as integer[]))) "
        "and (cast(:probe as text) is null or s.probe = cast(:probe as text))"
    )
    rollups = (
        "from rollup_1w r join series s on s.id = r.series_id join modes m on m.id = s.mode_id "
        f"where r.bucket >= :a and r.bucket < :b and {mine} and s.mode_id"
    )
    # Modes with several matching series (sites) are merged; the usual mode with one
    # series reads its weekly rows as they are (the merge would keep the same figures).
    several = (
        "(select s.mode_id from series s join modes m on m.id = s.mode_id "
        f"where {mine} group by s.mode_id having count(*) > 1)"
    )
    cols = (
        f"mode_id, wk, n, n_ok, n_error, n_timeout, n_skipped, n_probe, {phase}_n, {phase}_sum, "
        f"{phase}_p50, {phase}_p95, {phase}_p99, {phase}_max"
    )
    src = (
        "select s.mode_id, r.bucket as wk, r.n, r.n_ok, r.n_error, r.n_timeout, r.n_skipped, "
        f"r.n_probe, r.{phase}_n, r.{phase}_min, r.{phase}_max, "
        f"r.{phase}_sum, r.{phase}_p50, r.{phase}_p95, r.{phase}_p99, r.{phase}_hi, r.{phase}_hc "
        f"{rollups} in {several}"
    )
    merged = (
        f"select {cols} from ("
        + merged_sql(
            src, ["mode_id", "wk"], raw=False, phases=(phase,), errors=False, hist=False,
            single=True,
        )
        + ") mm union all select s.mode_id, r.bucket, "
        + ", ".join(f"r.{c}" for c in cols.split(", ")[2:])
        + f" {rollups} not in {several}"
    )  # fmt: skip
    # Everything per row is computed in SQL (a year of 100 modes is 5 300 rows): the
    # week before comes from lag() when it is exactly one week earlier.
    pct = "case when {b} <> 0 then ({a} / {b} - 1.0) * 100.0 end"
    prev = "case when lag(z.wk) over w = z.wk - interval '7 days' then lag(z.{c}) over w end"
    query = (
        "select t.id, t.name, m.id, m.name, m.kind, y.wk, y.n, y.n_ok, y.n_failed, "
        "y.avail, y.cnt, y.mean_ms, y.p50, y.p95, y.p99, y.mx, y.pp50, y.pp95, y.pavail, "
        f"{pct.format(a='y.p50', b='y.pp50')}, {pct.format(a='y.p95', b='y.pp95')}, "
        "y.avail - y.pavail, y.n_skipped, y.n_probe from ("
        f"select z.*, {prev.format(c='p50')} as pp50, {prev.format(c='p95')} as pp95, "
        f"{prev.format(c='avail')} as pavail from ("
        "select x.mode_id, x.wk, x.n, x.n_ok, x.n_error + x.n_timeout as n_failed, "
        "x.n_skipped, x.n_probe, case when x.n - x.n_skipped - x.n_probe > 0 "
        "then 100.0::float8 * x.n_ok / (x.n - x.n_skipped - x.n_probe) end as avail, "
        f"coalesce(x.{phase}_n, 0) as cnt, case when x.{phase}_n > 0 "
        f"then x.{phase}_sum::float8 / x.{phase}_n / {NS_PER_MS}::float8 end as mean_ms, "
        + ", ".join(
            f"x.{phase}_{c}::float8 / {NS_PER_MS}::float8 as {c}" for c in ("p50", "p95", "p99")
        )
        + f", x.{phase}_max::float8 / {NS_PER_MS}::float8 as mx from ({merged}) x) z "
        "window w as (partition by z.mode_id order by z.wk)) y "
        "join modes m on m.id = y.mode_id join targets t on t.id = m.target_id "
        "where y.wk >= :a0 order by t.name, m.name, y.wk"
    )
    params = {
        "a": a - WEEK.width,
        "a0": a,
        "b": b,
        "tids": list(target_ids) if target_ids is not None else None,
        "probe": probe,
    }
    # A year of 100 modes is 5 300 rows of 23 values: the binary protocol spares
    # parsing them from text (about a sixth of the call).
    with driver_connection(conn).cursor(binary=True) as cur:
        cur.execute(_PARAM.sub(r"%(\1)s", query), params)
        return [WeekRow(*r) for r in cur.fetchall()]
