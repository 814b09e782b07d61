"""Spikes and outages, each with the raw samples around it.

Spikes: buckets whose p95 of one timing exceeds ``factor`` times a baseline, the
median of the p95s of the same weekday and hour over the previous ``weeks`` weeks
(1-hour rollups). Buckets are 1-minute rollups for ranges up to 2 days, 1-hour
rollups beyond; a bucket needs ``min_count`` timed samples and at least two
baseline weeks.

Outages: maximal runs of consecutive failed probe runs (the target's errors or timeouts;
probe-side errors, class PROBE, are not failures of the target)
with at least ``min_failed`` failures. Where raw samples still exist they define the
run: two failures are consecutive when at most 1.5 of the series' intervals apart
(nothing ran, ok or not, between them); raw samples are read only around the minutes
whose 1-minute rollups (or pending rollups) show enough failures for such a run.
Beyond the raw horizon runs are stitched from consecutive 1-minute rollups that had
failures and no ok sample.

Each result carries up to ``context_limit`` raw samples from ``context`` before to
``context`` after it (empty once raw retention has dropped them, or when
``context_limit`` is 0: then no raw sample is read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.samples import PROBE_CODE_PREFIX, Sample
from app.store.layout import HOUR, MINUTE, WEEK, check_phase, failed_sql, no_jit
from app.store.read.samples import samples_around
from app.store.resolution import ceil_to, check_range, floor_to, oldest


@dataclass(frozen=True, slots=True)
class Spike:
    series_id: int
    start: datetime
    end: datetime
    p95_ms: float
    baseline_ms: float
    factor: float
    count: int
    samples: list[Sample] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Outage:
    series_id: int
    start: datetime  # first failed run
    end: datetime  # last failed run (raw) or end of its last minute (rollups)
    failed: int
    codes: dict[str, int]
    source: str  # "raw" or "1m"
    samples: list[Sample] = field(default_factory=list)


_DTYPES = (">i4", ">i8", ">f4", ">i4")  # series, time, p95 (stored real), n


def _columns(conn: Connection, sql: str, params: dict[str, Any]) -> list[npt.NDArray[Any]]:
    """The four binary columns of :func:`_p95_sql` as numpy arrays (empty when none)."""
    row = conn.execute(text(sql), params).one()
    return [
        np.frombuffer(bytes(v), dtype=d).astype(np.float64 if d == ">f4" else np.int64)
        if v
        else np.zeros(0, dtype=np.int64)
        for v, d in zip(row, _DTYPES, strict=True)
    ]


def _p95_sql(phase: str, table: str, *, epoch: bool, windows: bool = False) -> str:
    """A grain's rows with enough timed samples as four packed binary columns.

    Series, time (hours since the epoch, or seconds when ``epoch``), p95 (the stored
    ``real``) and n, each the concatenation of its values' binary send form: one row
    whose bytes numpy reads in place, instead of a row (or a text number) per bucket.
    Rows of ``[:a, :b)``, or with ``windows`` of each ``[:los[i], :his[i])``.
    """
    t = "extract(epoch from bucket)::bigint" + ("" if epoch else " / 3600")
    where = (
        "join unnest(cast(:los as timestamptz[]), cast(:his as timestamptz[])) as w(lo, hi) "
        "on bucket >= w.lo and bucket < w.hi where series_id = any(:ids)"
        if windows
        else "where series_id = any(:ids) and bucket >= :a and bucket < :b"
    )
    return (
        f"{_packed_columns(phase, f'({t})::int8')} "
        f"from {table} {where} and {phase}_n >= :mc and {phase}_p95 is not null"
    )


def _packed_columns(phase: str, time_sql: str) -> str:
    """``select`` of series, ``time_sql`` (int8), p95 and n as concatenated send forms."""
    return (
        "select string_agg(int4send(series_id::int4), ''::bytea), "
        f"string_agg(int8send({time_sql}), ''::bytea), "
        f"string_agg(float4send({phase}_p95::float4), ''::bytea), "
        f"string_agg(int4send({phase}_n::int4), ''::bytea)"
    )


def _minutes_over_sql(phase: str) -> str:
    """1-minute rows whose p95 exceeds their (series, hour) limit, as :func:`_p95_sql`.

    ``:lim`` holds the limits as one flat array indexed by series id and hour
    (``series_id * :nh + hour - :h0``, 1-based), NaN where a bucket cannot be a spike
    (no baseline): one O(1) subscript per row, no join.
    """
    hour = "(extract(epoch from bucket)::bigint / 3600 - :h0)"
    return (
        f"{_packed_columns(phase, 'extract(epoch from bucket)::bigint')} "
        "from rollup_1m where series_id = any(:ids) and bucket >= :a and bucket < :b "
        f"and {phase}_n >= :mc "
        f"and {phase}_p95 > (cast(:lim as float8[]))[(series_id * :nh + {hour})::int + 1]"
    )


class _Baseline:
    """Hourly p95s of each series on a dense grid, and the baseline of any (series, hour)."""

    def __init__(
        self,
        sid: npt.NDArray[np.int64],
        hour: npt.NDArray[np.int64],
        p95: npt.NDArray[np.float64],
        weeks: int,
    ) -> None:
        self.series = np.unique(sid)
        self.h0 = int(hour.min())
        self.grid = np.full((self.series.size, int(hour.max()) - self.h0 + 1), np.nan)
        self.grid[np.searchsorted(self.series, sid), hour - self.h0] = p95
        self.lags = 168 * np.arange(1, weeks + 1)

    def ref(
        self, sid: npt.NDArray[np.int64], hour: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64]:
        """Median of the p95s 1..weeks weeks earlier (NaN unless at least two exist)."""
        row = np.minimum(np.searchsorted(self.series, sid), self.series.size - 1)
        known = self.series[row] == sid
        back = (hour - self.h0)[:, None] - self.lags[None, :]
        width = self.grid.shape[1]
        inside = known[:, None] & (back >= 0) & (back < width)
        prior = np.where(inside, self.grid[row[:, None], np.clip(back, 0, width - 1)], np.nan)
        enough = (~np.isnan(prior)).sum(axis=1) >= 2
        out = np.full(sid.size, np.nan)
        if enough.any():
            out[enough] = np.nanmedian(prior[enough], axis=1)
        return out


def spikes(
    conn: Connection,
    series_ids: Sequence[int],
    start: datetime,
    end: datetime,
    *,
    phase: str = "total",
    factor: float = 2.0,
    weeks: int = 4,
    min_count: int = 3,
    max_results: int = 20,
    context: timedelta = timedelta(minutes=5),
    context_limit: int = 200,
) -> list[Spike]:
    """Largest spikes first (by factor), at most ``max_results``."""
    check_phase(phase)
    check_range(start, end)
    if factor <= 1.0 or weeks < 2:
        raise ValueError("factor must exceed 1 and weeks must be at least 2")
    no_jit(conn)
    grain = MINUTE if end - start <= timedelta(days=2) else HOUR
    a, b = floor_to(start, grain.width), ceil_to(end, grain.width)
    ids = list(series_ids)
    base_from = floor_to(a, HOUR.width) - weeks * WEEK.width
    params: dict[str, Any] = {"ids": ids, "a": base_from, "b": b, "mc": min_count}
    # p95 per (series, hour since the epoch): "the same hour w weeks ago" is h - 168 w.
    # Hourly buckets: the range and the weeks before it. Minute buckets (at most two
    # days): only the same hours of each earlier week, not the whole weeks between.
    if grain is MINUTE:
        h_a, h_b = floor_to(a, HOUR.width), ceil_to(b, HOUR.width)
        params.update(
            los=[h_a - w * WEEK.width for w in range(1, weeks + 1)],
            his=[h_b - w * WEEK.width for w in range(1, weeks + 1)],
        )
    baseline_sql = _p95_sql(phase, "rollup_1h", epoch=False, windows=grain is MINUTE)
    b_sid, b_hour, b_p95, b_n = _columns(conn, baseline_sql, params)
    if not b_sid.size:
        return []
    base = _Baseline(b_sid, b_hour, b_p95, weeks)
    a_hour = int(a.timestamp()) // 3600
    if grain is HOUR:  # the candidates are the newest of the rows just read
        new = b_hour >= a_hour
        c_sid, c_sec, c_p95, c_n = b_sid[new], b_hour[new] * 3600, b_p95[new], b_n[new]
    else:
        # Only minutes above their hour's threshold can be spikes: PostgreSQL returns
        # just those (a handful instead of every minute of every series).
        hours = np.arange(a_hour, -(-int(b.timestamp()) // 3600))
        nh = hours.size
        t_sid = np.repeat(base.series, nh)
        limit = factor * base.ref(t_sid, np.tile(hours, base.series.size))
        flat = np.full((int(base.series.max()) + 1) * nh, np.nan)
        flat[(t_sid * nh + np.tile(np.arange(nh), base.series.size))] = limit
        flat[~(flat > 0)] = np.nan  # NaN: PostgreSQL orders it above every number
        params.update(a=a, lim=flat.tolist(), nh=nh, h0=a_hour)
        c_sid, c_sec, c_p95, c_n = _columns(conn, _minutes_over_sql(phase), params)
        if not c_sid.size:
            return []
    ref = base.ref(c_sid, c_sec // 3600)
    with np.errstate(invalid="ignore"):
        hit = np.nonzero((ref > 0) & (c_p95 > factor * ref))[0]
    fac = c_p95[hit] / ref[hit]
    top = hit[np.lexsort((c_sid[hit], c_sec[hit], -fac))][:max_results]
    found = [
        (float(c_p95[j] / ref[j]), int(c_sid[j]), datetime.fromtimestamp(int(c_sec[j]), UTC),
         float(c_p95[j]), float(ref[j]), int(c_n[j]))
        for j in top
    ]  # fmt: skip
    windows = [(f[1], f[2] - context, f[2] + grain.width + context) for f in found]
    ctx = samples_around(conn, windows, context_limit) if context_limit > 0 else [[] for _ in found]
    return [
        Spike(sid, bk, bk + grain.width, p95 / 1e6, ref / 1e6, fac, count, ctx[k])
        for k, (fac, sid, bk, p95, ref, count) in enumerate(found)
    ]


def _failure_windows(
    conn: Connection, ids: list[int], a: datetime, b: datetime, min_failed: int
) -> list[tuple[int, datetime, datetime]]:
    """(series, from, to) windows within [a, b) that may hold a run of ``min_failed``
    failures, found from the 1-minute rollups (their partial index of failed minutes)
    plus the minutes whose rollup is still pending, so raw samples are read only there.

    Two failures of one run are at most 1.5 intervals apart, so their minutes are at
    most 1.5 intervals + 1 minute apart: minutes closer than that form one cluster and
    no run spans two clusters. A cluster whose rollups count fewer than ``min_failed``
    failures cannot hold such a run (a pending minute counts as enough).
    """
    rows = conn.execute(
        text(
            "select f.series_id, f.bucket, f.failed, se.interval_ms from ("
            "select series_id, bucket, n_error + n_timeout as failed from rollup_1m "
            "where series_id = any(:ids) and bucket >= :a and bucket < :b "
            "and n_error + n_timeout > 0 "
            "union all select series_id, bucket, :mf from rollup_dirty "
            "where series_id = any(:ids) and bucket >= :a and bucket < :b"
            ") f join series se on se.id = f.series_id order by 1, 2"
        ),
        {"ids": ids, "a": floor_to(a, MINUTE.width), "b": b, "mf": min_failed},
    ).all()
    clusters: list[list[Any]] = []  # [series, first minute, last minute, failures]
    for sid, bucket, failed, interval_ms in rows:
        last = clusters[-1] if clusters else None
        reach = MINUTE.width + timedelta(milliseconds=1.5 * interval_ms)
        if last is not None and last[0] == sid and bucket - last[2] <= reach:
            last[2] = bucket
            last[3] += failed
        else:
            clusters.append([sid, bucket, bucket, failed])
    return [
        (sid, max(a, first), min(b, lst + MINUTE.width))
        for sid, first, lst, failed in clusters
        if failed >= min_failed
    ]


def _raw_outages(
    conn: Connection, ids: list[int], a: datetime, b: datetime, min_failed: int
) -> list[tuple[int, datetime, datetime, int, dict[str, int]]]:
    windows = _failure_windows(conn, ids, a, b, min_failed)
    if not windows:
        return []
    # Two failures belong to one outage when they are at most 1.5 scheduling intervals
    # apart (no run between); the windows are far enough apart that no run spans two.
    rows = conn.execute(
        text(
            "select f.series_id, f.scheduled_at, f.error_code, se.interval_ms "
            "from unnest(cast(:sids as integer[]), cast(:los as timestamptz[]), "
            "cast(:his as timestamptz[])) as w(sid, lo, hi) "
            "cross join lateral connwatch_sample_timings(array[w.sid], w.lo, w.hi, true) f "
            "join series se on se.id = f.series_id "
            f"where f.status <> 'ok' and {failed_sql('f')} "
            "order by f.series_id, f.scheduled_at"
        ),
        {
            "sids": [w[0] for w in windows],
            "los": [w[1] for w in windows],
            "his": [w[2] for w in windows],
        },
    ).all()
    runs: list[tuple[int, datetime, datetime, int, dict[str, int]]] = []
    for sid, at, code, interval_ms in rows:
        key = code or "?"
        last = runs[-1] if runs else None
        gap = timedelta(milliseconds=1.5 * interval_ms)
        if last is not None and last[0] == sid and at - last[2] <= gap:
            codes = last[4]
            codes[key] = codes.get(key, 0) + 1
            runs[-1] = (sid, last[1], at, last[3] + 1, codes)
        else:
            runs.append((sid, at, at, 1, {key: 1}))
    return runs


def _target_codes(codes: dict[str, Any] | None) -> dict[str, int]:
    """A rollup's error codes without the probe-side ones (not the target's failures)."""
    return {k: int(v) for k, v in (codes or {}).items() if not k.startswith(PROBE_CODE_PREFIX)}


def _minute_outages(
    conn: Connection, ids: list[int], a: datetime, b: datetime
) -> list[tuple[int, datetime, datetime, int, dict[str, int]]]:
    rows = conn.execute(
        text(
            "select series_id, bucket, n_error + n_timeout, n_ok, err_code from rollup_1m "
            "where series_id = any(:ids) and bucket >= :a and bucket < :b "
            "and n_error + n_timeout > 0 order by series_id, bucket"
        ),
        {"ids": ids, "a": a, "b": b},
    ).all()
    runs: list[tuple[int, datetime, datetime, int, dict[str, int]]] = []
    for sid, bucket, failed, n_ok, codes in rows:
        if n_ok:
            continue  # a minute with an ok sample breaks any run
        last = runs[-1] if runs else None
        if last is not None and last[0] == sid and last[2] == bucket:
            merged = dict(last[4])
            for k, v in _target_codes(codes).items():
                merged[k] = merged.get(k, 0) + int(v)
            runs[-1] = (sid, last[1], bucket + MINUTE.width, last[3] + failed, merged)
        else:
            runs.append((sid, bucket, bucket + MINUTE.width, failed, _target_codes(codes)))
    return runs


def outages(
    conn: Connection,
    series_ids: Sequence[int],
    start: datetime,
    end: datetime,
    *,
    min_failed: int = 3,
    max_results: int = 50,
    context: timedelta = timedelta(minutes=2),
    context_limit: int = 200,
) -> list[Outage]:
    """Outages overlapping ``[start, end)``, newest first, at most ``max_results``."""
    check_range(start, end)
    no_jit(conn)
    ids = list(series_ids)
    raw_from = oldest(conn, "samples")
    split = max(start, min(end, raw_from)) if raw_from is not None else end
    found: list[tuple[str, tuple[int, datetime, datetime, int, dict[str, int]]]] = []
    if split > start:
        a, b = floor_to(start, MINUTE.width), ceil_to(split, MINUTE.width)
        found += [("1m", r) for r in _minute_outages(conn, ids, a, b)]
    if end > split:
        found += [("raw", r) for r in _raw_outages(conn, ids, split, end, min_failed)]
    found = [f for f in found if f[1][3] >= min_failed]
    found.sort(key=lambda f: (f[1][1], f[1][0]), reverse=True)
    found = found[:max_results]
    windows = [(r[0], r[1] - context, r[2] + context + timedelta(microseconds=1)) for _, r in found]
    ctx = samples_around(conn, windows, context_limit) if context_limit > 0 else [[] for _ in found]
    return [Outage(r[0], r[1], r[2], r[3], r[4], src, ctx[k]) for k, (src, r) in enumerate(found)]
