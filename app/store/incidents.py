"""Spikes and outages, each with the raw samples around it.

Spikes: buckets whose p95 of one timing exceeds ``factor`` times a baseline, the
median of the p95s of the same weekday and hour over the previous ``weeks`` weeks
(1-hour rollups). Buckets are 1-minute rollups for ranges up to 2 days, 1-hour
rollups beyond; a bucket needs ``min_count`` timed samples and at least two
baseline weeks.

Outages: maximal runs of consecutive failed probe runs (status error or timeout)
with at least ``min_failed`` failures. Where raw samples still exist they define the
run: two failures are consecutive when at most 1.5 of the series' intervals apart
(nothing ran, ok or not, between them). Beyond the raw horizon runs are stitched
from consecutive 1-minute rollups that had failures and no ok sample.

Each result carries up to ``context_limit`` raw samples from ``context`` before to
``context`` after it (empty once raw retention has dropped them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.samples import Sample
from app.store.layout import HOUR, MINUTE, ORIGIN_SQL, check_phase, no_jit
from app.store.resolution import ceil_to, check_range, floor_to, oldest
from app.store.samples import samples_around

WEEK = timedelta(days=7)


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


def _spikes_sql(phase: str, table: str) -> str:
    """Candidate buckets of ``table`` joined to their baseline, in one statement.

    The baseline of a bucket depends only on its series and UTC hour: the median
    (``percentile_cont(0.5)``: the mean of the middle two for an even count) of the
    1-hour p95s exactly 168, 336, ... hours earlier that have ``min_count`` samples.
    It is computed once per (series, hour) of the candidates, then joined back.
    """
    p = phase
    return (
        f"with hb as materialized (select series_id, bucket as h, {p}_p95::float8 as p95 "
        f"from rollup_1h where series_id = any(:ids) and bucket >= :bf and bucket < :b "
        f"and {p}_n >= :mc), "
        f"cand as materialized (select series_id, bucket, {p}_p95::float8 as p95, {p}_n as n, "
        f"date_bin('1 hour', bucket, {ORIGIN_SQL}) as h from {table} "
        f"where series_id = any(:ids) and bucket >= :a and bucket < :b and {p}_n >= :mc), "
        "refs as (select x.series_id, x.h, percentile_cont(0.5) within group (order by y.p95) "
        "as ref from (select distinct series_id, h from cand) x "
        "cross join generate_series(1, :weeks) w "
        "join hb y on y.series_id = x.series_id and y.h = x.h - w * interval '168 hours' "
        "group by 1, 2 having count(*) >= 2) "
        "select c.series_id, c.bucket, c.p95, r.ref, c.p95 / r.ref as factor, c.n "
        "from cand c join refs r using (series_id, h) "
        "where r.ref > 0 and c.p95 > :factor * r.ref "
        "order by c.p95 / r.ref desc, c.bucket, c.series_id limit :lim"
    )


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
    found = [
        (float(r[4]), r[0], r[1], float(r[2]), float(r[3]), int(r[5]))
        for r in conn.execute(
            text(_spikes_sql(phase, grain.table)),
            {
                "ids": list(series_ids),
                "a": a,
                "b": b,
                "bf": floor_to(a, HOUR.width) - weeks * WEEK,
                "mc": min_count,
                "weeks": weeks,
                "factor": factor,
                "lim": max_results,
            },
        )
    ]
    ctx = samples_around(
        conn, [(f[1], f[2] - context, f[2] + grain.width + context) for f in found], context_limit
    )
    return [
        Spike(sid, bk, bk + grain.width, p95 / 1e6, ref / 1e6, fac, count, ctx[k])
        for k, (fac, sid, bk, p95, ref, count) in enumerate(found)
    ]


def _raw_outages(
    conn: Connection, ids: list[int], a: datetime, b: datetime
) -> list[tuple[int, datetime, datetime, int, dict[str, int]]]:
    # Failed runs come from the partial index on non-ok samples; two failures belong to
    # one outage when they are at most 1.5 scheduling intervals apart (no run between).
    rows = conn.execute(
        text(
            "select f.series_id, f.scheduled_at, f.error_code, se.interval_ms "
            "from connwatch_samples(cast(:ids as integer[]), :a, :b, true) f "
            "join series se on se.id = f.series_id "
            "where f.status <> 'ok' and f.status in ('error', 'timeout') "
            "order by f.series_id, f.scheduled_at"
        ),
        {"ids": ids, "a": a, "b": b},
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
            for k, v in (codes or {}).items():
                merged[k] = merged.get(k, 0) + int(v)
            runs[-1] = (sid, last[1], bucket + MINUTE.width, last[3] + failed, merged)
        else:
            runs.append((sid, bucket, bucket + MINUTE.width, failed, dict(codes or {})))
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
        found += [("raw", r) for r in _raw_outages(conn, ids, split, end)]
    found = [f for f in found if f[1][3] >= min_failed]
    found.sort(key=lambda f: (f[1][1], f[1][0]), reverse=True)
    found = found[:max_results]
    ctx = samples_around(
        conn,
        [(r[0], r[1] - context, r[2] + context + timedelta(microseconds=1)) for _, r in found],
        context_limit,
    )
    return [Outage(r[0], r[1], r[2], r[3], r[4], src, ctx[k]) for k, (src, r) in enumerate(found)]
