"""Keeping the 1-minute, 1-hour and 1-day rollups in step with the raw samples.

Every write (:func:`app.store.write.ingest.write_samples`) records the (series, minute)
pairs it inserted in ``rollup_dirty``, in the same statement. :func:`roll_up_pending`
takes a batch of those pairs, recomputes each dirty minute from its raw samples,
then each hour containing a dirty minute from its 1-minute rows, then each such day
from its hour rows and each such week (Monday to Monday UTC) from its day rows, and
removes the batch from ``rollup_dirty``: all in one
transaction, so a crash leaves the pairs dirty and the next pass redoes them.
Recomputing replaces whole rows, so running it twice changes nothing.

Backfills, spool replays and imports go through the same writer and so land in
the rollups on the next pass; data loaded by other means is announced with
:func:`mark_dirty`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app.store.histogram.sql_merge import merged_sql
from app.store.layout import (
    COUNT_COLUMNS,
    DAY,
    HOUR,
    MINUTE,
    ORIGIN_SQL,
    PHASES,
    WEEK,
    Grain,
    rollup_value_columns,
)
from app.store.resolution import floor_to
from app.store.write.partitions import ensure_rollup_partitions

ROLLUP_LOCK = 727276
_RAW_COLS = ", ".join(["s.status", "s.error_class", "s.error_code", *[f"s.{p}_ns" for p in PHASES]])


@dataclass(slots=True)
class RollupReport:
    minutes: int = 0
    hours: int = 0
    days: int = 0
    batches: int = 0
    seconds: float = 0.0
    more_pending: bool = False


def _upsert(
    conn: Connection,
    grain: Grain,
    select_sql: str,
    lo: datetime,
    hi: datetime,
    extra: dict[str, object] | None = None,
) -> int:
    res = conn.execute(text(_upsert_sql(grain, select_sql)), {"lo": lo, "hi": hi, **(extra or {})})
    return res.rowcount or 0


def _minute_sql() -> str:
    # Bounds are plain parameters so the planner prunes partitions once, not per row.
    # Raw samples of both forms (a backfill into a packed day reads its packed hours too).
    src = (
        f"select s.series_id, d.bucket, {_RAW_COLS} from _cw_d1m d "
        "join connwatch_sample_timings(cast(:ids as integer[]), :lo, :hi) s "
        "on s.series_id = d.series_id "
        f"and date_bin('1 minute', s.scheduled_at, {ORIGIN_SQL}) = d.bucket"
    )
    return merged_sql(src, ["series_id", "bucket"], raw=True)


def weeks_backfill_sql(counts: tuple[str, ...] = COUNT_COLUMNS) -> str:
    """Upsert every week that has 1-day rollups (the weekly level's initial fill).

    ``counts``: the rollup tables' count columns (migration 0003 passes the ones it knew).
    """
    vals = ", ".join(f"r.{c}" for c in rollup_value_columns(counts=counts))
    src = (
        f"select r.series_id, date_bin('7 days', r.bucket, {ORIGIN_SQL}) as bucket, {vals} "
        "from rollup_1d r"
    )
    merged = merged_sql(src, ["series_id", "bucket"], raw=False, counts=counts)
    return _upsert_sql(WEEK, merged, counts)


def _upsert_sql(grain: Grain, select_sql: str, counts: tuple[str, ...] = COUNT_COLUMNS) -> str:
    cols = ["series_id", "bucket", *rollup_value_columns(counts=counts)]
    sets = ", ".join(f"{c} = excluded.{c}" for c in cols[2:])
    return (
        f"insert into {grain.table} ({', '.join(cols)})\n{select_sql}\n"
        f"on conflict (series_id, bucket) do update set {sets}"
    )


def _merge_up_sql(child: Grain, parent: Grain, dirty: str) -> str:
    vals = ", ".join(f"r.{c}" for c in rollup_value_columns())
    src = (
        f"select d.series_id, d.bucket, {vals} from {dirty} d join {child.table} r "
        f"on r.series_id = d.series_id "
        f"and date_bin('{parent.sql_width}', r.bucket, {ORIGIN_SQL}) = d.bucket "
        "where r.bucket >= :lo and r.bucket < :hi"
    )
    return merged_sql(src, ["series_id", "bucket"], raw=False)


def roll_up_batch(conn: Connection, limit: int = 20000) -> tuple[int, int, int]:
    """Recompute up to ``limit`` dirty minutes of the oldest dirty UTC day, and their hours
    and days, in ``conn``'s transaction.

    Returns (minutes, hours, days) recomputed; (0, 0, 0) when nothing was pending.
    """
    first = conn.execute(
        text("select bucket from rollup_dirty order by bucket limit 1 for update skip locked")
    ).scalar_one_or_none()
    if first is None:
        return (0, 0, 0)
    day = floor_to(first, DAY.width)
    conn.execute(
        text(
            "create temp table _cw_d1m on commit drop as "
            "with picked as (select series_id, bucket from rollup_dirty "
            "where bucket >= :d0 and bucket < :d1 "
            "order by bucket, series_id limit :lim for update skip locked), "
            "gone as (delete from rollup_dirty r using picked p "
            "where r.series_id = p.series_id and r.bucket = p.bucket "
            "returning r.series_id, r.bucket) select * from gone"
        ),
        {"lim": limit, "d0": day, "d1": day + timedelta(days=1)},
    )
    count, lo, hi = conn.execute(
        text("select count(*), min(bucket), max(bucket) from _cw_d1m")
    ).one()
    if not count:
        conn.execute(text("drop table _cw_d1m"))
        return (0, 0, 0)
    ensure_rollup_partitions(conn, lo.date(), hi.date())
    conn.execute(text("analyze _cw_d1m"))
    ids = list(conn.execute(text("select distinct series_id from _cw_d1m")).scalars())
    minutes = _upsert(conn, MINUTE, _minute_sql(), lo, hi + timedelta(minutes=1), {"ids": ids})
    conn.execute(
        text(
            "create temp table _cw_d1h on commit drop as select distinct series_id, "
            f"date_bin('1 hour', bucket, {ORIGIN_SQL}) as bucket from _cw_d1m"
        )
    )
    conn.execute(text("analyze _cw_d1h"))
    h_lo = lo.replace(minute=0)
    h_hi = hi.replace(minute=0) + timedelta(hours=1)
    hours = _upsert(conn, HOUR, _merge_up_sql(MINUTE, HOUR, "_cw_d1h"), h_lo, h_hi)
    conn.execute(
        text(
            "create temp table _cw_d1d on commit drop as select distinct series_id, "
            f"date_bin('1 day', bucket, {ORIGIN_SQL}) as bucket from _cw_d1h"
        )
    )
    days = _upsert(conn, DAY, _merge_up_sql(HOUR, DAY, "_cw_d1d"), day, day + timedelta(days=1))
    week = floor_to(day, WEEK.width)
    conn.execute(
        text(
            "create temp table _cw_d1w on commit drop as select distinct series_id, "
            "cast(:w as timestamptz) as bucket from _cw_d1d"
        ),
        {"w": week},
    )
    _upsert(conn, WEEK, _merge_up_sql(DAY, WEEK, "_cw_d1w"), week, week + WEEK.width)
    conn.execute(
        text("drop table _cw_d1m; drop table _cw_d1h; drop table _cw_d1d; drop table _cw_d1w")
    )
    return (minutes, hours, days)


def roll_up_pending(engine: Engine, *, batch: int = 20000, budget_s: float = 30.0) -> RollupReport:
    """Work through ``rollup_dirty`` in batches (one transaction each) for up to ``budget_s``.

    Only one process rolls up at a time (an advisory lock); others return at once.
    """
    report = RollupReport()
    t0 = time.perf_counter()
    with engine.connect() as lock_conn:
        got = lock_conn.execute(
            text("select pg_try_advisory_lock(:k)"), {"k": ROLLUP_LOCK}
        ).scalar_one()
        lock_conn.commit()
        if not got:
            report.more_pending = True
            return report
        try:
            while True:
                with engine.begin() as conn:
                    m, h, d = roll_up_batch(conn, batch)
                if not m:
                    break
                report.minutes += m
                report.hours += h
                report.days += d
                report.batches += 1
                if time.perf_counter() - t0 > budget_s:
                    with engine.connect() as c:
                        report.more_pending = bool(
                            c.execute(text("select exists (select 1 from rollup_dirty)")).scalar()
                        )
                    break
        finally:
            lock_conn.execute(text("select pg_advisory_unlock(:k)"), {"k": ROLLUP_LOCK})
            lock_conn.commit()
    report.seconds = time.perf_counter() - t0
    return report


def mark_dirty(
    conn: Connection, start: datetime, end: datetime, series_ids: list[int] | None = None
) -> int:
    """Queue every minute with raw samples in ``[start, end)`` for recomputation.

    For data that reached ``samples`` without :func:`write_samples` (a bulk load, a
    manual fix). Returns how many (series, minute) pairs were queued.
    """
    res = conn.execute(
        text(
            "insert into rollup_dirty (series_id, bucket) "
            f"select distinct series_id, date_bin('1 minute', scheduled_at, {ORIGIN_SQL}) "
            "from connwatch_samples(coalesce(cast(:ids as integer[]), "
            "array(select id from series)), :a, :b) on conflict do nothing"
        ),
        {"a": start, "b": end, "ids": series_ids},
    )
    return res.rowcount or 0
