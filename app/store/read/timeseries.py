"""A chart series over any range: per bucket and series, counts and percentiles of one timing.

Timings are in milliseconds; percentiles are nearest-rank. From raw samples they
are exact; from rollups they are within 1.96 % (see :mod:`app.store.histogram.buckets`). Only
samples whose status is ``ok`` contribute timings; every sample counts in ``n``;
``n_error`` counts the target's errors, ``n_probe`` the probe-side ones.
A bucket without samples is absent (never interpolated).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.histogram.numpy_merge import (
    Merged,
    histogram_columns,
    merge,
    rollup_columns,
    row_quantiles,
)
from app.store.layout import (
    DAY,
    HOUR,
    MINUTE,
    ORIGIN_SQL,
    RAW,
    check_phase,
    no_jit,
    probe_side_sql,
    target_error_sql,
)
from app.store.resolution import (
    DEFAULT_POINTS,
    RAW_MAX_SPAN,
    ROW_BUDGET,
    Plan,
    ceil_to,
    check_range,
    floor_to,
    oldest,
    plan,
)

NS_PER_MS = 1_000_000.0


@dataclass(frozen=True, slots=True)
class Point:
    series_id: int
    bucket: datetime  # start of the bucket (UTC)
    n: int  # samples of any status
    n_ok: int
    n_error: int
    n_timeout: int
    n_skipped: int
    count: int  # ok samples with this timing
    min_ms: float | None
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    mean_ms: float | None
    # Lower edge of the chart's band. Exact from raw samples; from rollups read off the
    # histograms (within 1.96 %), like merged percentiles. None where not computed
    # (app.store.read.recent's per-minute points).
    p5_ms: float | None = None
    # Probe-side errors (app.samples.ErrorClass.PROBE): in ``n``, never in ``n_error``;
    # not the target's failures (availability leaves them out with the skipped runs).
    n_probe: int = 0

    @property
    def n_failed(self) -> int:
        """The target's failures: its errors and timeouts (probe-side errors excluded)."""
        return self.n_error + self.n_timeout


@dataclass(frozen=True, slots=True)
class SeriesResult:
    phase: str
    source: str  # "raw", "1m", "1h" or "1d": which table answered
    step: timedelta
    start: datetime  # first bucket (the range floored to the step)
    end: datetime  # end of the last bucket (the range ceiled to the step)
    points: list[Point]


def ms(v: Any) -> float | None:
    return None if v is None else float(v) / NS_PER_MS


def _raw_sql(phase: str, *, whole: bool = False) -> str:
    """Per (series, bucket of :step), or per series over the whole range (``whole``)."""
    ok = "filter (where status = 'ok')"
    bucket = ":a" if whole else f"date_bin(:step, scheduled_at, {ORIGIN_SQL})"
    keys = "1" if whole else "1, 2"
    return (
        f"select series_id, {bucket} as b, count(*)::int, "
        "(count(*) filter (where status = 'ok'))::int, "
        f"(count(*) filter (where {target_error_sql()}))::int, "
        "(count(*) filter (where status = 'timeout'))::int, "
        "(count(*) filter (where status = 'skipped'))::int, "
        f"(count({phase}_ns) {ok})::int, min({phase}_ns) {ok}, "
        f"percentile_disc(array[0.05, 0.5, 0.95, 0.99]) within group (order by {phase}_ns) {ok}, "
        f"max({phase}_ns) {ok}, avg({phase}_ns) {ok}, "
        f"(count(*) filter (where {probe_side_sql()}))::int "
        "from connwatch_sample_timings(cast(:ids as integer[]), :a, :b) "
        f"group by {keys} order by {keys}"
    )


def stored_columns(phase: str) -> str:
    """The rollup columns :func:`stored_point` reads, in its order."""
    return (
        f"series_id, bucket, n, n_ok, n_error, n_timeout, n_skipped, {phase}_n, "
        f"{phase}_min, {phase}_p50, {phase}_p95, {phase}_p99, {phase}_max, {phase}_sum, n_probe"
    )


STORED_WIDTH = 15  # columns of stored_columns()


def stored_point(r: Any, p5: float | None = None) -> Point:
    """A rollup row of :func:`stored_columns` as a point (its stored percentiles); ``p5``
    in ns when computed (NaN or ignored without timed samples)."""
    count = r[7] or 0
    return Point(
        r[0], r[1], r[2], r[3], r[4], r[5], r[6], count,
        ms(r[8]), ms(r[9]), ms(r[10]), ms(r[11]), ms(r[12]),
        ms(r[13] / count) if count and r[13] is not None else None,
        ms(p5) if count and p5 is not None and p5 == p5 else None,
        r[14] or 0,
    )  # fmt: skip


def _direct_sql(p: Plan, phase: str) -> str:
    """Rollup rows that are the buckets themselves (step = table width): stored percentiles."""
    return (
        f"select {stored_columns(phase)}, {histogram_columns(phase)} "
        f"from {p.grain.table} where series_id = any(:ids) and bucket >= :a and bucket < :b "
        "order by 1, 2"
    )


def _merge_sql(p: Plan, phase: str) -> str:
    """Rollup rows to be merged into coarser buckets (in numpy, see :mod:`npmerge`)."""
    return (
        f"select series_id as k1, date_bin(:step, bucket, {ORIGIN_SQL}) as k2, "
        f"{rollup_columns(phase)} "
        f"from {p.grain.table} where series_id = any(:ids) and bucket >= :a and bucket < :b"
    )


def _raw_point(r: Any, bucket: datetime) -> Point:
    """A row of :func:`_raw_sql` (quantiles p5, p50, p95, p99 in ``r[9]``) as a point."""
    q = r[9] or [None] * 4
    return Point(
        r[0], bucket, r[2], r[3], r[4], r[5], r[6], r[7],
        ms(r[8]), ms(q[1]), ms(q[2]), ms(q[3]), ms(r[10]), ms(r[11]), ms(q[0]), r[12],
    )  # fmt: skip


def _merged_point(sid: int, bucket: datetime, m: Merged) -> Point:
    return Point(
        sid, bucket, m.n, m.n_ok, m.n_error, m.n_timeout, m.n_skipped, m.count,
        ms(m.min), ms(m.p50), ms(m.p95), ms(m.p99), ms(m.max),
        ms(m.sum / m.count) if m.count and m.sum is not None else None,
        ms(m.p5), m.n_probe,
    )  # fmt: skip


def timeseries(
    conn: Connection,
    series_ids: Sequence[int],
    start: datetime,
    end: datetime,
    *,
    phase: str = "total",
    max_points: int = DEFAULT_POINTS,
) -> SeriesResult:
    """One point per (series, bucket) with data in ``[start, end)`` (widened to whole steps)."""
    check_phase(phase)
    no_jit(conn)
    p = plan(conn, start, end, max_points, n_series=max(1, len(series_ids)))
    params = {"ids": list(series_ids), "a": p.data_start, "b": p.data_end, "step": p.step}
    points: list[Point] = []
    if p.grain is RAW:
        points = [_raw_point(r, r[1]) for r in conn.execute(text(_raw_sql(phase)), params)]
    elif p.step == p.grain.width:
        rows = conn.execute(text(_direct_sql(p, phase)), params).all()
        p5 = row_quantiles(rows, STORED_WIDTH, (0.05,))[:, 0]  # stored rows keep no p5: histogram
        points = [stored_point(r, low) for r, low in zip(rows, p5.tolist(), strict=True)]
    else:
        merged = merge(conn, _merge_sql(p, phase), params, nkeys=2)
        points = [_merged_point(sid, bucket, m) for (sid, bucket), m in sorted(merged.items())]
    return SeriesResult(phase, p.grain.name, p.step, p.start, p.end, points)


def summary(
    conn: Connection,
    series_ids: Sequence[int],
    start: datetime,
    end: datetime,
    *,
    phase: str = "total",
) -> SeriesResult:
    """One point per series over the whole range (for "current value" tiles and breakdowns).

    Exact from raw samples when the range is at most 2 days and raw data still exists;
    otherwise merged from 1-minute rollups (up to 2 days), 1-hour rollups (while the
    rows stay within the row budget) or 1-day rollups, the range widened to whole rows
    (the result's ``start``/``end`` say exactly what was read). ``bucket`` of each point
    is ``start``.
    """
    check_phase(phase)
    check_range(start, end)
    no_jit(conn)
    ids = list(series_ids)
    span = end - start
    raw_from = oldest(conn, "samples")
    if span <= RAW_MAX_SPAN and (raw_from is None or start >= raw_from):
        rows = conn.execute(
            text(_raw_sql(phase, whole=True)),
            {"ids": ids, "a": start, "b": end},
        )
        points = [_raw_point(r, start) for r in rows]
        return SeriesResult(phase, RAW.name, span, start, end, points)
    if span <= RAW_MAX_SPAN:
        grain = MINUTE
    elif max(1, len(ids)) * (span / HOUR.width) <= ROW_BUDGET:
        grain = HOUR
    else:
        grain = DAY
    a, b = floor_to(start, grain.width), ceil_to(end, grain.width)
    merged = merge(
        conn,
        f"select series_id as k1, {rollup_columns(phase)} from {grain.table} "
        "where series_id = any(:ids) and bucket >= :a and bucket < :b",
        {"ids": ids, "a": a, "b": b},
    )
    points = [_merged_point(sid, a, m) for sid, m in sorted(merged.items())]
    return SeriesResult(phase, grain.name, b - a, a, b, points)
